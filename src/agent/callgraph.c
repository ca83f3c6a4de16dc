/*
 * callgraph.c - the complete dynamic call graph (memviz run --callgraph,
 * MEMVIZ_CALLGRAPH=1): each thread's shadow call stack and calling-context
 * tree, and the entry and exit hooks of a program built with
 * -finstrument-functions. callgraph.h says how the pieces fit.
 *
 * Non-local exits (longjmp, an exception through frames without cleanups,
 * a thread's own stack being reused) leave frames on the shadow stack that
 * are no longer on the real one. An entry pops every frame at or below its
 * own sp, except that a function inlined into the top frame enters at the
 * very same sp and from the top frame's call site (-finstrument-functions
 * only: -pg does not instrument inlined calls); an exit pops the frames
 * below it, then its own. Frames on another stack (a signal's alternate
 * stack) are never compared with the thread's own.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "agent/callgraph.h"
#include "trace/callgraph.h"

/* callgraph_out.c: writes thread t's tree (caller holds the registry lock) */
void mvz_cg_write_thread(struct cg_thread *t, int flags);

#define HASH_MIN 1024u

int mvz_cg_on;
uint32_t mvz_cg_time_every = MVZ_CG_TIME_EVERY_DEFAULT;
__thread struct cg_thread *mvz_cg_self;
static __thread int cg_starting;
static struct cg_thread *registry;
static uint32_t next_serial;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

/* ---- the context tree ---- */

/* An open-addressing index of uint32 ids (+1; 0: empty), doubled when half
 * full; key(i) gives the slot id i hashes to. -1 when there is no room. */
static int index_room(uint32_t **index, uint32_t *mask, uint32_t entries, struct cg_thread *t,
                      uint32_t (*slot)(struct cg_thread *, uint32_t, uint32_t))
{
    if (*index && entries * 2 < *mask + 1)
        return 0;
    uint32_t slots = *index ? (*mask + 1) * 2 : HASH_MIN;
    uint32_t *h = mvz_map_zeroed(slots * sizeof(*h));
    if (!h)
        return -1;
    for (uint32_t i = 0; *index && i <= *mask; i++) {
        if (!(*index)[i])
            continue;
        uint32_t k = slot(t, (*index)[i] - 1, slots - 1);
        while (h[k])
            k = (k + 1) & (slots - 1);
        h[k] = (*index)[i];
    }
    if (*index)
        mvz_unmap(*index, (*mask + 1) * sizeof(**index));
    *index = h;
    *mask = slots - 1;
    return 0;
}

static uint32_t node_slot(struct cg_thread *t, uint32_t n, uint32_t mask)
{
    const struct cg_node *x = mvz_cg_node(t, n);
    return mvz_cg_slot(PARENT(x), x->fn, mask);
}

static uint32_t site_slot(struct cg_thread *t, uint32_t i, uint32_t mask)
{
    const struct cg_site *e = mvz_cg_site(t, i);
    return mvz_cg_slot(e->node, e->site, mask);
}

static void index_put(uint32_t *index, uint32_t mask, uint32_t slot, uint32_t id)
{
    while (index[slot])
        slot = (slot + 1) & mask;
    index[slot] = id + 1;
}

/* Whether two code addresses are in one loaded object. */
int mvz_cg_same_module(uintptr_t a, uintptr_t b)
{
    struct dl_find_object fa, fb;
    if (_dl_find_object((void *)a, &fa) != 0 || _dl_find_object((void *)b, &fb) != 0)
        return 1; /* unknown: no frame added */
    return fa.dlfo_map_start == fb.dlfo_map_start;
}

static int foreign(struct cg_thread *t, uint32_t parent, uintptr_t site)
{
    return parent && !mvz_cg_same_module(mvz_cg_node(t, parent)->fn, site);
}

