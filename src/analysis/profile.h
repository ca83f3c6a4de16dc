/*
 * profile.h - the aggregation behind `memviz report`: replays a trace and
 * computes, per call stack (site) and in total, the numbers defined in
 * docs/METRICS.md: allocation calls, bytes, the peak and who held it, leaks
 * and temporary allocations.
 *
 * Memory is proportional to the blocks live at any one time plus the
 * distinct stacks, plus the threads' windows of recent blocks (bounded:
 * see blocks.c), whatever the number of events.
 */
#ifndef MVZ_ANALYSIS_PROFILE_H
#define MVZ_ANALYSIS_PROFILE_H

#include <stdint.h>

#include "analysis/blocks.h"
#include "analysis/tags.h"
#include "analysis/replay.h"
#include "trace/format.h"

/* The costs a site (or a frame, a function, a thread) can be ranked by; see
 * docs/METRICS.md. */
enum mvz_cost {
    MVZ_COST_PEAK,        /* live bytes at the moment of the peak */
    MVZ_COST_LEAKED,      /* bytes allocated in the window, still live at its end */
    MVZ_COST_ALLOCATIONS, /* allocation calls */
    MVZ_COST_BYTES,       /* bytes allocated */
    MVZ_COST_TEMPORARY,   /* temporary allocations */
    MVZ_COST_COUNT
};

struct mvz_profile;

/* Two cache lines, the first holding what every allocation or release
 * touches (temporaries and the at-peak snapshot are in the second): the
 * table is indexed by stack id, and its random accesses are much of the
 * replay's time on programs with many stacks. */
struct mvz_site {
    uint32_t stack;
    /* 1 + the entry point (MVZ_E_*) of the site's allocations, 0 before
     * the window's first: one call instruction calls one function, so a
     * site nearly always has one. When another entry point shows up,
     * `mixed` is 1 + the index of the site's per-entry-point counts in
     * mvz_profile.mixed (see mvz_site_entry_allocations). */
    uint8_t entry1;
    uint32_t mixed;
    uint64_t live_bytes, live_blocks;
    uint64_t snap_epoch; /* peak epoch at_peak_bytes belongs to */
    uint64_t allocations, allocated_bytes;
    uint64_t peak_bytes; /* this site's own maximum live bytes */
    /* second line */
    uint64_t at_peak_bytes; /* live bytes at the moment of the global peak */
    uint64_t at_peak_blocks;
    uint64_t temporary;
    uint64_t leaked_bytes, leaked_blocks;
    /* a GROUP's order hides this site's peaks until the profile has
     * counted this many heap events (MVZ_OP_SITE_RISE) */
    uint64_t hidden_until;
    uint64_t unused_[2]; /* to 128 bytes: the table is page aligned */
};
_Static_assert(sizeof(struct mvz_site) == 128, "a site is two cache lines");

/* Allocations per entry point of a site that used more than one. */
struct mvz_site_entries {
    uint64_t n[MVZ_E_ALLOC_COUNT];
};

/* Per allocating thread: live bytes are charged to the thread that
 * allocated the block, whichever thread releases it. */
struct mvz_profile_thread {
    uint32_t tid;
    uint64_t allocations, allocated_bytes, frees, temporary;
    uint64_t live_bytes, at_peak_bytes, leaked_bytes, leaked_blocks;
    uint64_t snap_epoch;
    uint64_t last_alloc_addr; /* for temporaries: this thread's latest allocation */
};

/* Allocation sizes by power of two: bucket 0 holds size 0, bucket k >= 1
 * sizes in [2^(k-1), 2^k). */
#define MVZ_SIZE_BUCKETS 65
struct mvz_size_bucket {
    uint64_t allocations, bytes;
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
    /* a sampled trace (trace/sampling.h): the variances of the estimates
     * of bytes allocated and of bytes live (at the end: leaked), for their
     * errors; 0 in a full trace */
    double var_allocated, var_live;
    struct mvz_size_bucket sizes[MVZ_SIZE_BUCKETS];
};

