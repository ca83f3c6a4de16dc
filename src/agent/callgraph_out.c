/*
 * callgraph_out.c - what the call graph gives out: allocation stacks made
 * from the shadow stack (without unwinding) and the threads' trees
 * written into the trace (CALLGRAPH records, trace/callgraph.h).
 */
#include <pthread.h>
#include <string.h>

#include "agent/callgraph.h"
#include "trace/callgraph.h"

#define NODES_PER_RECORD 65536 /* a record well inside a chunk */

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

/* Writes the real return addresses of t's taken-over frames back (real
 * 1), or the trampoline's again (real 0). */
static void taken_slots(struct cg_thread *t, int real)
{
    for (uint32_t d = 0, left = t->taken; left && d < t->depth; d++)
        if (t->frames[d].kind == CG_TAKEN) {
            *(uintptr_t *)t->frames[d].sp = real ? t->frames[d].ret : (uintptr_t)mvz_cg_return;
            left--;
        }
}

/* --callgraph-filter: few functions are patched in, so the shadow stack
 * leaves most callers out: the stack is unwound (the real return
 * addresses put back for the walk), with the context's mark outermost. */
static int unwound_stack(struct cg_thread *t, struct mvz_ring *r, uint8_t *kind,
                         const void *hook_frame, uint64_t mark, uint32_t *id)
{
    int n = 0, shared = 0, same = 0;
    uint64_t hash = 0;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    taken_slots(t, 1);
    const uintptr_t *frames =
        mvz_unwind_fast(hook_frame, mvz_agent.depth - 1, &n, &hash, &shared, &same);
    if (frames && n > 0) {
        t->walk[0] = (uintptr_t)mark;
        memcpy(t->walk + 1, frames, (size_t)n * sizeof(*frames));
    }
    taken_slots(t, 0);
    mvz_cg_hook_end(t);
    if (!frames || n <= 0)
        return 0;
    *id = mvz_stack_of_frames(r, kind, t->walk, n + 1);
    return 1;
}

int mvz_callgraph_stack(struct mvz_ring *r, uint8_t *kind, const void *hook_frame, uint32_t *id)
{
    struct cg_thread *t = mvz_cg_self;
    if (!t || t == CG_DEAD || t->busy || !t->depth || t->frames[t->depth - 1].node == UNTRACKED)
        return 0;
    if (mvz_cg_partial)
        return unwound_stack(t, r, kind, hook_frame,
                             mvz_cg_mark(mvz_cg_node(t, t->frames[t->depth - 1].node)->path), id);
    uintptr_t ra = program_return_address(hook_frame);
    const struct cg_frame *top = &t->frames[t->depth - 1];
    struct cg_node *x = mvz_cg_node(t, top->node);
    uint32_t ep = mvz_stacks_epoch();
    if (x->alloc_ra == ra && x->alloc_h == top->h && x->alloc_epoch == ep && ra) {
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
        const struct cg_frame *f = &t->frames[i];
        if (i > first && f->foreign && t->frames[i - 1].node != UNTRACKED)
            t->walk[n++] = mvz_cg_node(t, t->frames[i - 1].node)->fn + 1;
        if (f->site != prev) /* an inlined call repeats its container's site */
            t->walk[n++] = f->site;
        prev = f->site;
    }
    if (ra && !mvz_cg_same_module(x->fn, ra))
        t->walk[n++] = x->fn + 1;
    if (ra)
        t->walk[n++] = ra;
    *id = mvz_stack_of_frames(r, kind, t->walk, (int)n);
    if (*kind == MVZ_SK_ID) {
        x->alloc_ra = ra;
        x->alloc_h = top->h;
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
        if (f.weight && f.node != UNTRACKED && now > f.t0)
            extra[n++] = (struct open_time){f.node, (now - f.t0) * f.weight};
    }
    return n;
}

static uint64_t ticks_ns(const struct mvz_clock_conv *c, uint64_t ticks)
{
    return (uint64_t)((unsigned __int128)ticks * c->mult >> 32);
}

