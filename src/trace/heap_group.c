/*
 * heap_group.c - plans and writes the GROUPs of HEAP records: the events of
 * one time unit of several threads, thread by thread, with the heap's
 * highest points of the real order (see heap_group.h).
 *
 * A plan cuts the group at its mark, the first event after which the heap
 * stood at the group's highest in the real order. Both parts are written
 * thread by thread, so the state after the first part is that real state,
 * whatever the order inside the parts. Within a part the threads go in the
 * order of their first event (the second part starting with the thread the
 * first ended with), except that a thread releasing a block another thread
 * allocated in the part goes after that thread; when that is circular, or
 * a part holds an allocation that took over a live block's name, or the
 * group has more than MVZ_GROUP_ORDERED_THREADS threads, the part keeps the
 * real order.
 *
 * A group written thread by thread always has its GROUP code, listing
 * every site it could misstate (list_sites).
 *
 * The writer runs this on every event of a multi-threaded program, often
 * on the program's own threads (when their buffers fill up), so a plan is
 * a few passes: one over the real order (threads, heap, sites, the
 * releases that order the threads), one to place the events, and the
 * writing.
 */
#include "trace/heap_group.h"

#include <string.h>

/* Index of tid among the group's threads, or g->nthreads. */
static uint32_t thread_index(const struct mvz_grouper *g, uint32_t tid)
{
    uint32_t i = 0;
    while (i < g->nthreads && g->tids[i] != tid)
        i++;
    return i;
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

/* ---- sites: a table of the group's stacks, stamped by generation ---- */

static uint32_t site_slot(struct mvz_grouper *g, uint32_t stack)
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
    return j;
}

/* The site of the latest events, whose slot's counts stay here (in
 * registers) while its run of events lasts: most events continue one. */
struct site_run {
    struct mvz_group_site_slot *s; /* NULL before the first */
    uint32_t stack, tid;
    uint8_t multi, rises;
    int64_t live, max;
};

static inline void run_store(struct site_run *r)
{
    if (!r->s)
        return;
    r->s->tid = r->tid;
    r->s->multi = r->multi;
    r->s->rises = r->rises;
    r->s->live = r->live;
    r->s->max = r->max;
}

static inline void site_change(struct mvz_grouper *g, struct site_run *r, uint32_t stack,
                               uint32_t tid, int64_t change)
{
    if (!r->s || r->stack != stack) {
        run_store(r);
        struct mvz_group_site_slot *s = &g->slot[site_slot(g, stack)];
        *r = (struct site_run){s, stack, s->tid, s->multi, s->rises, s->live, s->max};
    }
    if (r->tid == UINT32_MAX)
        r->tid = tid;
    r->multi |= r->tid != tid;
    r->rises |= change > 0;
    r->live += change;
    if (r->live > r->max)
        r->max = r->live;
}

static void new_generation(struct mvz_grouper *g)
{
    if (++g->gen == 0) { /* wrapped: old stamps could match again */
        memset(g->slot, 0, sizeof(g->slot));
        g->gen = 1;
    }
    g->nused = 0;
}

/* The sites an event changes. */
static inline void note_sites(struct mvz_grouper *g, struct site_run *r,
                              const struct mvz_group_ev *e)
{
    if (e->op == MVZ_HEAP_FREE_UNKNOWN)
        return;
    if (e->op == MVZ_HEAP_ALLOC_REUSED) {
        site_change(g, r, e->old_stack, e->tid, -(int64_t)e->old_size);
        site_change(g, r, e->stack, e->tid, (int64_t)e->size);
    } else {
        site_change(g, r, e->stack, e->tid, heap_change(e));
    }
}

/* ---- the pass over the real order ---- */

static uint32_t add_thread(struct mvz_grouper *g, uint32_t tid)
{
    uint32_t t = thread_index(g, tid);
    if (t == g->nthreads) {
        g->tids[t] = tid;
        g->allocs[t] = 0;
        g->first[t] = UINT64_MAX;
        g->events[0][t] = g->events[1][t] = 0;
        g->nthreads++;
    }
    return t;
}

/* A release of another thread's block: it orders the threads when that
 * thread allocated the block in this group. */
static void note_dependency(struct mvz_grouper *g, const struct mvz_group_ev *e, size_t i)
{
    uint32_t owner = thread_index(g, mvz_heap_block_tid(e->block));
    if (owner == g->nthreads || g->first[owner] > mvz_heap_block_serial(e->block))
        return;
    g->deps[g->ndeps++] = (struct mvz_group_dep){(uint32_t)i, (uint16_t)owner, 0};
}

/* Threads, heap, mark, sites and dependencies, in the real order; events
 * per thread of both parts counted (part 1 after the fact). */
