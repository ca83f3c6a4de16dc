/*
 * heap_group.c - plans and writes the GROUPs of HEAP records: the events of
 * one time unit of several threads, thread by thread, with the heap's
 * highest points of the real order (see heap_group.h).
 *
 * A plan cuts the group at its mark, the first event after which the heap
 * stood at the group's highest in the real order. Both parts are written
 * thread by thread, so the state after the first part is that real state,
 * whatever the order inside the parts. Within a part the threads go in the
 * order of their first event, except that a thread releasing a block
 * another thread allocated in the part goes after that thread; when that
 * is circular, or a part holds an allocation that took over a live block's
 * name, or more than MVZ_GROUP_ORDERED_THREADS threads, the part keeps the
 * real order.
 */
#include "trace/heap_group.h"

#include <string.h>

static uint32_t block_tid(uint64_t block)
{
    return (uint32_t)((block - 1) >> MVZ_HEAP_SERIAL_BITS);
}

static uint64_t block_serial(uint64_t block)
{
    return (block - 1) & ((1ull << MVZ_HEAP_SERIAL_BITS) - 1);
}

/* Index of tid among the group's threads, or g->nthreads. */
static uint32_t thread_index(const struct mvz_grouper *g, uint32_t tid)
{
    uint32_t i = 0;
    while (i < g->nthreads && g->tids[i] != tid)
        i++;
    return i;
}

static void find_threads(struct mvz_grouper *g, const struct mvz_group_ev *ev, size_t n)
{
    g->nthreads = 0;
    uint32_t last = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || ev[i].tid != g->tids[last]) {
            last = thread_index(g, ev[i].tid);
            if (last == g->nthreads) {
                g->tids[g->nthreads] = ev[i].tid;
                g->allocs[g->nthreads++] = 0;
            }
        }
        g->thread_of[i] = (uint16_t)last;
        g->allocs[last] += ev[i].op == MVZ_HEAP_ALLOC;
    }
}

/* The heap's change by an event. */
static int64_t heap_change(const struct mvz_group_ev *e)
{
    switch (e->op) {
    case MVZ_HEAP_ALLOC:
        return (int64_t)e->size;
    case MVZ_HEAP_ALLOC_REUSED:
        return (int64_t)e->size - (int64_t)e->old_size;
    case MVZ_HEAP_FREE:
        return -(int64_t)e->size;
    default:
        return 0;
    }
}

/* The first event, in the order of `order` (NULL: as given), after which
 * the heap stood highest (0: it never rose above the group's start), and
 * that height in *max. */
static size_t find_mark(const struct mvz_group_ev *ev, const uint32_t *order, size_t n,
                        int64_t *max)
{
    int64_t live = 0;
    size_t mark = 0;
    *max = 0;
    for (size_t i = 0; i < n; i++) {
        live += heap_change(&ev[order ? order[i] : i]);
        if (live > *max) {
            *max = live;
            mark = i + 1;
        }
    }
    return mark;
}

static struct mvz_group_site_slot *site_slot(struct mvz_grouper *g, uint32_t stack)
{
    uint32_t mask = MVZ_GROUP_SITE_SLOTS - 1, j = (stack * 0x9E3779B1u) >> 15 & mask;
    while (g->slot[j].gen == g->gen && g->slot[j].stack != stack)
        j = (j + 1) & mask;
    struct mvz_group_site_slot *s = &g->slot[j];
    if (s->gen != g->gen) {
        memset(s, 0, sizeof(*s));
        s->gen = g->gen;
        s->stack = stack;
        s->tid = UINT32_MAX;
        g->used[g->nused++] = j;
    }
    return s;
}

static void site_change(struct mvz_grouper *g, uint32_t stack, uint32_t tid, int64_t change)
{
    struct mvz_group_site_slot *s = site_slot(g, stack);
    if (s->tid == UINT32_MAX)
        s->tid = tid;
    s->multi |= s->tid != tid;
    s->rises |= change > 0;
    s->live += change;
    if (s->live > s->max)
        s->max = s->live;
}

/* The same change, in the written order: only the sites a grouping can
 * change are followed. */
static void site_show(struct mvz_grouper *g, uint32_t stack, int64_t change)
{
    struct mvz_group_site_slot *s = site_slot(g, stack);
    if (!s->multi || !s->rises)
        return;
    s->shown += change;
    if (s->shown > s->shown_max)
        s->shown_max = s->shown;
}