/* A time window of the run, in ns since the process started. Events before
 * `from` build the live heap but are not counted; events after `to` are
 * ignored, so "leaked" means still live at `to`. */
struct mvz_profile_options {
    uint64_t from_ns, to_ns; /* to_ns = UINT64_MAX: to the end */
    /* optional: called after every event up to `to` has been accounted
     * (events before `from` too, with p->in_window still 0);
     * for a release, stack and size are those of the block released (size 0
     * when the block was never seen). In a sampled trace size is the bytes
     * the event stands for (trace/sampling.h). */
    void (*observe)(void *ctx, const struct mvz_profile *p, const struct mvz_event *e,
                    uint32_t stack, uint64_t size);
    void (*observe_rss)(void *ctx, uint64_t ts, uint64_t rss);
    void *ctx;
    int symbolize; /* stacks will be symbolized: prepare while replaying */
    /* optional: follow a trace still being written (replay.h): called when
     * every written record has been accounted; wait, then 1 to read on or
     * 0 to finish the profile there */
    int (*wait_more)(void *ctx, struct mvz_profile *p);
};

struct mvz_profile {
    struct mvz_trace trace;
    struct mvz_profile_options opt;
    int in_window; /* an event at or after opt.from_ns has been seen */
    struct mvz_summary sum;
    struct mvz_site *sites; /* indexed by stack id; .stack == 0 means unused */
    size_t sites_cap;
    struct mvz_site_entries *mixed; /* see mvz_site.mixed */
    size_t nmixed, mixed_cap;
    struct mvz_profile_thread *threads;
    size_t nthreads, last_thread;
    struct mvz_blocks blocks; /* the live ones */
    uint64_t peak_epoch;
    uint64_t heap_events; /* allocations and releases replayed so far */
    struct mvz_tags tags; /* the blocks the program marked (tags.h) */
};

/* Replays path and fills p. Returns 0, or -1 with a one-line reason in err. */
int mvz_profile_load(struct mvz_profile *p, const char *path, char *err, size_t errlen);
/* The same, for a window of the run (opt may be NULL: the whole run). */
int mvz_profile_load_window(struct mvz_profile *p, const char *path,
                            const struct mvz_profile_options *opt, char *err, size_t errlen);
uint64_t mvz_site_cost(const struct mvz_site *s, enum mvz_cost c);
/* Adds s's counts to sum (a group of sites); peak_bytes does not add up and
 * is left alone. */
void mvz_site_add(struct mvz_site *sum, const struct mvz_site *s);
/* The site of stack id `stack` in p, made (zeroed, with .stack set) when
 * needed; NULL when out of memory. For building merged profiles. */
struct mvz_site *mvz_profile_site(struct mvz_profile *p, uint32_t stack);
/* Adds src (a site of profile sp) to s (a site of p), its allocations by
 * entry point included; s's peak_bytes becomes the larger of the two.
 * -1 when out of memory (the split by entry point is then lost). */
int mvz_profile_add_site(struct mvz_profile *p, struct mvz_site *s, const struct mvz_profile *sp,
                         const struct mvz_site *src);
/* Allocation calls of site s (a site of p, not a sum) through entry point e. */
uint64_t mvz_site_entry_allocations(const struct mvz_profile *p, const struct mvz_site *s, int e);
/* "peak", "leaked", "allocations", "bytes", "temporary"; -1 when unknown. */
int mvz_cost_parse(const char *name);
const char *mvz_cost_name(enum mvz_cost c);
/* 1 when cost c counts bytes (peak, leaked, bytes), 0 when it counts calls. */
int mvz_cost_is_bytes(enum mvz_cost c);
/* Index into mvz_summary.sizes for an allocation of `size` bytes. */
unsigned mvz_size_bucket(uint64_t size);
void mvz_profile_free(struct mvz_profile *p);

#endif
