/*
 * callgraph_pg.c - the call graph of programs built with -pg (mcount, called
 * after a function's prologue) or -pg -mfentry (__fentry__, before it).
 * Neither says when a call returns, so the entry hook takes the call's
 * return address over: it keeps the real one in the shadow frame and puts
 * the trampoline's address in its place; the call's return lands in the
 * trampoline, which ends the frame and goes on to the real address.
 *
 * A stack walker must not meet a taken-over return address: the C++
 * exception machinery (_Unwind_RaiseException and its kin), backtrace()
 * and pthread_exit's unwinding would find no unwind information for the
 * trampoline. Their entry points give every taken-over address of the
 * thread back first; those frames are then ended by the next call at
 * their depth or above, or by the return of a frame further out. An
 * unwinder that glibc calls from inside (pthread_cancel's) cannot be
 * caught this way.
 *
 * Without the call graph, mcount and __fentry__ go straight to glibc's,
 * for gprof, and so do __monstartup and _mcleanup; with it, those two do
 * nothing, so that gprof's profiling timer and gmon.out stay out of the way.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/callgraph.h"
#include "agent/callgraph_asm.h"
#include "trace/callgraph.h"

/* Read by callgraph_pg_hooks.S (hence `used`: link-time optimisation
 * must keep them and their names). */
__attribute__((used)) int mvz_cg_pg_active;
__attribute__((used)) void *mvz_cg_real_mcount, *mvz_cg_real_fentry;
/* the assembly's fast path: on (the call graph on, the time-stamp counter
 * usable); one call in mask + 1 timed, weighted `every` */
__attribute__((used)) uint32_t mvz_cg_fast_on, mvz_cg_fast_mask, mvz_cg_fast_every;
int mvz_cg_partial;

/* callgraph_asm.h's offsets, which the assembly uses, checked. */
_Static_assert(offsetof(struct cg_thread, busy) == T_BUSY && sizeof(int) == 4, "busy");
_Static_assert(offsetof(struct cg_thread, depth) == T_DEPTH, "depth");
_Static_assert(offsetof(struct cg_thread, taken) == T_TAKEN, "taken");
_Static_assert(offsetof(struct cg_thread, rng) == T_RNG, "rng");
_Static_assert(offsetof(struct cg_thread, frames) == T_FRAMES, "frames");
_Static_assert(offsetof(struct cg_thread, stack_lo) == T_STACK_LO, "stack_lo");
_Static_assert(offsetof(struct cg_thread, stack_hi) == T_STACK_HI, "stack_hi");
_Static_assert(offsetof(struct cg_frame, node) == F_NODE, "node");
_Static_assert(offsetof(struct cg_frame, kind) == F_KIND, "kind");
_Static_assert(offsetof(struct cg_frame, foreign) == F_FOREIGN, "foreign");
_Static_assert(offsetof(struct cg_frame, weight) == F_WEIGHT, "weight");
_Static_assert(offsetof(struct cg_frame, np) == F_NP, "np");
_Static_assert(offsetof(struct cg_frame, sp) == F_SP, "sp");
_Static_assert(offsetof(struct cg_frame, t0) == F_T0, "t0");
_Static_assert(offsetof(struct cg_frame, ret) == F_RET, "ret");
_Static_assert(offsetof(struct cg_frame, site) == F_SITE, "site");
_Static_assert(offsetof(struct cg_frame, h) == F_H, "h");
_Static_assert(sizeof(struct cg_frame) == F_SIZE, "frame size");
_Static_assert(offsetof(struct cg_node, fn) == N_FN, "fn");
_Static_assert(offsetof(struct cg_node, site) == N_SITE, "site");
_Static_assert(offsetof(struct cg_node, calls) == N_CALLS, "calls");
_Static_assert(offsetof(struct cg_node, ticks) == N_TICKS, "ticks");
_Static_assert(offsetof(struct cg_node, parent) == N_PARENT, "parent");
_Static_assert(offsetof(struct cg_node, self) == N_SELF, "self");
_Static_assert(offsetof(struct cg_node, last_child) == N_LAST_CHILD, "last_child");
_Static_assert(offsetof(struct cg_node, last_site) == N_LAST_SITE, "last_site");
_Static_assert(offsetof(struct cg_node, exact_left) == N_EXACT_LEFT, "exact_left");
_Static_assert(offsetof(struct cg_node, prev_child) == N_PREV_CHILD, "prev_child");
_Static_assert(offsetof(struct cg_node, kids) == N_KIDS, "kids");
_Static_assert(offsetof(struct cg_node, site_tab) == N_SITE_TAB, "site_tab");
_Static_assert(offsetof(struct cg_site, site) == S_SITE, "site's site");
_Static_assert(offsetof(struct cg_site, calls) == S_CALLS, "site's calls");
_Static_assert(offsetof(struct cg_site, foreign) == S_FOREIGN, "site's foreign");
_Static_assert(CG_TAKEN == KIND_TAKEN && SHADOW_MAX - 2 == SHADOW_MAX_LESS_2, "constants");
_Static_assert(FOREIGN_SITE == 0x80000000u, "the foreign bit is the parent word's top bit");
_Static_assert(HASH_STEP == 0xff51afd7ed558ccdull, "mvz_hash_step's multiplier");
_Static_assert(KIDS == 1 << (64 - KID_SHIFT), "mvz_cg_kid_slot's bits");