static void scan(struct mvz_grouper *g, const struct mvz_group_ev *ev, size_t n)
{
    int64_t live = 0, max = 0;
    size_t mark = 0;
    uint32_t t = 0, cross = 0;
    int reused = 0;
    struct site_run run = {0};
    g->nthreads = 0;
    g->ndeps = 0;
    new_generation(g);
    for (size_t i = 0; i < n; i++) {
        const struct mvz_group_ev *e = &ev[i];
        if (i == 0 || e->tid != g->tids[t])
            t = add_thread(g, e->tid);
        g->thread_of[i] = (uint16_t)t;
        g->events[1][t]++;
        if (e->op == MVZ_HEAP_ALLOC) {
            if (g->first[t] == UINT64_MAX)
                g->first[t] = mvz_heap_block_serial(e->block);
            g->allocs[t]++;
        } else if (mvz_group_ev_cross(e)) {
            cross++;
            note_dependency(g, e, i);
        }
        reused |= e->op == MVZ_HEAP_ALLOC_REUSED;
        note_sites(g, &run, e);
        live += heap_change(e);
        if (live > max) {
            max = live;
            mark = i + 1;
        }
    }
    run_store(&run);
    g->mark = mark;
    g->cross = cross;
    g->reused = reused;
}

/* Events per thread of each part, and which dependencies hold within one. */
static void split_parts(struct mvz_grouper *g, const struct mvz_group_ev *ev)
{
    uint64_t early_allocs[MVZ_HEAP_MAX_THREADS];
    memset(early_allocs, 0, g->nthreads * sizeof(*early_allocs));
    for (size_t i = 0; i < g->mark; i++) {
        uint32_t t = g->thread_of[i];
        g->events[0][t]++;
        g->events[1][t]--;
        early_allocs[t] += ev[i].op == MVZ_HEAP_ALLOC;
    }
    for (size_t k = 0; k < g->ndeps; k++) {
        struct mvz_group_dep *d = &g->deps[k];
        uint64_t nth = mvz_heap_block_serial(ev[d->at].block) - g->first[d->owner];
        d->early = nth < early_allocs[d->owner];
    }
}

/* ---- the written order ---- */

/* The threads of part p in the order they are written: first seen first,
 * `first` first when it can, each after the threads whose blocks it
 * releases. 0 when the part must keep the real order. */
static unsigned part_sequence(const struct mvz_grouper *g, int p, uint32_t first, uint32_t *seq)
{
    if (g->reused || g->nthreads > MVZ_GROUP_ORDERED_THREADS)
        return 0;
    uint64_t pred[MVZ_GROUP_ORDERED_THREADS] = {0}, present = 0, done = 0;
    for (uint32_t t = 0; t < g->nthreads; t++)
        present |= (uint64_t)(g->events[p][t] != 0) << t;
    for (size_t k = 0; k < g->ndeps; k++) {
        const struct mvz_group_dep *d = &g->deps[k];
        int at_early = d->at < g->mark;
        if (at_early == (p == 0) && d->early == at_early)
            pred[g->thread_of[d->at]] |= 1ull << d->owner;
    }
    unsigned n = 0;
    while (done != present) {
        uint64_t ready = present & ~done, pick = 0;
        for (uint64_t r = ready; r && !pick; r &= r - 1) {
            uint32_t t = (uint32_t)__builtin_ctzll(r);
            if ((pred[t] & present & ~done) == 0)
                pick = 1ull << t;
        }
        if (first < g->nthreads && (ready >> first & 1) && !(pred[first] & present & ~done))
            pick = 1ull << first;
        if (!pick)
            return 0; /* circular */
        done |= pick;
        seq[n++] = (uint32_t)__builtin_ctzll(pick);
        first = UINT32_MAX;
    }
    return n;
}

/* Places the events: each part thread by thread, or in the real order.
 * Returns whether a part is thread by thread (the group needs its code). */
static int place(struct mvz_grouper *g, size_t n)
{
    uint32_t seq[MVZ_GROUP_ORDERED_THREADS], at[2][MVZ_GROUP_ORDERED_THREADS];
    int grouped[2];
    size_t base = 0;
    uint32_t last = UINT32_MAX;
    for (int p = 0; p < 2; p++) {
        unsigned k = part_sequence(g, p, last, seq);
        grouped[p] = k > 0;
        for (unsigned s = 0; s < k; s++) {
            at[p][seq[s]] = (uint32_t)base;
            base += g->events[p][seq[s]];
            last = seq[s];
        }
        if (!grouped[p]) {
            base = p == 0 ? g->mark : n;
            last = p == 0 && g->mark ? g->thread_of[g->mark - 1] : UINT32_MAX;
        }
    }
    for (int p = 0; p < 2; p++) {
        size_t from = p ? g->mark : 0, to = p ? n : g->mark;
        if (!grouped[p]) {
            for (size_t i = from; i < to; i++)
                g->order[i] = (uint32_t)i; /* the real order */
            continue;
        }
        uint32_t *a = at[p];
        for (size_t i = from; i < to; i++)
            g->order[a[g->thread_of[i]]++] = (uint32_t)i;
    }
    return grouped[0] || grouped[1];
}

