/*
 * procs.h - the live state of every process of a run: the program, its
 * children, the programs they exec (procs.c), each a live state of its own
 * (live.h), found through memviz run's page (trace/runpage.h).
 */
#ifndef MVZ_SERVER_PROCS_H
#define MVZ_SERVER_PROCS_H

#include <stddef.h>

#include "server/live.h"

struct mvz_run_page;
struct mvz_live_procs;

/* Follows o's trace (the first process, pid first_pid) at once, and
 * every other process the page lists as it appears (no page: the first
 * alone). NULL when out of memory. */
struct mvz_live_procs *mvz_live_procs_start(const struct mvz_live_options *o,
                                            struct mvz_run_page *page, int first_pid);
/* The run has ended: the followers read their traces to the end. */
void mvz_live_procs_done(struct mvz_live_procs *ps);
/* Every process samples every period_ns from now on, and its agent reads
 * the program's instruments as often. */
void mvz_live_procs_set_period(struct mvz_live_procs *ps, uint64_t period_ns);
/* Every process's agent records one allocation every rate bytes on
 * average from now on (0: every allocation); -1 when the run has no page
 * to ask them through. */
int mvz_live_procs_set_sampling(struct mvz_live_procs *ps, uint64_t rate);
/* Every follower has read its whole trace. */
int mvz_live_procs_ended(struct mvz_live_procs *ps);
void mvz_live_procs_free(struct mvz_live_procs *ps);
/* The live state of pid (its latest image: after an exec, the new
 * program), or with pid 0 the first process's; NULL when none. */
struct mvz_live *mvz_live_procs_get(struct mvz_live_procs *ps, int pid);
/* Up to max live states, in the order they started. */
size_t mvz_live_procs_list(struct mvz_live_procs *ps, struct mvz_live **out, size_t max);
/* GET /api/v1/processes (docs/LIVE.md). 0, or -1. */
int mvz_live_procs_json(struct mvz_live_procs *ps, char **out, size_t *len);

#endif