static void resolve_walkers(void);

void mvz_cg_pg_init(void)
{
    mvz_cg_real_mcount = mvz_dlsym_next("mcount");
    mvz_cg_real_fentry = mvz_dlsym_next("__fentry__");
    mvz_cg_pg_active = mvz_cg_on;
    /* memviz run refuses a bad value; set by hand, it means the default */
    uint32_t every = mvz_cg_time_every_parse(getenv("MEMVIZ_CALLGRAPH_TIME"));
    mvz_cg_time_every = every ? every : MVZ_CG_TIME_EVERY_DEFAULT;
    mvz_cg_fast_every = mvz_cg_time_every;
    mvz_cg_fast_mask = mvz_cg_time_every - 1;
    mvz_cg_fast_on = mvz_cg_on && mvz_tsc_ok;
    resolve_walkers();
    const char *filter = getenv("MEMVIZ_CALLGRAPH_FILTER");
    mvz_cg_partial = mvz_cg_on && filter && *filter;
}

/* The real return address a taken-over frame at slot kept, from a frame
 * ended as dead; 0 when none did. */
static uintptr_t grave_ret(struct cg_thread *t, uintptr_t slot)
{
    for (uint32_t i = 1; i <= GRAVES; i++) { /* the newest first */
        const struct cg_grave *g = &t->graves[(t->grave_next - i) % GRAVES];
        if (g->slot == slot)
            return g->ret;
    }
    return 0;
}

/* The real return address kept for slot: by the taken-over frame that
 * holds it (the one a tail call leaves), else by the newest frame ended
 * with it. */
static uintptr_t kept_ret(struct cg_thread *t, uintptr_t slot)
{
    for (uint32_t d = t->depth; d-- > 0;)
        if (t->frames[d].kind == CG_TAKEN && t->frames[d].sp == slot)
            return t->frames[d].ret;
    return grave_ret(t, slot);
}

/* Ends taken-over frame f's time (mvz_cg_frame_close's, in integer
 * registers only): now is 0 until the counter is read. */
static inline MVZ_CG_REGS void close_fast(const struct cg_frame *f, uint64_t *now)
{
    if (!f->weight || !f->np)
        return;
    if (!*now)
        *now = __builtin_ia32_rdtsc();
    if (*now > f->t0)
        __atomic_store_n(&f->np->ticks, f->np->ticks + (*now - f->t0) * f->weight,
                         __ATOMIC_RELAXED);
}

/* The common call, in integer registers only (the hook has not saved the
 * vector ones): the thread known and idle, on its own stack, below the
 * top frame (or a tail call from the top frame), the callee in a context
 * and from a site seen before. 1: not that case (mvz_cg_pg_enter's). */
/* (Not instrumented by ThreadSanitizer either: its runtime's calls would be
 * free to use the vector registers.) */