/* The sites a grouping can misstate: those that more than one thread's
 * events changed, with an allocation among them. All are listed, with
 * their highest in the real order, whether or not the written order would
 * have misstated them: finding out took a pass over the written order
 * (on two threads churning a std::list, 36 of the writer's ~480
 * instructions an event) to save a few bytes a group. */
static void list_sites(struct mvz_grouper *g)
{
    g->nsites = 0;
    for (size_t k = 0; k < g->nused; k++) {
        const struct mvz_group_site_slot *s = &g->slot[g->used[k]];
        if (s->multi && s->rises)
            g->sites[g->nsites++] = (struct mvz_group_site){s->stack, (uint64_t)s->max};
    }
}

/* A group of one thread (most groups, and all of a program with one) is
 * written as it is: its allocations counted, nothing else. */
static int one_thread(struct mvz_grouper *g, const struct mvz_group_ev *ev, size_t n)
{
    uint64_t allocs = 0;
    uint32_t cross = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].tid != ev[0].tid)
            return 0;
        allocs += ev[i].op == MVZ_HEAP_ALLOC;
        cross += mvz_group_ev_cross(&ev[i]);
    }
    g->cross = cross;
    g->nthreads = 1;
    g->tids[0] = ev[0].tid;
    g->allocs[0] = allocs;
    g->mark = 0;
    return 1;
}

void mvz_group_plan(struct mvz_grouper *g, const struct mvz_group_ev *ev, size_t n)
{
    g->n = n;
    g->coded = 0;
    g->nsites = 0;
    if (one_thread(g, ev, n))
        return;
    scan(g, ev, n);
    split_parts(g, ev);
    g->coded = place(g, n);
    list_sites(g);
}

int mvz_group_threads_fit(const struct mvz_grouper *g, const struct mvz_heap_state *st)
{
    uint32_t unnamed = 0;
    for (uint32_t t = 0; t < g->nthreads; t++)
        unnamed += mvz_heap_thread_index(st, g->tids[t]) == st->nthreads;
    return st->nthreads + unnamed <= MVZ_HEAP_MAX_THREADS;
}

/* A release of another thread's block names that thread in the record
 * while there is room (FREE_OTHER), which could leave none for a thread of
 * the group written later: when the record could run out, the group's
 * threads are named first. */
static void name_threads_first(const struct mvz_grouper *g, struct mvz_heap_out *o,
                               struct mvz_heap_state *st, const uint64_t *next)
{
    if (st->nthreads + g->nthreads + g->cross <= MVZ_HEAP_MAX_THREADS)
        return;
    for (uint32_t t = 0; t < g->nthreads; t++)
        if (mvz_heap_thread_index(st, g->tids[t]) == st->nthreads)
            mvz_heap_put_thread(o, st, g->tids[t], next[t]);
}

size_t mvz_group_write(const struct mvz_grouper *g, const struct mvz_group_ev *ev, uint64_t ts_ns,
                       struct mvz_heap_out *o, struct mvz_heap_state *st,
                       uint64_t (*next_serial)(void *ctx, uint32_t tid), void *ctx)
{
    /* each thread's next serial at this point of the written order */
    uint64_t next[MVZ_HEAP_MAX_THREADS];
    for (uint32_t t = 0; t < g->nthreads; t++)
        next[t] = next_serial(ctx, g->tids[t]) - g->allocs[t];
    name_threads_first(g, o, st, next);
    size_t late = 0;
    int alone = g->nthreads == 1; /* in the real order; thread_of unset */
    for (size_t k = 0; k < g->n; k++) {
        uint32_t i = alone ? (uint32_t)k : g->order[k], t = alone ? 0 : g->thread_of[i];
        const struct mvz_group_ev *e = &ev[i];
        mvz_heap_put_thread(o, st, e->tid, next[t]);
        if (k == 0 && g->coded) {
            mvz_heap_put_group(o, st, ts_ns, g->n, g->mark, g->nsites);
            for (size_t s = 0; s < g->nsites; s++)
                mvz_heap_put_group_site(o, g->sites[s].stack, g->sites[s].rise);
        }
        uint64_t owner_next = 0;
        if (mvz_group_ev_cross(e)) {
            uint32_t owner = thread_index(g, mvz_heap_block_tid(e->block));
            owner_next =
                owner < g->nthreads ? next[owner] : next_serial(ctx, mvz_heap_block_tid(e->block));
        }
        mvz_group_write_one(e, ts_ns, o, st, owner_next);
        next[t] += e->op == MVZ_HEAP_ALLOC;
        late += e->late;
    }
    return late;
}
