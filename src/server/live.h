/*
 * live.h - the live state of a running program, for `memviz run --live`:
 * a thread follows the trace as the agent writes it (analysis/profile.h in
 * follow mode) and keeps, every period, a sample of the heap (live bytes
 * and blocks, RSS, allocation calls, releases, bytes allocated) in a ring
 * as long as the recording window, and the top sites by live bytes with
 * their symbolized stacks. Any thread reads it: the HTTP server renders
 * it as Prometheus metrics, JSON (docs/LIVE.md) and pprof.
 *
 * The program never waits for this: the agent writes its trace as always,
 * and a reader that falls behind only reads the trace later.
 */
#ifndef MVZ_SERVER_LIVE_H
#define MVZ_SERVER_LIVE_H

#include <stddef.h>
#include <stdint.h>

struct mvz_live_options {
    const char *trace_path; /* the first process's trace, maybe not yet created */
    uint64_t period_ns;     /* a sample every period (100 ms) */
    uint64_t window_ns;     /* samples kept (10 minutes) */
    size_t top;             /* sites kept, by live bytes */
};

struct mvz_live;

/* Starts following; NULL when out of memory. */
struct mvz_live *mvz_live_start(const struct mvz_live_options *o);
/* The program has ended: the follower reads the trace to its end, then
 * stops. */
void mvz_live_program_done(struct mvz_live *l);
/* Samples every period_ns from the next one on (a client asked); the
 * ring keeps the window at that period. */
void mvz_live_set_period(struct mvz_live *l, uint64_t period_ns);
/* Waits for the follower and frees everything. */
void mvz_live_free(struct mvz_live *l);

/* Renderings, malloc'd (free them); 0, or -1 when out of memory. */
int mvz_live_metrics(struct mvz_live *l, char **out, size_t *len);
/* The metrics of several processes, each family once. */
int mvz_live_metrics_all(struct mvz_live **v, size_t n, char **out, size_t *len);
int mvz_live_state_json(struct mvz_live *l, char **out, size_t *len);
/* The update that sample `seq` made (docs/LIVE.md): 1 and the JSON line,
 * 0 when the sample is not taken yet, -2 when it has left the window
 * (send the state again), -1 when out of memory. */
int mvz_live_update_json(struct mvz_live *l, uint64_t seq, char **out, size_t *len);
/* Samples taken so far (the next one's seq). */
uint64_t mvz_live_samples(struct mvz_live *l);
/* Waits up to timeout_ms for sample seq to be taken; whether it was. */
int mvz_live_wait_sample(struct mvz_live *l, uint64_t seq, int timeout_ms);
/* Whether the follower has read the whole trace of an ended program. */
int mvz_live_ended(struct mvz_live *l);
/* The heap now as a gzipped pprof profile (inuse_* are the live blocks);
 * asks the follower and waits up to timeout_ms. 0, or -1. */
int mvz_live_pprof(struct mvz_live *l, char **out, size_t *len, int timeout_ms);

#endif