__attribute__((used)) MVZ_CG_REGS_CODE int mvz_cg_pg_fast(uintptr_t self_ra, uintptr_t *slot)
{
    struct cg_thread *t = mvz_cg_self;
    uintptr_t sp = (uintptr_t)slot, fn = self_ra - 1, ret = *slot;
    if (t == NULL || t == CG_DEAD || t->busy || t->depth == 0 || t->depth >= SHADOW_MAX ||
        !mvz_tsc_ok || sp - t->stack_lo >= t->stack_hi - t->stack_lo)
        return 1;
    struct cg_frame *up = &t->frames[t->depth - 1], *tail = NULL;
    if (ret == (uintptr_t)mvz_cg_return) {
        /* a tail call from the top frame, whose slot this is: that frame
         * ends (as the general hook ends it, dead) and the callee takes
         * its place, with its real return address */
        if (up->kind != CG_TAKEN || up->sp != sp || t->depth < 2)
            return 1;
        tail = up;
        ret = tail->ret;
        up--;
    }
    struct cg_node *p = up->np;
    if (up->sp <= sp || p == NULL)
        return 1;
    struct cg_node *x = mvz_cg_cached_child(p, fn);
    if (x == NULL) { /* another callee: by the index, as child_by_index does */
        uint32_t c = mvz_cg_find_child(t, up->node, fn);
        if (c == UNTRACKED)
            return 1; /* a new context */
        mvz_cg_note_child(t, p, x = mvz_cg_node(t, c));
    }
    uint64_t *calls = &x->calls; /* the site's count: the node's first, or another seen before */
    int foreign = (x->parent & FOREIGN_SITE) != 0;
    if (x->site != ret) {
        struct cg_site *e = mvz_cg_find_site(t, x, ret);
        if (!e)
            return 1;
        calls = &e->calls;
        foreign = (int)e->foreign;
    }
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t now = 0;
    if (tail) { /* mvz_cg_pop's */
        close_fast(tail, &now);
        t->graves[t->grave_next++ % GRAVES] = (struct cg_grave){tail->sp, tail->ret};
        t->taken--;
        t->depth--;
    }
    __atomic_store_n(calls, *calls + 1, __ATOMIC_RELAXED);
    uint16_t weight = mvz_cg_time_weight(t, x);
    struct cg_frame *f = &t->frames[t->depth];
    f->node = x->self;
    f->np = x;
    f->kind = CG_TAKEN;
    f->foreign = (uint8_t)foreign;
    f->weight = weight;
    f->sp = sp;
    f->t0 = weight ? (now ? now : __builtin_ia32_rdtsc()) : 0;
    f->ret = ret;
    f->site = ret;
    f->h = (up->h ^ ret) * 0xff51afd7ed558ccdull; /* mvz_hash_step */
    t->depth++;
    t->taken++;
    *slot = (uintptr_t)mvz_cg_return;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    return 0;
}

/* A call of the function holding self_ra, whose return address is at slot. */
__attribute__((used)) void mvz_cg_pg_enter(uintptr_t self_ra, uintptr_t *slot)
{
    struct cg_thread *t = mvz_cg_hook_begin();
    if (!t)
        return;
    uint64_t now = 0;
    uintptr_t ret = *slot;
    /* a tail call from a taken-over frame: the slot is already ours, and
     * the real address is that frame's (which the entry ends, as dead) */
    if (ret == (uintptr_t)mvz_cg_return)
        ret = kept_ret(t, (uintptr_t)slot);
    struct cg_frame *f = mvz_cg_enter(t, self_ra - 1, ret, (uintptr_t)slot, &now);
    /* only on the thread's own stack: a frame on another (a coroutine's,
     * a signal's) may return after the thread switched stacks, past
     * frames of ours it never returned through */
    if (f && ret && !mvz_cg_on_own_stack(t, (uintptr_t)slot))
        f->kind = CG_GIVEN_UP;
    else if (f && ret) {
        f->kind = CG_TAKEN;
        f->ret = ret;
        t->taken++;
        *slot = (uintptr_t)mvz_cg_return;
    }
    mvz_cg_hook_end(t);
}

static __attribute__((noreturn)) void lost_return(uintptr_t slot)
{
    static const char msg[] = "memviz: the call graph lost a return address; aborting\n";
    (void)slot;
    (void)!write(2, msg, sizeof(msg) - 1);
    abort();
}

/* The common return, in integer registers only (the trampoline has not
 * saved the vector ones, which may hold the return value): the thread
 * idle, the returning call its top frame. Its real return address; 0: not
 * that case (mvz_cg_pg_return's). */
__attribute__((used)) MVZ_CG_REGS_CODE uintptr_t mvz_cg_pg_return_fast(uintptr_t slot)
{
    struct cg_thread *t = mvz_cg_self;
    if (t == NULL || t == CG_DEAD || t->busy || t->depth == 0 || !mvz_tsc_ok)
        return 0;
    struct cg_frame *f = &t->frames[t->depth - 1];
    if (f->kind != CG_TAKEN || f->sp != slot)
        return 0;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t now = 0;
    close_fast(f, &now);
    uintptr_t ret = f->ret;
    t->taken--;
    t->depth--;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    return ret;
}

/* The taken-over call whose return address was at slot returned: ends its
 * frame (and the dead ones above it); its real return address. */
__attribute__((used)) uintptr_t mvz_cg_pg_return(uintptr_t slot)
{
    struct cg_thread *t = mvz_cg_self;
    if (!t || t == CG_DEAD)
        lost_return(slot);
    int busy = t->busy;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t now = 0;
    uintptr_t ret = 0;
    for (uint32_t d = t->depth; d-- > 0;) {
        struct cg_frame *f = &t->frames[d];
        if (f->kind != CG_TAKEN || f->sp != slot)
            continue;
        ret = f->ret;
        while (t->depth > d + 1)
            mvz_cg_pop(t, &now);
        mvz_cg_frame_close(f, &now);
        t->taken--;
        t->depth--;
        break;
    }
    if (!ret && !(ret = grave_ret(t, slot)))
        lost_return(slot);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = busy;
    return ret;
}

