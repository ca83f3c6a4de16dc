/*
 * heap_group.h - how the writer puts the heap events of one time unit into
 * a HEAP record when several threads made them: thread by thread, under a
 * GROUP code that keeps the facts the order decided (src/trace/heap_codec.h).
 *
 * Threads that allocate at the same instant interleave their events at
 * random, and writing that order costs about a bit per event: on two
 * threads churning a std::list, nine tenths of the trace. All the order
 * decides is where the heap peaks: the group's highest heap, with the
 * blocks live at that moment, and each site's own highest live bytes. The
 * writer knows them in the real order, writes them down, and writes the
 * events thread by thread, under two constraints: each thread's events
 * keep their order, and a release of another thread's block comes after
 * its allocation. Every number of docs/METRICS.md stays what the real
 * order gives.
 *
 * The agent's collector and the unit tests share this code; it allocates
 * nothing (a grouper is one block of memory the caller provides).
 */
#ifndef MVZ_TRACE_HEAP_GROUP_H
#define MVZ_TRACE_HEAP_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "trace/heap_codec.h"

/* Events of one group at most: a larger time unit is cut into groups. */
#define MVZ_GROUP_EVENTS 8192u
/* Threads whose order within a group is planned; a group of more threads
 * is written in the real order (still under a GROUP code). */
#define MVZ_GROUP_ORDERED_THREADS 64u
#define MVZ_GROUP_SITE_SLOTS (4u * MVZ_GROUP_EVENTS)

/* One heap event as the writer resolved it, in the order they happened.
 * Its time is the group's (they all have the same 2^16 ns unit). */
struct mvz_group_ev {
    uint64_t size;     /* an allocation's size; a release: its block's size */
    uint64_t block;    /* the block's name (mvz_heap_block); 0 for FREE_UNKNOWN */
    uint64_t old_size; /* ALLOC_REUSED: the size of the block whose name it takes */
    uint64_t where;    /* an allocation's address (for ADDRS records) */
    uint32_t tid;
    uint32_t stack;     /* an allocation's stack; a release: its block's stack */
    uint32_t old_stack; /* ALLOC_REUSED: the stack of the block whose name it takes */
    /* MVZ_HEAP_ALLOC, MVZ_HEAP_ALLOC_REUSED, MVZ_HEAP_FREE (a release of a
     * known block, written as FREE, FREE_NEXT or FREE_OTHER) or
     * MVZ_HEAP_FREE_UNKNOWN */
    uint8_t op;
    uint8_t entry;
    uint8_t late; /* merged after a later event of another thread */
};

/* A release of a block another thread allocated (which names that thread). */
static inline int mvz_group_ev_cross(const struct mvz_group_ev *e)
{
    return e->op == MVZ_HEAP_FREE && mvz_heap_block_tid(e->block) != e->tid;
}

struct mvz_group_site {
    uint32_t stack;
    uint64_t rise;
};

struct mvz_group_site_slot {
    uint32_t gen; /* the slot is in use in the group of this generation */
    uint32_t stack, tid;
    uint8_t multi, rises;
    int64_t live, max; /* against the group's start, in the real order */
};

/* A release of a block that another thread of the group allocated in it. */
struct mvz_group_dep {
    uint32_t at;    /* the release's index */
    uint16_t owner; /* the allocating thread's index */
    uint16_t early; /* the allocation is before the mark */
};

/* The plan of one group, and the memory to make it (about 1.4 MB). */
struct mvz_grouper {
    /* results of mvz_group_plan */
    uint32_t order[MVZ_GROUP_EVENTS]; /* indices of the events, as written */
    size_t n, mark;
    int coded; /* the group needs a GROUP code */
    struct mvz_group_site sites[MVZ_GROUP_EVENTS];
    size_t nsites;
    uint32_t nthreads;
    uint32_t cross;                      /* releases of another thread's block (each may name it) */
    uint32_t tids[MVZ_HEAP_MAX_THREADS]; /* the group's threads, first seen first */
    uint64_t allocs[MVZ_HEAP_MAX_THREADS]; /* serials each takes in the group */
    /* scratch */
    uint32_t events[2][MVZ_HEAP_MAX_THREADS]; /* per part and thread */
    uint64_t first[MVZ_HEAP_MAX_THREADS];     /* serial of each thread's first allocation */
    uint16_t thread_of[MVZ_GROUP_EVENTS];     /* event -> index into tids */
    struct mvz_group_dep deps[MVZ_GROUP_EVENTS];
    size_t ndeps;
    int reused; /* an ALLOC_REUSED is among the events */
    uint32_t gen;
    struct mvz_group_site_slot slot[MVZ_GROUP_SITE_SLOTS];
    uint32_t used[2 * MVZ_GROUP_EVENTS]; /* slots in use */
    size_t nused;
};

/* Plans the writing of the n events of a group (1 <= n <= MVZ_GROUP_EVENTS,
 * at most MVZ_HEAP_MAX_THREADS threads, all of one time unit), given in the
 * order they happened: the written order, the mark and the sites of its
 * GROUP code. A group of one thread is written as it is, without one, and
 * so is a group whose parts both keep the real order. Any other has a
 * GROUP code, which lists every site that more than one of its threads
 * changed with an allocation among the changes (the only sites a written
 * order can misstate), misstated or not. */
void mvz_group_plan(struct mvz_grouper *g, const struct mvz_group_ev *ev, size_t n);

/* Whether a planned group needs a GROUP code (more than one thread). */
static inline int mvz_group_coded(const struct mvz_grouper *g)
{
    return g->coded;
}

/* Writes a planned group, whose events have time ts_ns, to a record whose
 * state is st; the record must have room for the group's threads
 * (mvz_group_threads_fit). next_serial gives a thread's next allocation
 * serial as the writer knows it, after every event of the group. Returns
 * how many of the events were late. */
size_t mvz_group_write(const struct mvz_grouper *g, const struct mvz_group_ev *ev, uint64_t ts_ns,
                       struct mvz_heap_out *o, struct mvz_heap_state *st,
                       uint64_t (*next_serial)(void *ctx, uint32_t tid), void *ctx);

/* Writes one event of the current thread (the record's, see
 * mvz_heap_put_thread); owner_next as in mvz_heap_put_free. */
static inline __attribute__((always_inline)) void
mvz_group_write_one(const struct mvz_group_ev *e, uint64_t ts, struct mvz_heap_out *o,
                    struct mvz_heap_state *st, uint64_t owner_next)
{
    switch (e->op) {
    case MVZ_HEAP_ALLOC:
        mvz_heap_put_alloc(o, st, ts, e->entry, e->size, e->stack);
        if (o->where_on)
            mvz_heap_put_where(o, e->where);
        break;
    case MVZ_HEAP_ALLOC_REUSED:
        mvz_heap_put_alloc_reused(o, st, ts, e->entry, e->size, e->stack,
                                  mvz_heap_block_tid(e->block), mvz_heap_block_serial(e->block));
        if (o->where_on)
            mvz_heap_put_where(o, e->where);
        break;
    case MVZ_HEAP_FREE:
        mvz_heap_put_free(o, st, ts, e->entry, mvz_heap_block_tid(e->block),
                          mvz_heap_block_serial(e->block), owner_next);
        break;
    default:
        mvz_heap_put_head(o, st, MVZ_HEAP_FREE_UNKNOWN, e->entry, ts);
        break;
    }
}

/* Whether the record can name every thread of the group. */
int mvz_group_threads_fit(const struct mvz_grouper *g, const struct mvz_heap_state *st);

#endif