/* Follows the sites a grouping can change through the written order. */
static void show_sites(struct mvz_grouper *g, const struct mvz_group_ev *ev)
{
    for (size_t k = 0; k < g->n; k++) {
        const struct mvz_group_ev *e = &ev[g->order[k]];
        if (e->op == MVZ_HEAP_ALLOC_REUSED) {
            site_show(g, e->old_stack, -(int64_t)e->old_size);
            site_show(g, e->stack, (int64_t)e->size);
        } else if (e->op != MVZ_HEAP_FREE_UNKNOWN) {
            site_show(g, e->stack, heap_change(e));
        }
    }
}

/* The sites whose order the grouping changes: those more than one thread
 * touched, with an allocation among the changes (a site that only falls
 * cannot rise in any order). */
static void find_sites(struct mvz_grouper *g, const struct mvz_group_ev *ev, size_t n)
{
    if (++g->gen == 0) { /* wrapped: old stamps could match again */
        memset(g->slot, 0, sizeof(g->slot));
        g->gen = 1;
    }
    g->nused = 0;
    for (size_t i = 0; i < n; i++) {
        const struct mvz_group_ev *e = &ev[i];
        if (e->op == MVZ_HEAP_ALLOC_REUSED) {
            site_change(g, e->old_stack, e->tid, -(int64_t)e->old_size);
            site_change(g, e->stack, e->tid, (int64_t)e->size);
        } else if (e->op != MVZ_HEAP_FREE_UNKNOWN) {
            site_change(g, e->stack, e->tid, heap_change(e));
        }
    }
}

/* The sites whose highest the written order does not show. */
static void list_sites(struct mvz_grouper *g)
{
    g->nsites = 0;
    for (size_t k = 0; k < g->nused; k++) {
        const struct mvz_group_site_slot *s = &g->slot[g->used[k]];
        if (s->multi && s->rises && s->shown_max != s->max)
            g->sites[g->nsites++] = (struct mvz_group_site){s->stack, (uint64_t)s->max};
    }
}

/* Predecessors of each thread in part [lo, hi): the threads whose blocks,
 * allocated in the part, it releases there (as bit masks over thread
 * indices). -1 when the part must keep the real order. */
static int part_dependencies(const struct mvz_grouper *g, const struct mvz_group_ev *ev, size_t lo,
                             size_t hi, uint64_t *pred)
{
    uint64_t first[MVZ_GROUP_ORDERED_THREADS];
    for (uint32_t t = 0; t < g->nthreads; t++) {
        first[t] = UINT64_MAX;
        pred[t] = 0;
    }
    for (size_t i = lo; i < hi; i++) {
        const struct mvz_group_ev *e = &ev[i];
        uint32_t t = g->thread_of[i];
        if (e->op == MVZ_HEAP_ALLOC_REUSED)
            return -1;
        if (e->op == MVZ_HEAP_ALLOC && first[t] == UINT64_MAX)
            first[t] = block_serial(e->block);
        if (e->op != MVZ_HEAP_FREE || block_tid(e->block) == e->tid)
            continue;
        uint32_t owner = thread_index(g, block_tid(e->block));
        if (owner < g->nthreads && first[owner] <= block_serial(e->block))
            pred[t] |= 1ull << owner;
    }
    return 0;
}

/* Writes the order of part [lo, hi) at g->order + lo: thread by thread
 * when the dependencies allow, else as it happened. Thread `first` goes
 * first when it can: the thread the previous part ended with, so that the
 * cut between the parts costs no change of thread. */
static void order_part(struct mvz_grouper *g, const struct mvz_group_ev *ev, size_t lo, size_t hi,
                       uint32_t first)
{
    uint64_t pred[MVZ_GROUP_ORDERED_THREADS], done = 0, present = 0;
    uint32_t seq[MVZ_GROUP_ORDERED_THREADS], nseq = 0;
    int keep =
        g->nthreads > MVZ_GROUP_ORDERED_THREADS || part_dependencies(g, ev, lo, hi, pred) < 0;
    for (size_t i = lo; i < hi && !keep; i++)
        present |= 1ull << g->thread_of[i];
    /* threads in order of first appearance, each when its predecessors are done */
    while (!keep && done != present) {
        uint32_t pick = UINT32_MAX;
        if (first < g->nthreads && (present >> first & 1) && !(done >> first & 1) &&
            (pred[first] & present & ~done) == 0)
            pick = first;
        for (uint32_t t = 0; t < g->nthreads && pick == UINT32_MAX; t++)
            if ((present >> t & 1) && !(done >> t & 1) && (pred[t] & present & ~done) == 0)
                pick = t;
        if (pick == UINT32_MAX)
            keep = 1; /* circular */
        else {
            done |= 1ull << pick;
            seq[nseq++] = pick;
        }
    }
    size_t k = lo;
    if (keep) {
        for (size_t i = lo; i < hi; i++)
            g->order[k++] = (uint32_t)i;
        return;
    }
    for (uint32_t s = 0; s < nseq; s++)
        for (size_t i = lo; i < hi; i++)
            if (g->thread_of[i] == seq[s])
                g->order[k++] = (uint32_t)i;
}