static __attribute__((noinline, cold)) uint32_t node_new(struct cg_thread *t, uint32_t parent,
                                                         uintptr_t fn, uintptr_t site)
{
    uint32_t n = atomic_load_explicit(&t->nnodes, memory_order_relaxed);
    if (n >= NODE_CHUNKS * NODE_CHUNK ||
        index_room(&t->hash, &t->hash_mask, n + 1, t, node_slot) < 0)
        return UNTRACKED;
    if (!t->chunks[n >> NODE_CHUNK_BITS] &&
        !(t->chunks[n >> NODE_CHUNK_BITS] = mvz_map_zeroed(NODE_CHUNK * sizeof(struct cg_node))))
        return UNTRACKED;
    struct cg_node *x = mvz_cg_node(t, n);
    x->fn = fn;
    x->site = site;
    x->self = n;
    x->parent = parent | (foreign(t, parent, site) ? FOREIGN_SITE : 0);
    x->path = mvz_cg_path(mvz_cg_node(t, parent)->path, fn);
    x->exact_left = mvz_cg_time_every > 1 ? TIME_EXACT : UINT32_MAX;
    atomic_store_explicit(&t->nnodes, n + 1, memory_order_release);
    index_put(t->hash, t->hash_mask, mvz_cg_slot(parent, fn, t->hash_mask), n);
    return n;
}

/* The node of a call of fn under parent, by the index: made when new. */
static __attribute__((noinline)) struct cg_node *
child_by_index(struct cg_thread *t, struct cg_node *parent, uintptr_t fn, uintptr_t site)
{
    uint32_t c = mvz_cg_find_child(t, parent->self, fn);
    if (c == UNTRACKED)
        c = node_new(t, parent->self, fn, site);
    if (c == UNTRACKED)
        return NULL;
    struct cg_node *x = mvz_cg_node(t, c);
    mvz_cg_note_child(t, parent, x);
    return x;
}

/* The node of a call of fn under parent, made on first sight (NULL: no
 * room): one of its last two children or its table's, as a loop calling
 * one or two functions, or an interpreter's dispatch, finds them. */
static inline struct cg_node *child_of(struct cg_thread *t, struct cg_node *parent, uintptr_t fn,
                                       uintptr_t site)
{
    struct cg_node *c = mvz_cg_cached_child(parent, fn);
    return MVZ_LIKELY(c != NULL) ? c : child_by_index(t, parent, fn, site);
}

/* Node x's call site `site` that is not its first, made on first sight;
 * NULL when there is no room (the call is then not counted by site). */
static __attribute__((noinline)) struct cg_site *other_site(struct cg_thread *t, struct cg_node *x,
                                                            uintptr_t site)
{
    struct cg_site *seen = mvz_cg_find_site(t, x, site);
    if (seen)
        return seen;
    uint32_t n = x->self, k = atomic_load_explicit(&t->nsites, memory_order_relaxed);
    if (k >= SITE_CHUNKS * SITE_CHUNK ||
        index_room(&t->site_hash, &t->site_mask, k + 1, t, site_slot) < 0)
        return NULL;
    if (!t->site_chunks[k >> SITE_CHUNK_BITS] &&
        !(t->site_chunks[k >> SITE_CHUNK_BITS] =
              mvz_map_zeroed(SITE_CHUNK * sizeof(struct cg_site))))
        return NULL;
    struct cg_site *e = mvz_cg_site(t, k);
    e->site = site;
    e->node = n;
    e->foreign = (uint32_t)foreign(t, PARENT(x), site);
    atomic_store_explicit(&t->nsites, k + 1, memory_order_release);
    index_put(t->site_hash, t->site_mask, mvz_cg_slot(n, site, t->site_mask), k);
    return mvz_cg_note_site(t, x, e);
}

/* Counts a call of node x from site; whether the site is foreign. */
static inline int count_call(struct cg_thread *t, struct cg_node *x, uintptr_t site)
{
    if (MVZ_LIKELY(x->site == site)) {
        mvz_cg_count_add(&x->calls, 1);
        return (x->parent & FOREIGN_SITE) != 0;
    }
    struct cg_site *e = x->last_site;
    if (!e || e->site != site)
        e = other_site(t, x, site);
    if (!e) {
        t->untracked++;
        return 0;
    }
    mvz_cg_count_add(&e->calls, 1);
    return (int)e->foreign;
}

/* ---- the shadow stack ---- */

void mvz_cg_frame_close(const struct cg_frame *f, uint64_t *now)
{
    if (f->weight && f->np && mvz_cg_now(now) > f->t0)
        mvz_cg_count_add(&f->np->ticks, (*now - f->t0) * f->weight);
}

/* A taken-over frame dropped as dead keeps its return address here, in
 * case it was not: its return then still finds it (callgraph_pg.c). */
