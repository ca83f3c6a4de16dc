/*
 * callgraph.c - the complete dynamic call graph (memviz run --callgraph,
 * MEMVIZ_CALLGRAPH=1): the entry and exit hooks a program built with
 * -finstrument-functions calls, a shadow call stack and a calling-context
 * tree per thread, and allocation stacks made from the shadow stack
 * instead of an unwind. trace/callgraph.h has the records it writes.
 *
 * Each thread owns its state outright: the hooks take no lock and no
 * atomic read-modify-write. Another thread reads it only to write it into
 * the trace (at the end, or at an exec): node counts are stored whole
 * (relaxed atomics), nodes live in chunks that never move, and a node is
 * published (nnodes, release) after it is filled in.
 *
 * Non-local exits (longjmp, an exception through frames without cleanups,
 * a thread's own stack being reused) leave frames on the shadow stack that
 * are no longer on the real one. Every frame records the hook's frame
 * address on the real stack, which is strictly lower for a callee than for
 * its caller. So an entry pops every frame at or below its own address,
 * except that a function inlined into the top frame enters at the very
 * same address and from the top frame's call site; an exit pops the frames
 * below it, then its own. Frames on another stack (a signal's alternate
 * stack) are never compared with the thread's own.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "trace/callgraph.h"

#define NODE_CHUNK_BITS 12
#define NODE_CHUNK (1u << NODE_CHUNK_BITS)
#define NODE_CHUNKS 4096u      /* 16 M contexts a thread */
#define SHADOW_MAX (1u << 19)  /* open calls a thread; deeper ones go uncounted */
#define UNTRACKED UINT32_MAX   /* a frame without a node (no room for one) */
#define NODES_PER_RECORD 65536 /* a record well inside a chunk */
#define HASH_MIN 1024u
/* In a node's parent word: the call site is not in the caller's module
 * (code that was not instrumented made the call), so the caller gets a
 * frame of its own in allocation stacks. */
#define FOREIGN_SITE 0x80000000u
#define PARENT(x) ((x)->parent & ~FOREIGN_SITE)

struct cg_node {
    uintptr_t fn, site;
    uint64_t path; /* mvz_cg_path from the root */
    uint64_t calls, ticks;
    uint32_t parent; /* with FOREIGN_SITE */
    uint32_t last_child;
    /* the stack of the latest allocation made here, by its return address */
    uintptr_t alloc_ra;
    uint32_t alloc_stack, alloc_epoch;
};
_Static_assert(sizeof(struct cg_node) == 64, "a node is a cache line");

struct cg_frame {
    uint32_t node;
    uintptr_t sp; /* the hook's frame address */
    uint64_t t0;  /* when the call began, in ticks */
};

struct cg_thread {
    struct cg_thread *next; /* in the registry */
    int tid;
    uint32_t serial;
    volatile int busy; /* a hook is running: a signal handler's calls go uncounted */
    uint32_t depth, overflow;
    _Atomic uint32_t nnodes;
    uint64_t unmatched, untracked;
    uintptr_t stack_lo, stack_hi; /* the thread's own stack */
    uint32_t *hash;               /* node + 1 by (parent, fn, site); 0: empty */
    uint32_t hash_mask;
    struct cg_frame *frames; /* SHADOW_MAX, faulted in as used */
    uintptr_t walk[MVZ_MAX_DEPTH + 2];
    struct cg_node *chunks[NODE_CHUNKS];
};

int mvz_cg_on;
#define CG_DEAD ((struct cg_thread *)1)
static __thread struct cg_thread *cg_self;
static __thread int cg_starting;
static struct cg_thread *registry;
static uint32_t next_serial;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static inline uint64_t ticks_now(void)
{
#if defined(__x86_64__)
    if (MVZ_LIKELY(mvz_tsc_ok))
        return __builtin_ia32_rdtsc();
#endif
    return mvz_now_ns();
}

static inline struct cg_node *node_at(struct cg_thread *t, uint32_t i)
{
    return &t->chunks[i >> NODE_CHUNK_BITS][i & (NODE_CHUNK - 1)];
}

/* Counts another thread may read while this one adds to them. */
static inline void count_add(uint64_t *v, uint64_t d)
{
    __atomic_store_n(v, *v + d, __ATOMIC_RELAXED);
}

