/*
 * callgraph.h - the agent's call graph (memviz run --callgraph): what its
 * three files share.
 *   callgraph.c      threads, their calling-context trees and shadow
 *                    stacks; the -finstrument-functions hooks
 *   callgraph_pg.c   the -pg and -pg -mfentry hooks (mcount, __fentry__),
 *                    which see a call's return by taking over its return
 *                    address, and the unwinder entry points that must
 *                    not meet a taken-over one
 *   callgraph_out.c  allocation stacks from the shadow stack; the trees
 *                    written into the trace
 *
 * Each thread owns its state outright: the hooks take no lock and no
 * atomic read-modify-write. Another thread reads it only to write it into
 * the trace: node counts are stored whole (relaxed atomics), nodes live in
 * chunks that never move, and a node is published (nnodes, release) after
 * it is filled in.
 *
 * A shadow frame's sp orders frames of one stack: the stack pointer right
 * before the hook was called (-finstrument-functions), or the address of
 * the slot holding the call's return address (-pg), strictly lower for a
 * callee than for its caller in both.
 */
#ifndef MVZ_AGENT_CALLGRAPH_H
#define MVZ_AGENT_CALLGRAPH_H

#include <stdint.h>

#include "agent/agent.h"
#include "trace/callgraph.h"

#define NODE_CHUNK_BITS 12
#define NODE_CHUNK (1u << NODE_CHUNK_BITS)
#define NODE_CHUNKS 4096u     /* 16 M contexts a thread */
#define SHADOW_MAX (1u << 19) /* open calls a thread; deeper ones go uncounted */
#define UNTRACKED UINT32_MAX  /* a frame without a node (no room for one) */
/* In a node's parent word: the call site is not in the caller's module
 * (code that was not instrumented made the call), so the caller gets a
 * frame of its own in allocation stacks. */
#define FOREIGN_SITE 0x80000000u
#define PARENT(x) ((x)->parent & ~FOREIGN_SITE)
#define GRAVES 16       /* return addresses of taken-over frames dropped as dead */
#define KIDS 16         /* a node's child or site table (kids, site_tab) */
#define KIDS_AFTER 32   /* made after that many index lookups */
#define KIDS_MAX 65536u /* tables a thread */
/* Time: a context's first TIME_EXACT calls are timed, then one in
 * mvz_cg_time_every (chosen at random), its time counted that many times
 * over: reading the time-stamp counter is most of a call's cost. */
#define TIME_EXACT 64
/* A context whose calls took this many ticks each on average (about a
 * microsecond) over its first TIME_EXACT - 1, has its next LONG_WINDOW
 * calls timed too, and so on while they stay that long: the counter's
 * reads cost little beside such calls, and one of them timed in eight,
 * counted eight times, made the estimate of a context of a few hundred
 * long calls swing by a third. (Deciding from past calls only keeps the
 * estimate unbiased.) */
#define LONG_CALL_TICKS 2048
#define LONG_WINDOW 256
extern uint32_t mvz_cg_time_every; /* mvz_cg_time_every_parse(MEMVIZ_CALLGRAPH_TIME) */

/* A calling context: a chain of calls from the root, by callee (the call
 * sites are counted apart: the node's first in it, the others in the
 * thread's site table). */
struct cg_node {
    uintptr_t fn, site;         /* site: the first call site seen */
    uint64_t path;              /* mvz_cg_path from the root */
    uint64_t calls;             /* calls from `site` */
    uint64_t ticks;             /* inclusive, from every site */
    uint32_t parent;            /* with FOREIGN_SITE: `site` is not in the parent's module */
    uint32_t self;              /* this node's number */
    struct cg_node *last_child; /* the child called last (NULL: none yet) */
    struct cg_site *last_site;  /* of its other sites, the one called from last */
    /* the stack of the latest allocation made here, by its return address
     * and the call sites on the way (the frame's h) */
    uintptr_t alloc_ra;
    uint64_t alloc_h;
    uint32_t alloc_stack, alloc_epoch;
    uint32_t exact_left; /* calls still to be timed every one (TIME_EXACT) */
    uint32_t misses;     /* children found by the index, until kids is made */
    /* the child last_child was before (NULL: none): a caller that calls
     * two functions in turn finds them here */
    struct cg_node *prev_child;
    /* a caller of many functions (an interpreter's dispatch), once KIDS_AFTER
     * of its calls needed the index: KIDS children by mvz_cg_kid_slot */
    struct cg_node **kids;
    /* the same for a callee called from many sites: KIDS of its other
     * sites, by mvz_cg_kid_slot of the site */
    struct cg_site **site_tab;
    uint32_t site_misses;
    uint64_t window_ticks; /* ticks when its window of exact calls began */
};