void mvz_cg_pop(struct cg_thread *t, uint64_t *now)
{
    struct cg_frame *f = &t->frames[t->depth - 1];
    mvz_cg_frame_close(f, now);
    if (f->kind == CG_TAKEN) {
        t->graves[t->grave_next++ % GRAVES] = (struct cg_grave){f->sp, f->ret};
        t->taken--;
    }
    t->depth--;
}

/* Whether a frame at sp is on the same stack as one at top_sp: the
 * thread's own, or, off it, one within a MiB (a signal's alternate stack,
 * a coroutine's). */
static inline int comparable(const struct cg_thread *t, uintptr_t top_sp, uintptr_t sp)
{
    if (mvz_cg_on_own_stack(t, sp))
        return 1;
    uintptr_t d = top_sp > sp ? top_sp - sp : sp - top_sp;
    return !mvz_cg_on_own_stack(t, top_sp) && d < (1u << 20);
}

/* Whether top, at the same sp as a call of fn from site, is that call's
 * container: fn was inlined into it (it calls the hooks from the same
 * frame, with the same site). */
static int inlined_into(struct cg_thread *t, const struct cg_frame *top, uintptr_t fn,
                        uintptr_t site)
{
    if (top->kind != CG_CYG)
        return 0; /* -pg: the same slot is the same frame's, so a new call's */
    if (top->node == UNTRACKED)
        return 1;
    return top->site == site && mvz_cg_node(t, top->node)->fn != fn;
}

/* Before a call at sp: the frames a non-local exit left behind. */
static __attribute__((noinline)) void
drop_dead_on_entry(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uint64_t *now)
{
    while (t->depth) {
        struct cg_frame *top = &t->frames[t->depth - 1];
        if (top->sp > sp || (top->sp == sp && inlined_into(t, top, fn, site)))
            break;
        mvz_cg_pop(t, now);
    }
}

struct cg_frame *mvz_cg_enter(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp,
                              uint64_t *now)
{
    if (t->depth && comparable(t, t->frames[t->depth - 1].sp, sp)) {
        if (t->overflow && sp >= t->frames[t->depth - 1].sp)
            t->overflow = 0; /* the calls past the limit are gone */
        if (t->frames[t->depth - 1].sp <= sp)
            drop_dead_on_entry(t, fn, site, sp, now);
    }
    if (t->depth >= SHADOW_MAX) {
        t->untracked++;
        return NULL;
    }
    const struct cg_frame *up = t->depth ? &t->frames[t->depth - 1] : NULL;
    struct cg_node *parent = up ? up->np : mvz_cg_node(t, 0);
    struct cg_node *x = parent ? child_of(t, parent, fn, site) : NULL;
    int far = 0;
    uint16_t weight = 0;
    if (x) {
        far = count_call(t, x, site);
        weight = mvz_cg_time_weight(t, x);
    } else {
        t->untracked++;
    }
    /* field by field: a compound literal compiled into zeroing vector
     * stores with narrower ones over them, 2-3% slower on fib and
     * many_small */
    struct cg_frame *f = &t->frames[t->depth++];
    f->node = x ? x->self : UNTRACKED;
    f->kind = CG_CYG;
    f->foreign = (uint8_t)far;
    f->weight = weight;
    f->np = x;
    f->sp = sp;
    f->t0 = weight ? mvz_cg_now(now) : 0;
    f->ret = 0;
    f->site = site;
    f->h = mvz_hash_step(up ? up->h : MVZ_HASH_SEED, site);
    return f;
}

/* Whether frame f is the call of fn that exits with the stack pointer at
 * sp, the exit hook returning to ra: the same stack pointer as at entry,
 * or, where the compiler made the exit hook a tail call (a function that
 * returns nothing, at -O2), the hook returning to the call's own site. */
static inline int exits_here(struct cg_thread *t, const struct cg_frame *f, uintptr_t fn,
                             uintptr_t sp, uintptr_t ra)
{
    return f->kind == CG_CYG && (f->sp == sp || f->site == ra) &&
           (f->node == UNTRACKED || mvz_cg_node(t, f->node)->fn == fn);
}