static inline uint64_t count_read(const uint64_t *v)
{
    return __atomic_load_n(v, __ATOMIC_RELAXED);
}

/* ---- the context tree ---- */

static inline uint32_t hash_slot(uint32_t parent, uintptr_t fn, uintptr_t site, uint32_t mask)
{
    return (uint32_t)(mvz_cg_path(parent, fn, site) >> 20) & mask;
}

static void hash_put(uint32_t *hash, uint32_t mask, struct cg_thread *t, uint32_t n)
{
    struct cg_node *x = node_at(t, n);
    uint32_t i = hash_slot(PARENT(x), x->fn, x->site, mask);
    while (hash[i])
        i = (i + 1) & mask;
    hash[i] = n + 1;
}

/* Doubles the table when it is half full; -1 when there is no room. */
static int hash_room(struct cg_thread *t, uint32_t nodes)
{
    if (t->hash && nodes * 2 < t->hash_mask + 1)
        return 0;
    uint32_t slots = t->hash ? (t->hash_mask + 1) * 2 : HASH_MIN;
    uint32_t *h = mvz_map_zeroed(slots * sizeof(*h));
    if (!h)
        return -1;
    for (uint32_t n = 1; t->hash && n < nodes; n++)
        hash_put(h, slots - 1, t, n);
    if (t->hash)
        mvz_unmap(t->hash, (t->hash_mask + 1) * sizeof(*t->hash));
    t->hash = h;
    t->hash_mask = slots - 1;
    return 0;
}

/* Whether two code addresses are in one loaded object. */
static int same_module(uintptr_t a, uintptr_t b)
{
    struct dl_find_object fa, fb;
    if (_dl_find_object((void *)a, &fa) != 0 || _dl_find_object((void *)b, &fb) != 0)
        return 1; /* unknown: no frame added */
    return fa.dlfo_map_start == fb.dlfo_map_start;
}

static uint32_t node_new(struct cg_thread *t, uint32_t parent, uintptr_t fn, uintptr_t site)
{
    uint32_t n = atomic_load_explicit(&t->nnodes, memory_order_relaxed);
    if (n >= NODE_CHUNKS * NODE_CHUNK || hash_room(t, n + 1) < 0)
        return UNTRACKED;
    if (!t->chunks[n >> NODE_CHUNK_BITS] &&
        !(t->chunks[n >> NODE_CHUNK_BITS] = mvz_map_zeroed(NODE_CHUNK * sizeof(struct cg_node))))
        return UNTRACKED;
    struct cg_node *x = node_at(t, n);
    x->fn = fn;
    x->site = site;
    x->parent = parent | (parent && !same_module(node_at(t, parent)->fn, site) ? FOREIGN_SITE : 0);
    x->path = mvz_cg_path(node_at(t, parent)->path, fn, site);
    atomic_store_explicit(&t->nnodes, n + 1, memory_order_release);
    hash_put(t->hash, t->hash_mask, t, n);
    return n;
}

/* The node of a call of fn from site under parent, made on first sight. */
static inline uint32_t child_of(struct cg_thread *t, uint32_t parent, uintptr_t fn, uintptr_t site)
{
    struct cg_node *p = node_at(t, parent);
    uint32_t c = p->last_child;
    if (c) {
        struct cg_node *x = node_at(t, c);
        if (x->fn == fn && x->site == site)
            return c;
    }
    for (uint32_t i = hash_slot(parent, fn, site, t->hash_mask);; i = (i + 1) & t->hash_mask) {
        uint32_t h = t->hash[i];
        if (!h) {
            c = node_new(t, parent, fn, site);
            break;
        }
        struct cg_node *x = node_at(t, h - 1);
        if (x->fn == fn && x->site == site && PARENT(x) == parent) {
            c = h - 1;
            break;
        }
    }
    if (c != UNTRACKED)
        node_at(t, parent)->last_child = c;
    return c;
}

/* ---- the shadow stack ---- */

static inline void frame_close(struct cg_thread *t, const struct cg_frame *f, uint64_t now)
{
    if (f->node != UNTRACKED && now > f->t0)
        count_add(&node_at(t, f->node)->ticks, now - f->t0);
}

static inline int on_own_stack(const struct cg_thread *t, uintptr_t sp)
{
    return sp - t->stack_lo < t->stack_hi - t->stack_lo;
}