void mvz_group_plan(struct mvz_grouper *g, const struct mvz_group_ev *ev, size_t n)
{
    g->n = n;
    g->coded = 0;
    g->mark = 0;
    g->nsites = 0;
    find_threads(g, ev, n);
    if (g->nthreads < 2) {
        for (size_t i = 0; i < n; i++)
            g->order[i] = (uint32_t)i;
        return;
    }
    int64_t max, shown_max;
    g->mark = find_mark(ev, NULL, n, &max);
    order_part(g, ev, 0, g->mark, UINT32_MAX);
    order_part(g, ev, g->mark, n, g->mark ? g->thread_of[g->order[g->mark - 1]] : UINT32_MAX);
    size_t shown_mark = find_mark(ev, g->order, n, &shown_max);
    find_sites(g, ev, n);
    show_sites(g, ev);
    list_sites(g);
    g->coded = shown_mark != g->mark || shown_max != max || g->nsites;
}

int mvz_group_threads_fit(const struct mvz_grouper *g, const struct mvz_heap_state *st)
{
    uint32_t unnamed = 0;
    for (uint32_t t = 0; t < g->nthreads; t++)
        unnamed += mvz_heap_thread_index(st, g->tids[t]) == st->nthreads;
    return st->nthreads + unnamed <= MVZ_HEAP_MAX_THREADS;
}

static void write_event(const struct mvz_group_ev *e, struct mvz_heap_out *o,
                        struct mvz_heap_state *st, uint64_t owner_next)
{
    switch (e->op) {
    case MVZ_HEAP_ALLOC:
        mvz_heap_put_alloc(o, st, e->ts, e->entry, e->size, e->stack);
        break;
    case MVZ_HEAP_ALLOC_REUSED:
        mvz_heap_put_alloc_reused(o, st, e->ts, e->entry, e->size, e->stack, block_tid(e->block),
                                  block_serial(e->block));
        break;
    case MVZ_HEAP_FREE:
        mvz_heap_put_free(o, st, e->ts, e->entry, block_tid(e->block), block_serial(e->block),
                          owner_next);
        break;
    default:
        mvz_heap_put_head(o, st, MVZ_HEAP_FREE_UNKNOWN, e->entry, e->ts);
        break;
    }
}

size_t mvz_group_write(const struct mvz_grouper *g, const struct mvz_group_ev *ev,
                       struct mvz_heap_out *o, struct mvz_heap_state *st,
                       uint64_t (*next_serial)(void *ctx, uint32_t tid), void *ctx)
{
    /* each thread's next serial at this point of the written order */
    uint64_t next[MVZ_HEAP_MAX_THREADS];
    for (uint32_t t = 0; t < g->nthreads; t++)
        next[t] = next_serial(ctx, g->tids[t]) - g->allocs[t];
    size_t late = 0;
    for (size_t k = 0; k < g->n; k++) {
        const struct mvz_group_ev *e = &ev[g->order[k]];
        uint32_t t = g->thread_of[g->order[k]];
        mvz_heap_put_thread(o, st, e->tid, next[t]);
        if (k == 0 && mvz_group_coded(g)) {
            mvz_heap_put_group(o, st, e->ts, g->n, g->mark, g->nsites);
            for (size_t s = 0; s < g->nsites; s++)
                mvz_heap_put_group_site(o, g->sites[s].stack, g->sites[s].rise);
        }
        uint64_t owner_next = 0;
        if (e->op == MVZ_HEAP_FREE) {
            uint32_t owner = thread_index(g, block_tid(e->block));
            owner_next = owner < g->nthreads ? next[owner] : next_serial(ctx, block_tid(e->block));
        }
        write_event(e, o, st, owner_next);
        next[t] += e->op == MVZ_HEAP_ALLOC;
        late += e->late;
    }
    return late;
}
