/*
 * replay.h - reads a trace once, in order: metadata (process, modules,
 * stacks, threads, children, exit) is collected into struct mvz_trace, and
 * heap events are handed to a callback in the order of their keys, which is
 * the order they happened in (see src/agent/agent.h).
 *
 * Since format 3 the agent writes events in order (HEAP records), naming
 * blocks by allocating thread and serial rather than by address; since 5
 * it may write the events of one time unit of several threads thread by
 * thread, with the peaks of their real order (MVZ_EV_TRANSIENT,
 * MVZ_OP_SITE_RISE). The
 * replay hands each event on as it decodes it, with the block's name in
 * `addr` (a number that identifies the block while it lives, which is all
 * an address did). Older traces (EVENTS records) come per thread in
 * batches, so their file order differs from key order; a min-heap restores
 * it. WATERMARK records say below which key such a trace is complete, and
 * events below it leave the heap, so its size is bounded by what one writer
 * flush holds, not by the length of the run. Memory otherwise grows with
 * distinct stacks only.
 */
#ifndef MVZ_ANALYSIS_REPLAY_H
#define MVZ_ANALYSIS_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/sampling.h"
#include "analysis/user.h"
#include "trace/reader.h"

struct mvz_event {
    uint64_t seq, ts, addr, size; /* addr: the block's address or name (above) */
    uint32_t stack, tid;
    uint8_t op, entry;
    uint8_t flags; /* MVZ_EV_* */
};

/* The event is inside a GROUP (format 5, docs/FORMAT.md): the events of
 * several threads in one time unit, written thread by thread. The heap
 * state right after it may never have existed: it is no candidate for a
 * peak. Each thread's events keep their order all the same. */
#define MVZ_EV_TRANSIENT 1
/* The event after which a GROUP's heap stood at the group's highest (its
 * mark): the one state of the group that can be a peak, even after a
 * release. */
#define MVZ_EV_MARK 2
/* addr is a block's name (HEAP records), not an address: mvz_heap_block(). */
#define MVZ_EV_NAMED 4
/* Not a heap event: before a GROUP's events, the news that site `stack`
 * rose `size` bytes above its live bytes at the group's start during the
 * group's next `addr` heap events, in an order the written one does not
 * show. */
#define MVZ_OP_SITE_RISE 3

struct mvz_stack {
    uint32_t id, gen, depth;
    uint64_t *frames; /* return addresses, innermost first */
    /* a --callgraph stack: the mark of its calling context (trace/callgraph.h),
     * kept past frames[depth - 1] and out of depth; else 0 */
    uint64_t context;
};

struct mvz_module {
    uint32_t id, gen_loaded, gen_unloaded; /* gen_unloaded 0 = still mapped at the end */
    uint64_t bias, lo, hi;
    char *path;
    uint8_t build_id[64];
    size_t build_id_len;
};

struct mvz_child {
    int pid, how;
    char *trace;
};

struct mvz_thread {
    int tid;
    char *name;
};

struct mvz_symbols_warm;

/* A NOTICE record: the agent's word on something it could not see. */
struct mvz_notice {
    int code; /* enum mvz_notice_code, or a newer one */
    char *text;
};