/* Before a call at sp: the frames a non-local exit left behind. */
static void drop_dead_on_entry(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp,
                               uint64_t now)
{
    while (t->depth) {
        struct cg_frame *top = &t->frames[t->depth - 1];
        if (top->sp > sp)
            break;
        if (top->sp == sp) {
            if (top->node == UNTRACKED)
                break;
            const struct cg_node *x = node_at(t, top->node);
            if (x->site == site && x->fn != fn)
                break; /* fn is inlined into the top frame */
        }
        frame_close(t, top, now);
        t->depth--;
    }
}

static void enter(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uint64_t now)
{
    if (t->depth && on_own_stack(t, sp)) {
        if (t->overflow && sp >= t->frames[t->depth - 1].sp)
            t->overflow = 0; /* the calls past the limit are gone */
        if (t->frames[t->depth - 1].sp <= sp)
            drop_dead_on_entry(t, fn, site, sp, now);
    }
    if (t->depth >= SHADOW_MAX) {
        t->overflow++;
        t->untracked++;
        return;
    }
    uint32_t parent = t->depth ? t->frames[t->depth - 1].node : 0;
    uint32_t n = parent == UNTRACKED ? UNTRACKED : child_of(t, parent, fn, site);
    if (n != UNTRACKED)
        count_add(&node_at(t, n)->calls, 1);
    else
        t->untracked++;
    struct cg_frame *f = &t->frames[t->depth++];
    f->node = n;
    f->sp = sp;
    f->t0 = now;
}

static void leave(struct cg_thread *t, uintptr_t fn, uintptr_t sp, uint64_t now)
{
    int own = on_own_stack(t, sp);
    if (t->overflow) {
        if (!t->depth || sp < t->frames[t->depth - 1].sp) {
            t->overflow--;
            return;
        }
        t->overflow = 0;
    }
    while (own && t->depth && t->frames[t->depth - 1].sp < sp) {
        frame_close(t, &t->frames[t->depth - 1], now);
        t->depth--;
    }
    if (t->depth) {
        struct cg_frame *top = &t->frames[t->depth - 1];
        if (top->node == UNTRACKED || node_at(t, top->node)->fn == fn) {
            frame_close(t, top, now);
            t->depth--;
            return;
        }
    }
    t->unmatched++;
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
    if (!mvz_cg_on || cg_self == CG_DEAD || cg_starting || mvz_tls.internal || !mvz_recording())
        return NULL;
    cg_starting = 1;
    mvz_tls.internal++;
    struct cg_thread *t = mvz_map_zeroed(sizeof(*t));
    struct cg_frame *frames = t ? mvz_map_zeroed(SHADOW_MAX * sizeof(struct cg_frame)) : NULL;
    if (t && frames && hash_room(t, 1) == 0 &&
        (t->chunks[0] = mvz_map_zeroed(NODE_CHUNK * sizeof(struct cg_node)))) {
        t->frames = frames;
        t->tid = mvz_tls.tid ? mvz_tls.tid : (int)gettid();
        node_at(t, 0)->path = MVZ_CG_ROOT_PATH;
        atomic_store_explicit(&t->nnodes, 1, memory_order_release);
        stack_bounds(t);
        pthread_once(&exit_key_once, make_exit_key);
        pthread_setspecific(exit_key, t);
        pthread_mutex_lock(&registry_lock);
        t->serial = ++next_serial;
        t->next = registry;
        registry = t;
        pthread_mutex_unlock(&registry_lock);
        cg_self = t;
    } else {
        if (frames)
            mvz_unmap(frames, SHADOW_MAX * sizeof(struct cg_frame));
        if (t && t->hash)
            mvz_unmap(t->hash, (t->hash_mask + 1) * sizeof(*t->hash));
        if (t)
            mvz_unmap(t, sizeof(*t));
        t = NULL;
        cg_self = CG_DEAD;
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
    mvz_unmap(t->hash, (t->hash_mask + 1) * sizeof(*t->hash));
    mvz_unmap(t->frames, SHADOW_MAX * sizeof(struct cg_frame));
    mvz_unmap(t, sizeof(*t));
}

/* ---- the hooks ---- */

static inline struct cg_thread *self_for_hook(void)
{
    struct cg_thread *t = cg_self;
    if (MVZ_UNLIKELY(!t))
        t = thread_start();
    if (MVZ_UNLIKELY(t == CG_DEAD || !t || t->busy))
        return NULL;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return t;
}

static inline void hook_done(struct cg_thread *t)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}