static void leave(struct cg_thread *t, uintptr_t fn, uintptr_t sp, uintptr_t ra, uint64_t *now)
{
    if (t->overflow) {
        if (!t->depth || sp < t->frames[t->depth - 1].sp) {
            t->overflow--;
            return;
        }
        t->overflow = 0;
    }
    if (!t->depth) {
        t->unmatched++;
        return;
    }
    /* the top frame, as nearly always; else the frames a non-local exit
     * left above the one exiting go with it */
    uint32_t d = t->depth - 1;
    if (!exits_here(t, &t->frames[d], fn, sp, ra)) {
        while (d > 0 && !exits_here(t, &t->frames[d - 1], fn, sp, ra))
            d--;
        if (d == 0) { /* no frame exits here: the top, if it is fn's (its stack grew) */
            const struct cg_frame *top = &t->frames[t->depth - 1];
            if (top->kind != CG_CYG ||
                (top->node != UNTRACKED && mvz_cg_node(t, top->node)->fn != fn)) {
                t->unmatched++;
                return;
            }
            d = t->depth;
        }
        d--;
    }
    while (t->depth > d)
        mvz_cg_pop(t, now);
}

/* ---- threads ---- */

static void thread_ended(void *arg);

static void make_exit_key(void)
{
    pthread_key_create(&exit_key, thread_ended);
}

static void stack_bounds(struct cg_thread *t)
{
    pthread_attr_t a;
    void *lo = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        if (pthread_attr_getstack(&a, &lo, &size) != 0)
            size = 0;
        pthread_attr_destroy(&a);
    }
    t->stack_lo = (uintptr_t)lo;
    t->stack_hi = (uintptr_t)lo + size;
}

/* The calling thread's state, made at its first call; NULL when the call
 * graph is off or the state cannot be made (the thread goes uncounted). */
static __attribute__((noinline)) struct cg_thread *thread_start(void)
{
    /* a library's constructor may run before the agent's: the first call
     * starts tracing, as the first allocation would */
    if (!atomic_load_explicit(&mvz_init_started, memory_order_relaxed) && !mvz_tls.internal &&
        !cg_starting) {
        cg_starting = 1;
        mvz_init();
        cg_starting = 0;
    }
    if (!mvz_cg_on && mvz_recording()) {
        mvz_cg_self = CG_DEAD; /* the call graph is off: later calls return at once */
        return NULL;
    }
    if (!mvz_cg_on || mvz_cg_self == CG_DEAD || cg_starting || mvz_tls.internal || !mvz_recording())
        return NULL;
    cg_starting = 1;
    mvz_tls.internal++;
    struct cg_thread *t = mvz_map_zeroed(sizeof(*t));
    struct cg_frame *frames = t ? mvz_map_zeroed(SHADOW_MAX * sizeof(struct cg_frame)) : NULL;
    if (t && frames && index_room(&t->hash, &t->hash_mask, 1, t, node_slot) == 0 &&
        (t->chunks[0] = mvz_map_zeroed(NODE_CHUNK * sizeof(struct cg_node)))) {
        t->frames = frames;
        /* child tables: without room for them, callers go by the index */
        t->kids_area = mvz_map_zeroed((size_t)KIDS_MAX * KIDS * sizeof(void *));
        t->tid = mvz_tls.tid ? mvz_tls.tid : (int)gettid();
        mvz_cg_node(t, 0)->path = MVZ_CG_ROOT_PATH;
        atomic_store_explicit(&t->nnodes, 1, memory_order_release);
        stack_bounds(t);
        pthread_once(&exit_key_once, make_exit_key);
        pthread_setspecific(exit_key, t);
        pthread_mutex_lock(&registry_lock);
        t->serial = ++next_serial;
        t->rng = t->serial * 0x9E3779B9u | 1;
        t->next = registry;
        registry = t;
        pthread_mutex_unlock(&registry_lock);
        mvz_cg_self = t;
    } else {
        if (frames)
            mvz_unmap(frames, SHADOW_MAX * sizeof(struct cg_frame));
        if (t && t->hash)
            mvz_unmap(t->hash, (t->hash_mask + 1) * sizeof(*t->hash));
        if (t)
            mvz_unmap(t, sizeof(*t));
        t = NULL;
        mvz_cg_self = CG_DEAD;
    }
    mvz_tls.internal--;
    cg_starting = 0;
    return t;
}