/* A node's other call sites: an append-only table (read by the thread
 * that writes the tree at the end while this one runs), found by a hash. */
#define SITE_CHUNK_BITS 12
#define SITE_CHUNK (1u << SITE_CHUNK_BITS)
#define SITE_CHUNKS 4096u
struct cg_site {
    uintptr_t site;
    uint64_t calls;
    uint32_t node;
    uint32_t foreign;
};

enum cg_frame_kind {
    CG_CYG,      /* -finstrument-functions: the exit hook ends it */
    CG_TAKEN,    /* -pg: its return address is the trampoline's, ret the real one */
    CG_GIVEN_UP, /* -pg, its return address given back (an unwinder came) */
};

struct cg_frame {
    uint32_t node;      /* UNTRACKED: none */
    uint8_t kind;       /* enum cg_frame_kind */
    uint8_t foreign;    /* site is not in the caller's module */
    uint16_t weight;    /* calls this one's time stands for; 0: not timed */
    struct cg_node *np; /* node's, held to spare the hooks a lookup; NULL: none */
    uintptr_t sp;
    uint64_t t0; /* when the call began, in ticks */
    uintptr_t ret;
    uintptr_t site; /* this call's */
    uint64_t h;     /* the call sites from the root to here, hashed */
};

struct cg_grave {
    uintptr_t slot, ret;
};

/* (What every call touches comes first, in one cache line; -pg's
 * assembly fast path knows these offsets: callgraph_pg.c.) */
struct cg_thread {
    struct cg_thread *next; /* in the registry */
    int tid;
    uint32_t serial;
    volatile int busy; /* a hook is running: a signal handler's calls go uncounted */
    uint32_t depth;
    uint32_t taken;               /* frames of kind CG_TAKEN on the shadow stack */
    uint32_t rng;                 /* xorshift: which calls are timed */
    struct cg_frame *frames;      /* SHADOW_MAX, faulted in as used */
    uintptr_t stack_lo, stack_hi; /* the thread's own stack */
    uint32_t overflow;
    _Atomic uint32_t nnodes;
    uint64_t unmatched, untracked;
    uint32_t *hash; /* node + 1 by (parent, fn); 0: empty */
    uint32_t hash_mask;
    _Atomic uint32_t nsites; /* in sites: published after filled in */
    uint32_t *site_hash;     /* site + 1 by (node, site) */
    uint32_t site_mask;
    uint32_t grave_next; /* in graves, round robin */
    uint32_t nkids;      /* tables made, in kids_area */
    void **kids_area;    /* KIDS_MAX tables of KIDS pointers, faulted in as used */
    struct cg_site *site_chunks[SITE_CHUNKS];
    struct cg_grave graves[GRAVES];
    uintptr_t walk[MVZ_MAX_DEPTH + 2];
    struct cg_node *chunks[NODE_CHUNKS];
};

#define CG_DEAD ((struct cg_thread *)1)
/* callgraph_pg.c: --callgraph-filter, few functions patched in */
extern int mvz_cg_partial;
void mvz_cg_return(void); /* callgraph_pg.c: where a taken-over call returns */
extern __thread struct cg_thread *mvz_cg_self;

static inline uint64_t mvz_cg_ticks(void)
{
#if defined(__x86_64__)
    if (MVZ_LIKELY(mvz_tsc_ok))
        return __builtin_ia32_rdtsc();
#endif
    return mvz_now_ns();
}

/* The helpers below touch integer registers only: -pg's fast path
 * (callgraph_pg.c), which runs before the vector registers are saved,
 * shares them with the general hooks. */