MVZ_EXPORT __attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn,
                                                                                 void *site)
{
    struct cg_thread *t = self_for_hook();
    if (!t)
        return;
    enter(t, (uintptr_t)fn, (uintptr_t)site, (uintptr_t)__builtin_frame_address(0), ticks_now());
    hook_done(t);
}

MVZ_EXPORT __attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn,
                                                                                void *site)
{
    (void)site;
    struct cg_thread *t = self_for_hook();
    if (!t)
        return;
    leave(t, (uintptr_t)fn, (uintptr_t)__builtin_frame_address(0), ticks_now());
    hook_done(t);
}

/* ---- allocation stacks ---- */

/* The program's return address from the allocation hook whose frame is
 * hook_frame (the agent keeps frame pointers). */
static uintptr_t program_return_address(const void *hook_frame)
{
    const uintptr_t *fp = hook_frame;
    for (int i = 0; i < 8 && fp; i++) {
        if (!mvz_modules_is_agent(fp[1]))
            return fp[1];
        fp = (const uintptr_t *)fp[0];
    }
    return 0;
}

int mvz_callgraph_stack(struct mvz_ring *r, uint8_t *kind, const void *hook_frame, uint32_t *id)
{
    struct cg_thread *t = cg_self;
    if (!t || t == CG_DEAD || t->busy || !t->depth || t->frames[t->depth - 1].node == UNTRACKED)
        return 0;
    uintptr_t ra = program_return_address(hook_frame);
    struct cg_node *x = node_at(t, t->frames[t->depth - 1].node);
    uint32_t ep = mvz_stacks_epoch();
    if (x->alloc_ra == ra && x->alloc_epoch == ep && ra) {
        *kind = MVZ_SK_ID;
        *id = x->alloc_stack;
        return 1;
    }
    /* outermost first: the mark, the call sites, the return address; at
     * most the configured depth, the innermost kept. A function whose
     * callee was called from code that is not instrumented (or that
     * allocates there) has no return address of its own on the way: its
     * entry stands for it. */
    uint32_t room = mvz_agent.depth < 5 ? 5 : (uint32_t)mvz_agent.depth, n = 0;
    uint32_t first = 2 * t->depth > room - 3 ? t->depth - (room - 3) / 2 : 0;
    t->walk[n++] = (uintptr_t)mvz_cg_mark(x->path);
    uintptr_t prev = 0;
    for (uint32_t i = first; i < t->depth; i++) {
        const struct cg_node *y = node_at(t, t->frames[i].node);
        if (i > first && (y->parent & FOREIGN_SITE))
            t->walk[n++] = node_at(t, PARENT(y))->fn + 1;
        if (y->site != prev) /* an inlined call repeats its container's site */
            t->walk[n++] = y->site;
        prev = y->site;
    }
    if (ra && !same_module(x->fn, ra))
        t->walk[n++] = x->fn + 1;
    if (ra)
        t->walk[n++] = ra;
    *id = mvz_stack_of_frames(r, kind, t->walk, (int)n);
    if (*kind == MVZ_SK_ID) {
        x->alloc_ra = ra;
        x->alloc_stack = *id;
        x->alloc_epoch = ep;
    }
    return 1;
}

/* ---- records ---- */

struct open_time {
    uint32_t node;
    uint64_t ticks;
};

/* Adds the time of thread t's open calls (read without stopping it) to
 * extra, indexed like its frames; their number. */
static uint32_t open_calls(struct cg_thread *t, uint64_t now, struct open_time *extra, uint32_t max)
{
    uint32_t depth = __atomic_load_n(&t->depth, __ATOMIC_RELAXED), n = 0;
    for (uint32_t i = 0; i < depth && i < max; i++) {
        struct cg_frame f = t->frames[i];
        if (f.node != UNTRACKED && now > f.t0)
            extra[n++] = (struct open_time){f.node, now - f.t0};
    }
    return n;
}

static uint64_t ticks_ns(const struct mvz_clock_conv *c, uint64_t ticks)
{
    return (uint64_t)((unsigned __int128)ticks * c->mult >> 32);
}