void mvz_cg_give_back(struct cg_thread *t)
{
    for (uint32_t d = 0; t->taken && d < t->depth; d++) {
        struct cg_frame *f = &t->frames[d];
        if (f->kind != CG_TAKEN)
            continue;
        uintptr_t *slot = (uintptr_t *)f->sp;
        if (*slot == (uintptr_t)mvz_cg_return)
            *slot = f->ret;
        f->kind = CG_GIVEN_UP;
        t->taken--;
    }
}

/* Before a stack walk of the calling thread. */
static void give_back_self(void)
{
    struct cg_thread *t = mvz_cg_self;
    if (!t || t == CG_DEAD || !t->taken)
        return;
    int busy = t->busy;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    mvz_cg_give_back(t);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = busy;
}

#define REAL(type, name) ((type)real_fn(&real_##name, #name))
static void *real_fn(void *_Atomic *cache, const char *name)
{
    void *f = atomic_load_explicit(cache, memory_order_acquire);
    if (!f) {
        f = mvz_dlsym_next(name);
        atomic_store_explicit(cache, f, memory_order_release);
    }
    return f;
}

/* The stack walkers' entry points: assembly that gives the addresses back
 * (mvz_cg_before_walk) and jumps on to the real function, leaving no frame
 * of its own: the unwinder goes on from the caller's, and no landing pad
 * of ours (a sanitizer's build has them) can call back into it. */
__attribute__((used)) void *mvz_cg_before_walk(void *_Atomic *real, const char *name)
{
    give_back_self();
    void *f = real_fn(real, name);
    if (!f)
        abort(); /* a stack walker the process does not have */
    return f;
}

#define WALK_STUB(name)                                                                            \
    ".globl " name "\n.type " name ", @function\n" name ":\n"                                      \
    "    push %rdi\n    push %rsi\n    push %rdx\n    push %rcx\n    sub $8, %rsp\n"               \
    "    lea mvz_cg_real_" name "(%rip), %rdi\n    lea mvz_cg_name_" name "(%rip), %rsi\n"         \
    "    call mvz_cg_before_walk\n"                                                                \
    "    add $8, %rsp\n    pop %rcx\n    pop %rdx\n    pop %rsi\n    pop %rdi\n"                   \
    "    jmp *%rax\n.size " name ", .-" name "\n"

#define WALKER(name)                                                                               \
    __attribute__((used)) void *_Atomic mvz_cg_real_##name;                                        \
    __attribute__((used)) const char mvz_cg_name_##name[] = #name;
WALKER(_Unwind_RaiseException)
WALKER(_Unwind_Resume)
WALKER(_Unwind_Resume_or_Rethrow)
WALKER(_Unwind_ForcedUnwind)
WALKER(_Unwind_Backtrace)
WALKER(backtrace)
WALKER(pthread_exit)

/* The stack walkers, at start rather than at their first call (which may
 * be in a signal handler, where dlsym must not run); those of libraries
 * not loaded yet are looked up when first needed. */
static void resolve_walkers(void)
{
    real_fn(&mvz_cg_real__Unwind_RaiseException, mvz_cg_name__Unwind_RaiseException);
    real_fn(&mvz_cg_real__Unwind_Resume, mvz_cg_name__Unwind_Resume);
    real_fn(&mvz_cg_real__Unwind_Resume_or_Rethrow, mvz_cg_name__Unwind_Resume_or_Rethrow);
    real_fn(&mvz_cg_real__Unwind_ForcedUnwind, mvz_cg_name__Unwind_ForcedUnwind);
    real_fn(&mvz_cg_real__Unwind_Backtrace, mvz_cg_name__Unwind_Backtrace);
    real_fn(&mvz_cg_real_backtrace, mvz_cg_name_backtrace);
    real_fn(&mvz_cg_real_pthread_exit, mvz_cg_name_pthread_exit);
}

#if defined(__x86_64__)
__asm__(".text\n" WALK_STUB("_Unwind_RaiseException") WALK_STUB("_Unwind_Resume")
            WALK_STUB("_Unwind_Resume_or_Rethrow") WALK_STUB("_Unwind_ForcedUnwind")
                WALK_STUB("_Unwind_Backtrace") WALK_STUB("backtrace") WALK_STUB("pthread_exit"));
#endif

static void *_Atomic real___monstartup, *_Atomic real__mcleanup;

MVZ_EXPORT void __monstartup(unsigned long low, unsigned long high)
{
    if (mvz_cg_pg_active)
        return;
    void (*real)(unsigned long, unsigned long) =
        REAL(void (*)(unsigned long, unsigned long), __monstartup);
    if (real)
        real(low, high);
}

MVZ_EXPORT void _mcleanup(void)
{
    if (mvz_cg_pg_active)
        return;
    void (*real)(void) = REAL(void (*)(void), _mcleanup);
    if (real)
        real();
}
