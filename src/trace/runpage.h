/*
 * runpage.h - the shared memory `memviz run` gives the agents of its
 * process tree: one entry per traced process image, where the agent keeps
 * the numbers of its closing summary up to date as it writes its trace.
 *
 * Why: when the program ends, memviz run prints those numbers and names
 * the final image's trace without reading any trace again (a replay cost a
 * quarter of the run on a program that ended with millions of live blocks,
 * and memory in proportion). The collector (src/agent/collector.c) sees
 * every heap event in the order the trace has them, so its counts are the
 * ones `memviz report` computes from the trace (docs/METRICS.md).
 *
 * The page is a memfd made by memviz run, inherited by the program as
 * descriptor MEMVIZ_RUN_FD (left open for descendants that exec; the agent
 * maps it); MEMVIZ_RUN_PAGE, memviz run's own /proc/PID/fd/N, finds it
 * again when the program closed it. An image claims an entry with one
 * atomic increment.
 *
 * Invariants: an entry's fields are written by its own image's writer only;
 * `children` is only ever incremented, atomically, by child images. An
 * entry whose state is MVZ_RUN_ENDED holds the exact final numbers of its
 * trace; any other state means the reader must compute them from the
 * trace. memviz run reads entries once the program has ended, when no
 * writer is left (a reader while the program runs will need a seqlock).
 */
#ifndef MVZ_TRACE_RUNPAGE_H
#define MVZ_TRACE_RUNPAGE_H

#include <stdint.h>

#define MVZ_RUN_MAGIC 0x3147504e55525a4dull /* "MZRUNPG1" */
#define MVZ_RUN_VERSION 4u
#define MVZ_RUN_IMAGES 4096u
#define MVZ_RUN_PATH 4096u

enum mvz_run_state {
    MVZ_RUN_FREE = 0,    /* not claimed */
    MVZ_RUN_TRACING = 1, /* the image is running, or died without ending its trace */
    MVZ_RUN_ENDED = 2,   /* the trace ended cleanly; the numbers are final and exact */
    MVZ_RUN_INEXACT = 3, /* events could not be recorded: the trace says what it has */
    MVZ_RUN_EXECED = 4,  /* the image called exec: the numbers are final as of the call
                            (TRACING again should the exec fail) */
};

/* What the closing summary prints, as docs/METRICS.md defines it. */
struct mvz_run_counts {
    uint64_t allocations, frees, allocated_bytes;
    uint64_t live_bytes, live_blocks; /* leaked, once the image ended */
    uint64_t peak_bytes, peak_time_ns;
    uint64_t temporary;
    uint64_t peak_rss;    /* samples, and ru_maxrss at exit and at the end */
    uint64_t duration_ns; /* the END record's time */
    uint64_t agent_rss;   /* of peak_rss, at most this was the agent's own mappings */
};

struct mvz_run_image {
    uint32_t state; /* enum mvz_run_state */
    int32_t pid;
    int32_t parent;    /* the entry of the image that started this one, or -1 */
    uint32_t how;      /* enum mvz_child_how (0: the first image) */
    uint32_t children; /* CHILD records appended to this image's trace */
    struct mvz_run_counts n;
    char trace[MVZ_RUN_PATH]; /* absolute path of the image's trace */
    /* `memviz snapshot PID NAME`: the command writes snap_name, then
     * increments snap_req; the agent takes the snapshot and sets snap_done
     * to the request it served, and snap_pause_ns to its pause. */
    uint32_t snap_req, snap_done;
    uint64_t snap_pause_ns;
    char snap_name[64];
    uint32_t sample_done; /* the sample_gen served */
    uint32_t sample_pad;
    uint64_t sample_now; /* the rate in force since */
};

struct mvz_run_page {
    uint64_t magic;
    uint32_t version;
    uint32_t nimages; /* entries after the header */
    uint32_t claimed; /* entries handed out (may exceed nimages: none left) */
    uint32_t pad;
    /* How often the agents read the program's instruments (ns; 0: every
     * 100 ms): set by memviz run --live when a client changes the period. */
    uint64_t period_ns;
    /* A client's switch of the mode (memviz run --live, POST
     * /api/v1/mode): memviz run writes sample_req (the mean bytes between
     * recorded allocations; 0: every one), then increments sample_gen;
     * each agent switches and notes it in its entry. */
    uint64_t sample_req;
    uint32_t sample_gen;
    uint32_t pad2;
    struct mvz_run_image img[];
};

static inline uint64_t mvz_run_page_size(uint32_t nimages)
{
    return sizeof(struct mvz_run_page) + (uint64_t)nimages * sizeof(struct mvz_run_image);
}

#endif