#define MVZ_CG_REGS_CODE __attribute__((target("general-regs-only"), no_sanitize("thread")))
#define MVZ_CG_REGS __attribute__((always_inline)) MVZ_CG_REGS_CODE

/* The slot of key (a number, an address) in an index of mask + 1 slots:
 * the high half of a sum of two multiplicative hashes. (Hashing a ^ addr
 * instead lets a small node number and a nearby code address make the
 * same key: many_small -finstrument-functions, whose interpreter calls a
 * dozen callees from one context, ran 5% slower.) */
static inline MVZ_CG_REGS uint32_t mvz_cg_slot(uint32_t a, uintptr_t addr, uint32_t mask)
{
    uint64_t k = (uint64_t)addr * UINT64_C(0x9E3779B97F4A7C15) +
                 (uint64_t)(a + 1) * UINT64_C(0xbf58476d1ce4e5b9);
    return (uint32_t)((k ^ (k >> 29)) >> 32) & mask;
}

static inline MVZ_CG_REGS struct cg_node *mvz_cg_node(struct cg_thread *t, uint32_t i)
{
    return &t->chunks[i >> NODE_CHUNK_BITS][i & (NODE_CHUNK - 1)];
}

static inline MVZ_CG_REGS struct cg_site *mvz_cg_site(struct cg_thread *t, uint32_t i)
{
    return &t->site_chunks[i >> SITE_CHUNK_BITS][i & (SITE_CHUNK - 1)];
}

/* fn's slot in a node's child table: the top bits of a multiplicative hash. */
static inline MVZ_CG_REGS uint32_t mvz_cg_kid_slot(uintptr_t fn)
{
    return (uint32_t)(((uint64_t)fn * UINT64_C(0x9E3779B97F4A7C15)) >> 60);
}
_Static_assert(KIDS == 16, "mvz_cg_kid_slot takes 4 bits");

/* A child of p's among its last two and its table; NULL: not there. */
static inline MVZ_CG_REGS struct cg_node *mvz_cg_cached_child(struct cg_node *p, uintptr_t fn)
{
    struct cg_node *x = p->last_child;
    if (x && x->fn == fn)
        return x;
    if ((x = p->prev_child) && x->fn == fn)
        return x;
    if (p->kids && (x = p->kids[mvz_cg_kid_slot(fn)]) && x->fn == fn)
        return x;
    return NULL;
}

/* A table of KIDS pointers for a node whose lookups needed the index
 * KIDS_AFTER times (*misses counts them); NULL: not yet, or no room. */
static inline MVZ_CG_REGS void *mvz_cg_table(struct cg_thread *t, uint32_t *misses)
{
    if (++*misses < KIDS_AFTER || !t->kids_area || t->nkids >= KIDS_MAX)
        return NULL;
    return t->kids_area + (size_t)KIDS * t->nkids++;
}

/* Remembers child x of parent, found by the index: as its last child, and
 * in its child table. */
static inline MVZ_CG_REGS void mvz_cg_note_child(struct cg_thread *t, struct cg_node *parent,
                                                 struct cg_node *x)
{
    parent->prev_child = parent->last_child;
    parent->last_child = x;
    if (!parent->kids)
        parent->kids = mvz_cg_table(t, &parent->misses);
    if (parent->kids)
        parent->kids[mvz_cg_kid_slot(x->fn)] = x;
}

/* Remembers x's other site e, found by the index: as its last one, and in
 * its site table. */
static inline MVZ_CG_REGS struct cg_site *mvz_cg_note_site(struct cg_thread *t, struct cg_node *x,
                                                           struct cg_site *e)
{
    x->last_site = e;
    if (!x->site_tab)
        x->site_tab = mvz_cg_table(t, &x->site_misses);
    if (x->site_tab)
        x->site_tab[mvz_cg_kid_slot(e->site)] = e;
    return e;
}

/* The node of fn under parent, by the index; UNTRACKED when it has none. */
static inline MVZ_CG_REGS uint32_t mvz_cg_find_child(struct cg_thread *t, uint32_t parent,
                                                     uintptr_t fn)
{
    for (uint32_t i = mvz_cg_slot(parent, fn, t->hash_mask);; i = (i + 1) & t->hash_mask) {
        uint32_t h = t->hash[i];
        if (!h)
            return UNTRACKED;
        struct cg_node *x = mvz_cg_node(t, h - 1);
        if (x->fn == fn && PARENT(x) == parent)
            return h - 1;
    }
}