/* Each node's other call sites, as chains: head[node] and next[site]
 * hold a site's index + 1 (0 ends the chain). */
struct site_lists {
    uint32_t *head, *next;
    size_t head_bytes, next_bytes;
};

static int site_lists_make(struct site_lists *l, struct cg_thread *t, uint32_t nodes)
{
    uint32_t k = atomic_load_explicit(&t->nsites, memory_order_acquire);
    l->head_bytes = (size_t)nodes * sizeof(uint32_t);
    l->next_bytes = ((size_t)k + 1) * sizeof(uint32_t);
    l->head = mvz_map_zeroed(l->head_bytes);
    l->next = l->head ? mvz_map_zeroed(l->next_bytes) : NULL;
    if (!l->next)
        return -1;
    for (uint32_t i = k; i-- > 0;) { /* pushed from the last: chains in the order seen */
        const struct cg_site *e = mvz_cg_site(t, i);
        if (e->node < nodes) {
            l->next[i] = l->head[e->node];
            l->head[e->node] = i + 1;
        }
    }
    return 0;
}

static void site_lists_free(struct site_lists *l)
{
    if (l->head)
        mvz_unmap(l->head, l->head_bytes);
    if (l->next)
        mvz_unmap(l->next, l->next_bytes);
}

static void put_other_sites(struct mvz_buf *b, struct cg_thread *t, const struct site_lists *l,
                            uint32_t node, uintptr_t first)
{
    uint64_t k = 0;
    for (uint32_t i = l->head[node]; i; i = l->next[i - 1])
        k++;
    mvz_put_uvarint(b, k);
    for (uint32_t i = l->head[node]; i; i = l->next[i - 1]) {
        const struct cg_site *e = mvz_cg_site(t, i - 1);
        mvz_put_svarint(b, (int64_t)(e->site - first));
        mvz_put_uvarint(b, mvz_cg_count_read(&e->calls));
    }
}

/* Writes nodes [from, to) of t as one record. */
static void write_part(struct cg_thread *t, uint32_t from, uint32_t to, int flags,
                       const struct mvz_clock_conv *conv, const struct open_time *open,
                       uint32_t nopen, const struct site_lists *sites)
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
        const struct cg_node *x = mvz_cg_node(t, i);
        uint64_t ticks = mvz_cg_count_read(&x->ticks);
        for (uint32_t k = 0; k < nopen; k++)
            if (open[k].node == i)
                ticks += open[k].ticks;
        mvz_put_uvarint(&b, PARENT(x));
        mvz_put_svarint(&b, (int64_t)(x->fn - pfn));
        mvz_put_svarint(&b, (int64_t)(x->site - psite));
        mvz_put_uvarint(&b, mvz_cg_count_read(&x->calls));
        mvz_put_uvarint(&b, ticks_ns(conv, ticks));
        put_other_sites(&b, t, sites, i, x->site);
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
void mvz_cg_write_thread(struct cg_thread *t, int flags)
{
    struct mvz_clock_conv conv;
    pthread_mutex_lock(&mvz_agent.lock);
    mvz_clock_conv(&conv);
    pthread_mutex_unlock(&mvz_agent.lock);
    uint64_t now = mvz_cg_ticks();
    uint32_t n = atomic_load_explicit(&t->nnodes, memory_order_acquire);
    /* open calls are few (the depth); a linear look per node is cheap
     * enough for shallow stacks, and deep ones are cut to 64 */
    struct open_time open[64];
    uint32_t nopen = open_calls(t, now, open, 64);
    struct site_lists sites = {0};
    if (site_lists_make(&sites, t, n) == 0) {
        uint32_t from = 1;
        do {
            uint32_t to = n - from > NODES_PER_RECORD ? from + NODES_PER_RECORD : n;
            write_part(t, from, to, flags, &conv, open, nopen, &sites);
            from = to;
        } while (from < n);
    }
    site_lists_free(&sites);
}