/* Writes nodes [from, to) of t as one record. */
static void write_part(struct cg_thread *t, uint32_t from, uint32_t to, int flags,
                       const struct mvz_clock_conv *conv, const struct open_time *open,
                       uint32_t nopen)
{
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, (uint64_t)t->tid);
    mvz_put_uvarint(&b, t->serial);
    mvz_put_uvarint(&b, mvz_now_ns() - mvz_agent.start_ns);
    mvz_put_uvarint(&b, (uint64_t)flags);
    mvz_put_uvarint(&b, mvz_modules_generation());
    mvz_put_uvarint(&b, from);
    mvz_put_uvarint(&b, to - from);
    uintptr_t pfn = 0, psite = 0;
    for (uint32_t i = from; i < to; i++) {
        const struct cg_node *x = node_at(t, i);
        uint64_t ticks = count_read(&x->ticks);
        for (uint32_t k = 0; k < nopen; k++)
            if (open[k].node == i)
                ticks += open[k].ticks;
        mvz_put_uvarint(&b, PARENT(x));
        mvz_put_svarint(&b, (int64_t)(x->fn - pfn));
        mvz_put_svarint(&b, (int64_t)(x->site - psite));
        mvz_put_uvarint(&b, count_read(&x->calls));
        mvz_put_uvarint(&b, ticks_ns(conv, ticks));
        pfn = x->fn;
        psite = x->site;
    }
    mvz_put_uvarint(&b, t->unmatched);
    mvz_put_uvarint(&b, t->untracked);
    if (!b.oom)
        mvz_write_record(MVZ_REC_CALLGRAPH, &b);
    mvz_buf_free(&b);
}

/* Writes thread t's tree (nodes 1..), in records of NODES_PER_RECORD nodes. */
static void write_thread(struct cg_thread *t, int flags)
{
    struct mvz_clock_conv conv;
    pthread_mutex_lock(&mvz_agent.lock);
    mvz_clock_conv(&conv);
    pthread_mutex_unlock(&mvz_agent.lock);
    uint64_t now = ticks_now();
    uint32_t n = atomic_load_explicit(&t->nnodes, memory_order_acquire);
    /* open calls are few (the depth); a linear look per node is cheap
     * enough for shallow stacks, and deep ones are cut to 64 */
    struct open_time open[64];
    uint32_t nopen = open_calls(t, now, open, 64);
    uint32_t from = 1;
    do {
        uint32_t to = n - from > NODES_PER_RECORD ? from + NODES_PER_RECORD : n;
        write_part(t, from, to, flags, &conv, open, nopen);
        from = to;
    } while (from < n);
}

static void thread_ended(void *arg)
{
    struct cg_thread *t = arg;
    mvz_tls.internal++;
    cg_self = CG_DEAD;
    pthread_mutex_lock(&registry_lock);
    struct cg_thread **p = &registry;
    while (*p && *p != t)
        p = &(*p)->next;
    int found = *p != NULL;
    if (found) {
        *p = t->next;
        if (mvz_recording())
            write_thread(t, MVZ_CG_ENDED);
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
        write_thread(t, 0);
    pthread_mutex_unlock(&registry_lock);
    mvz_tls.internal--;
}

/* exit() from any depth: the calls open on this thread end here, so that
 * the atexit handlers that follow are entry points of their own. */
void mvz_callgraph_exit_called(void)
{
    struct cg_thread *t = cg_self;
    if (!t || t == CG_DEAD || t->busy)
        return;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t now = ticks_now();
    while (t->depth) {
        frame_close(t, &t->frames[t->depth - 1], now);
        t->depth--;
    }
    t->overflow = 0;
    hook_done(t);
}

/* In a fork child: only the forking thread goes on, and the child's trace
 * counts its calls from the fork on. */
void mvz_callgraph_after_fork_child(void)
{
    pthread_mutex_init(&registry_lock, NULL);
    struct cg_thread *self = cg_self == CG_DEAD ? NULL : cg_self, *next;
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
    for (uint32_t i = 0; i < n; i++)
        node_at(self, i)->calls = node_at(self, i)->ticks = 0;
    uint64_t now = ticks_now();
    for (uint32_t i = 0; i < self->depth; i++)
        self->frames[i].t0 = now;
}