/* Node x's call site `site` among its other sites (the last one used
 * first, as a caller calling it from two places in turn finds); NULL when
 * not seen. */
static inline MVZ_CG_REGS struct cg_site *mvz_cg_find_site(struct cg_thread *t, struct cg_node *x,
                                                           uintptr_t site)
{
    struct cg_site *e = x->last_site;
    if (e && e->site == site)
        return e;
    if (x->site_tab && (e = x->site_tab[mvz_cg_kid_slot(site)]) && e->site == site)
        return e;
    if (!t->site_hash)
        return NULL;
    uint32_t n = x->self;
    for (uint32_t i = mvz_cg_slot(n, site, t->site_mask);; i = (i + 1) & t->site_mask) {
        uint32_t h = t->site_hash[i];
        if (!h)
            return NULL;
        e = mvz_cg_site(t, h - 1);
        if (e->node == n && e->site == site)
            return mvz_cg_note_site(t, x, e);
    }
}

/* How many calls the new call's time stands for: 1 while the context is
 * young, then mvz_cg_time_every for one call in that many, else 0. */
static inline MVZ_CG_REGS uint16_t mvz_cg_time_weight(struct cg_thread *t, struct cg_node *x)
{
    if (x->exact_left) {
        /* the window's calls before this one all closed, each timed once
         * (a context cannot be open twice on one stack) */
        uint32_t window = x->window_ticks ? LONG_WINDOW : TIME_EXACT;
        if (--x->exact_left == 0 && mvz_cg_time_every > 1 &&
            x->ticks - x->window_ticks >= (uint64_t)LONG_CALL_TICKS * (window - 1)) {
            x->exact_left = LONG_WINDOW;    /* long calls: the next ones timed too */
            x->window_ticks = x->ticks | 1; /* (not 0: the first window is over) */
        }
        return 1;
    }
    uint32_t r = t->rng;
    r ^= r << 13;
    r ^= r >> 17;
    r ^= r << 5;
    t->rng = r;
    return (r & (mvz_cg_time_every - 1)) ? 0 : (uint16_t)mvz_cg_time_every;
}

/* Counts another thread may read while this one adds to them. */
static inline void mvz_cg_count_add(uint64_t *v, uint64_t d)
{
    __atomic_store_n(v, *v + d, __ATOMIC_RELAXED);
}

static inline uint64_t mvz_cg_count_read(const uint64_t *v)
{
    return __atomic_load_n(v, __ATOMIC_RELAXED);
}

/* Whether sp is on the thread's own stack (not a signal's alternate
 * stack, not a coroutine's). */
static inline int mvz_cg_on_own_stack(const struct cg_thread *t, uintptr_t sp)
{
    return sp - t->stack_lo < t->stack_hi - t->stack_lo;
}

/* callgraph.c */
/* The calling thread's state, marked busy, or NULL when its calls are
 * not counted now (off, busy: a signal handler inside a hook). */
struct cg_thread *mvz_cg_hook_begin(void);
static inline void mvz_cg_hook_end(struct cg_thread *t)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}
/* A call of fn from site, its frame at sp: the frame pushed, or NULL (no
 * room: the call goes uncounted). */
struct cg_frame *mvz_cg_enter(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp,
                              uint64_t *now);
/* The time now, read once per hook: *now is 0 until read. */
static inline uint64_t mvz_cg_now(uint64_t *now)
{
    if (!*now)
        *now = mvz_cg_ticks();
    return *now;
}
void mvz_cg_frame_close(const struct cg_frame *f, uint64_t *now);
/* Pops the top frame (closed at now); one taken over is remembered. */
void mvz_cg_pop(struct cg_thread *t, uint64_t *now);
int mvz_cg_same_module(uintptr_t a, uintptr_t b);
/* callgraph_pg.c: gives every taken-over return address of t back. */
void mvz_cg_give_back(struct cg_thread *t);

#endif
