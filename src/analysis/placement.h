/*
 * placement.h - where the heap's blocks were, over time: a replay of a
 * trace recorded with `memviz run --addresses` (ADDRS records, format
 * 5.8) that keeps the live blocks with their addresses, and hands on each
 * allocation and release with its address, and the whole live set at
 * chosen moments. What the heap map at any moment and the heat map are
 * drawn from (src/ui/places.c).
 *
 * Memory grows with the live blocks at any one time, not with the run.
 */
#ifndef MVZ_ANALYSIS_PLACEMENT_H
#define MVZ_ANALYSIS_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

/* A block as the trace knows it. addr is 0 when the trace did not say
 * where it is (recorded without --addresses, or its ADDRS record lost). */
struct mvz_placed {
    uint64_t name, addr, size, born; /* born: when it was allocated, ns */
    uint32_t stack, tid;
};

/* The live blocks, in no order. */
struct mvz_live_set {
    struct mvz_placed *v;
    size_t n, cap;
    uint64_t *slot; /* open addressing by name: index + 1 into v, 0 empty */
    size_t nslots;
};

struct mvz_place_ops {
    /* optional: a block allocated, or released (at time ts) */
    void (*alloc)(void *ctx, const struct mvz_placed *b);
    void (*release)(void *ctx, const struct mvz_placed *b, uint64_t ts);
    /* optional: the live set at each of nmoments times (ascending): called
     * once each, with the blocks allocated at or before it and not
     * released by then */
    const uint64_t *moments;
    size_t nmoments;
    void (*moment)(void *ctx, size_t k, const struct mvz_live_set *live);
};

struct mvz_place_info {
    uint64_t end_ns;      /* the time of the last event or record */
    uint64_t placed;      /* allocations with an address */
    uint64_t unplaced;    /* allocations without one */
    uint64_t lost_blocks; /* live blocks the table could not hold (out of memory) */
};

/* Replays path. 0, or -1 with a one-line reason in err. */
int mvz_place_replay(const char *path, const struct mvz_place_ops *ops, void *ctx,
                     struct mvz_place_info *info, char *err, size_t errlen);

/* The blocks live at time t, sorted by address (those without an address
 * left out): *out (malloc'd) and *n. 0, or -1 with a reason in err. */
int mvz_place_at(const char *path, uint64_t t, struct mvz_placed **out, size_t *n,
                 struct mvz_place_info *info, char *err, size_t errlen);

#endif