static void thread_free(struct cg_thread *t)
{
    uint32_t n = atomic_load_explicit(&t->nnodes, memory_order_relaxed);
    for (uint32_t c = 0; c < NODE_CHUNKS && c * NODE_CHUNK < n + NODE_CHUNK; c++)
        if (t->chunks[c])
            mvz_unmap(t->chunks[c], NODE_CHUNK * sizeof(struct cg_node));
    uint32_t k = atomic_load_explicit(&t->nsites, memory_order_relaxed);
    for (uint32_t c = 0; c < SITE_CHUNKS && c * SITE_CHUNK < k + SITE_CHUNK; c++)
        if (t->site_chunks[c])
            mvz_unmap(t->site_chunks[c], SITE_CHUNK * sizeof(struct cg_site));
    if (t->site_hash)
        mvz_unmap(t->site_hash, (t->site_mask + 1) * sizeof(*t->site_hash));
    mvz_unmap(t->hash, (t->hash_mask + 1) * sizeof(*t->hash));
    mvz_unmap(t->frames, SHADOW_MAX * sizeof(struct cg_frame));
    if (t->kids_area)
        mvz_unmap(t->kids_area, (size_t)KIDS_MAX * KIDS * sizeof(void *));
    mvz_unmap(t, sizeof(*t));
}

/* ---- the -finstrument-functions hooks ---- */

struct cg_thread *mvz_cg_hook_begin(void)
{
    struct cg_thread *t = mvz_cg_self;
    if (MVZ_UNLIKELY(!t))
        t = thread_start();
    if (MVZ_UNLIKELY(t == CG_DEAD || !t || t->busy))
        return NULL;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return t;
}

/* The stack pointer before the hook was called: its frame's address
 * plus the saved frame pointer and the return address. */
#define SP_BEFORE_HOOK ((uintptr_t)__builtin_frame_address(0) + 16)

MVZ_EXPORT __attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn,
                                                                                 void *site)
{
    struct cg_thread *t = mvz_cg_hook_begin();
    if (!t)
        return;
    uint64_t now = 0;
    if (!mvz_cg_enter(t, (uintptr_t)fn, (uintptr_t)site, SP_BEFORE_HOOK, &now))
        t->overflow++;
    mvz_cg_hook_end(t);
}

MVZ_EXPORT __attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn,
                                                                                void *site)
{
    (void)site;
    struct cg_thread *t = mvz_cg_hook_begin();
    if (!t)
        return;
    uint64_t now = 0;
    leave(t, (uintptr_t)fn, SP_BEFORE_HOOK, (uintptr_t)__builtin_return_address(0), &now);
    mvz_cg_hook_end(t);
}

static void thread_ended(void *arg)
{
    struct cg_thread *t = arg;
    mvz_tls.internal++;
    mvz_cg_self = CG_DEAD;
    pthread_mutex_lock(&registry_lock);
    struct cg_thread **p = &registry;
    while (*p && *p != t)
        p = &(*p)->next;
    int found = *p != NULL;
    if (found) {
        *p = t->next;
        if (mvz_recording())
            mvz_cg_write_thread(t, MVZ_CG_ENDED);
    }
    pthread_mutex_unlock(&registry_lock);
    if (found)
        thread_free(t);
    mvz_tls.internal--;
}

void mvz_callgraph_write_all(void)
{
    if (!mvz_cg_on)
        return;
    mvz_tls.internal++;
    pthread_mutex_lock(&registry_lock);
    for (struct cg_thread *t = registry; t; t = t->next)
        mvz_cg_write_thread(t, 0);
    pthread_mutex_unlock(&registry_lock);
    mvz_tls.internal--;
}

/* exit() from any depth: the calls open on this thread end here, so that
 * the atexit handlers that follow are entry points of their own. */
void mvz_callgraph_exit_called(void)
{
    struct cg_thread *t = mvz_cg_self;
    if (!t || t == CG_DEAD || t->busy)
        return;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t now = 0;
    mvz_cg_give_back(t);
    while (t->depth)
        mvz_cg_pop(t, &now);
    t->overflow = 0;
    mvz_cg_hook_end(t);
}

/* In a fork child: only the forking thread goes on, and the child's trace
 * counts its calls from the fork on. */