struct mvz_trace {
    const char *path;
    /* PROCESS */
    int have_process;
    int pid, ppid, depth, child_how;
    uint64_t start_realtime_ns, page_size;
    char *parent_trace, *exe, *cwd;
    char **argv;
    size_t argc;
    uint64_t argc_total; /* arguments the command had; more than argc when cut */
    /* modules, stacks (indexed by id), threads, children */
    struct mvz_module *modules;
    size_t nmodules, modules_cap;
    struct mvz_stack *stacks;
    size_t stacks_cap, nstacks;
    struct mvz_frames_chunk *frames_chunks; /* where the stacks' frames live */
    struct mvz_thread *threads;
    size_t nthreads;
    struct mvz_child *children;
    size_t nchildren;
    struct mvz_notice *notices; /* NOTICE records, in file order */
    size_t nnotices;
    struct mvz_user user;         /* the instrumentation API's records (user.h) */
    uint64_t sample_bytes;        /* sampled (--sample, or a client's switch): the latest rate, the
                                     mean bytes between recorded allocations; 0: every one, all run */
    struct mvz_sampling sampling; /* the rate in force as the replay goes, and its switches */
    /* how it ended */
    int have_exit, exit_how, exit_status, exit_signal, exit_from_cli;
    int have_agent_exit, agent_exit_how;
    uint64_t exit_ts;
    int have_end, have_exec;
    uint64_t addrs_records;       /* ADDRS records (--addresses): where blocks are */
    struct mvz_cg_raw *callgraph; /* CALLGRAPH records (--callgraph; callgraph.h) */
    char *exec_path;
    uint64_t end_ts, last_ts;
    uint64_t peak_rss, lost_events;
    /* the agent's own mapped bytes (format 5.2; 0 before): at the highest
     * RSS sample, and the most they came to (END) */
    uint64_t peak_rss_sampled, agent_at_peak_rss, agent_mapped_max;
    /* heap snapshots (analysis/snapshot.h reads them): how many began, and
     * the id of the last complete one taken at exit (0: none) */
    uint32_t snapshots, exit_snapshot, pending_exit_snapshot;
    /* RSS samples are streamed to the callback too; the max is kept here */
    uint64_t rss_samples;
    /* damage and inconsistencies */
    uint64_t bad_chunks, bad_records, skipped_bytes, bad_events;
    uint64_t missing_seqs;     /* events missing from a thread's batches */
    uint64_t unordered_events; /* delivered out of key order (no watermark covered them) */
    int truncated;
    /* the first generation's symbolizer, warmed during the replay (symbols.h) */
    struct mvz_symbols_warm *warm;
};

struct mvz_replay_ops {
    void (*event)(void *ctx, const struct mvz_event *ev);
    /* optional: an event that will be delivered soon (a hint to prefetch) */
    void (*prefetch)(void *ctx, const struct mvz_event *ev);
    void (*rss)(void *ctx, uint64_t ts, uint64_t rss);
    /* the caller will symbolize stacks: prepare the first modules' symbols
     * while replaying (symbols.h) */
    int warm_symbols;
    /* optional: a block marked with a tag (memviz_tag_mark; tags.h): its
     * name, its size, when */
    void (*tag)(void *ctx, uint32_t tag, uint64_t name, uint64_t size, uint64_t ts);
    /* optional: follow a trace still being written. Called (from the
     * replay's reading thread) when every written record has been read:
     * wait, then return 1 to read on, or 0 to end the replay there. */
    int (*wait_more)(void *ctx);
    /* optional: where block `name` is (a trace recorded with --addresses,
     * format 5.8), right before the event that allocates it */
    void (*where)(void *ctx, uint64_t name, uint64_t addr);
    /* optional: a record of a kind the replay does not read itself */
    void (*other)(void *ctx, const struct mvz_record *rec);
};

/* Replays the whole trace. Returns 0, or -1 with a one-line reason in err
 * when the file cannot be read as a trace at all. */
int mvz_replay(const char *path, struct mvz_trace *t, const struct mvz_replay_ops *ops, void *ctx,
               char *err, size_t errlen);
void mvz_trace_free(struct mvz_trace *t);
/* Frees the stack table (and the warmed symbolizer): what a merged profile
 * keeps of its first trace, whose stack ids no longer apply. */
void mvz_trace_drop_stacks(struct mvz_trace *t);
/* How much of t->peak_rss was memviz's own memory, at most: the agent's
 * mapped bytes at the highest RSS sample, or the most they came to when
 * the peak is the exit's ru_maxrss, above every sample. 0 when unknown. */
uint64_t mvz_trace_agent_rss(const struct mvz_trace *t);
const struct mvz_stack *mvz_trace_stack(const struct mvz_trace *t, uint32_t id);
/* The end of a complete trace's run (the latest of its END, EXEC, EXIT and
 * RSS times), from its last chunks alone: 1, or 0 when they do not say
 * (a trace cut short, or damaged: replay it whole to know). */
int mvz_trace_end_ns(const char *path, uint64_t *end);
const char *mvz_exit_how_name(int how);
/* The name the trace gives thread tid, or NULL. */
const char *mvz_trace_thread_name(const struct mvz_trace *t, uint32_t tid);

#endif
