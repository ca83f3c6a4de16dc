/*
 * profile.h - the aggregation behind `memviz report`: replays a trace and
 * computes, per call stack (site) and in total, the numbers defined in
 * docs/METRICS.md: allocation calls, bytes, the peak and who held it, leaks
 * and temporary allocations.
 *
 * Memory is proportional to the blocks live at any one time plus the
 * distinct stacks, whatever the number of events.
 */
#ifndef MVZ_ANALYSIS_PROFILE_H
#define MVZ_ANALYSIS_PROFILE_H

#include <stdint.h>

#include "analysis/replay.h"
#include "trace/format.h"

struct mvz_site {
    uint32_t stack;
    uint64_t allocations, allocated_bytes;
    uint64_t live_bytes, live_blocks;
    uint64_t peak_bytes;    /* this site's own maximum live bytes */
    uint64_t at_peak_bytes; /* live bytes at the moment of the global peak */
    uint64_t leaked_bytes, leaked_blocks;
    uint64_t temporary;
    uint64_t entries[MVZ_E_COUNT]; /* allocations per entry point */
    uint64_t snap_epoch;           /* peak epoch at_peak_bytes belongs to */
};

struct mvz_profile_thread {
    uint32_t tid;
    uint64_t allocations, allocated_bytes, frees, temporary;
    uint64_t last_alloc_addr; /* for temporaries: this thread's latest allocation */
};

struct mvz_summary {
    uint64_t allocations, frees, allocated_bytes;
    uint64_t peak_bytes, peak_time_ns, peak_seq;
    uint64_t leaked_bytes, leaked_blocks, temporary;
    uint64_t unmatched_frees;  /* releases of blocks the trace never saw allocated */
    uint64_t reused_addresses; /* allocations at an address still live: damage */
    uint64_t mismatched_frees; /* e.g. new[] released by free or delete */
    uint64_t live_bytes;       /* running total during replay */
    uint64_t duration_ns;
};

struct mvz_profile {
    struct mvz_trace trace;
    struct mvz_summary sum;
    struct mvz_site *sites; /* indexed by stack id; .stack == 0 means unused */
    size_t sites_cap;
    struct mvz_profile_thread *threads;
    size_t nthreads, last_thread;
    /* live blocks: open addressing on address */
    struct mvz_block *blocks;
    size_t blocks_cap, blocks_used;
    uint64_t peak_epoch;
};

/* Replays path and fills p. Returns 0, or -1 with a one-line reason in err. */
int mvz_profile_load(struct mvz_profile *p, const char *path, char *err, size_t errlen);
void mvz_profile_free(struct mvz_profile *p);

#endif