void mvz_callgraph_after_fork_child(void)
{
    pthread_mutex_init(&registry_lock, NULL);
    struct cg_thread *self = mvz_cg_self == CG_DEAD ? NULL : mvz_cg_self, *next;
    for (struct cg_thread *t = registry; t; t = next) {
        next = t->next;
        if (t != self)
            thread_free(t);
    }
    registry = self;
    if (!self)
        return;
    self->next = NULL;
    self->tid = (int)gettid();
    self->unmatched = self->untracked = 0;
    uint32_t n = atomic_load_explicit(&self->nnodes, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++) {
        struct cg_node *x = mvz_cg_node(self, i);
        x->calls = x->ticks = x->window_ticks = 0;
        x->exact_left = 0; /* sampled from here on */
    }
    uint32_t k = atomic_load_explicit(&self->nsites, memory_order_relaxed);
    for (uint32_t i = 0; i < k; i++)
        mvz_cg_site(self, i)->calls = 0;
    uint64_t now = mvz_cg_ticks();
    for (uint32_t i = 0; i < self->depth; i++)
        if (self->frames[i].weight)
            self->frames[i].t0 = now;
}

/* ---- signal handlers: entry points of their own ----
 * With the call graph on, the program's handlers are installed wrapped:
 * the wrapper pushes a barrier, a frame of the root, so that the handler's
 * calls hang under the root rather than under whatever it interrupted,
 * and pops it (with what the handler left) when the handler returns. A
 * handler that leaves by siglongjmp leaves the barrier to be dropped as
 * dead by the next call further out. */
struct cg_handler {
    void *_Atomic fn;
    _Atomic int siginfo;
};
static struct cg_handler handlers[NSIG];

static void wrapped_handler(int sig, siginfo_t *info, void *uctx)
{
    int saved = errno;
    void *fn = atomic_load_explicit(&handlers[sig].fn, memory_order_acquire);
    int siginfo = atomic_load_explicit(&handlers[sig].siginfo, memory_order_relaxed);
    struct cg_thread *t = mvz_cg_self;
    uint32_t depth = 0;
    if (t && t != CG_DEAD && !t->busy && t->depth < SHADOW_MAX) {
        depth = t->depth + 1;
        t->frames[t->depth++] = (struct cg_frame){.node = 0,
                                                  .np = mvz_cg_node(t, 0),
                                                  .kind = CG_CYG,
                                                  .sp = (uintptr_t)__builtin_frame_address(0),
                                                  .h = MVZ_HASH_SEED};
    }
    errno = saved;
    if (siginfo)
        ((void (*)(int, siginfo_t *, void *))fn)(sig, info, uctx);
    else if (fn)
        ((void (*)(int))fn)(sig);
    saved = errno;
    if (depth && mvz_cg_self == t && !t->busy) {
        uint64_t now = 0;
        while (t->depth >= depth && t->depth)
            mvz_cg_pop(t, &now);
    }
    errno = saved;
}

int mvz_callgraph_wrap(int sig, const struct sigaction *act, struct sigaction *wrapped)
{
    if (!mvz_cg_on || !act || sig <= 0 || sig >= NSIG)
        return 0;
    int siginfo = (act->sa_flags & SA_SIGINFO) != 0;
    void *fn = siginfo ? (void *)act->sa_sigaction : (void *)act->sa_handler;
    if (!siginfo && (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN))
        return 0;
    atomic_store_explicit(&handlers[sig].siginfo, siginfo, memory_order_relaxed);
    atomic_store_explicit(&handlers[sig].fn, fn, memory_order_release);
    *wrapped = *act;
    wrapped->sa_sigaction = wrapped_handler;
    wrapped->sa_flags |= SA_SIGINFO;
    return 1;
}

void mvz_callgraph_unwrap(int sig, struct sigaction *old)
{
    if (!old || sig <= 0 || sig >= NSIG || !(old->sa_flags & SA_SIGINFO) ||
        old->sa_sigaction != wrapped_handler)
        return;
    void *fn = atomic_load_explicit(&handlers[sig].fn, memory_order_acquire);
    if (atomic_load_explicit(&handlers[sig].siginfo, memory_order_relaxed)) {
        old->sa_sigaction = (void (*)(int, siginfo_t *, void *))fn;
    } else {
        old->sa_flags &= ~SA_SIGINFO;
        old->sa_handler = (void (*)(int))fn;
    }
}
