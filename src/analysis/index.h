/*
 * index.h - a trace's index (TRACE.mvzi, next to TRACE.mvz): what one
 * replay of the whole run learnt, kept so that the next reader of the
 * whole run needs no replay. It is a trace file itself (the same chunks
 * and records, docs/FORMAT.md "The index"): the trace's records other
 * than its heap events and snapshots' contents (process, modules, stacks,
 * threads, RSS, user records, exit), then the whole run's profile (its
 * summary, sites, threads) and its heap at evenly spaced points.
 *
 * An index is a cache: it names the trace's size and modification time
 * and the memviz build that wrote it, and a reader takes it only when all
 * three match (a trace still growing, or a newer memviz, makes it stale;
 * the reader then replays, and may write a new one).
 */
#ifndef MVZ_ANALYSIS_INDEX_H
#define MVZ_ANALYSIS_INDEX_H

#include <stddef.h>
#include <sys/stat.h>

#include "analysis/profile.h"
#include "analysis/timeline.h"

/* The index's path for trace path (path + "i"); -1 when too long. */
int mvz_index_path(const char *trace, char *out, size_t n);

/* Writes the index of trace `path` from p and tl, made by one replay of
 * its whole run (mvz_timeline_build_sites), `before` being the trace's
 * stat before that replay. Only a complete trace (END or EXEC) of this
 * format, unchanged since `before`, is indexed. Written beside it under
 * another name, then renamed: a reader never sees half of one. 0, or -1
 * with a reason in err (the directory not writable, say: the trace is
 * still usable without). */
int mvz_index_write(const char *path, const struct stat *before, const struct mvz_profile *p,
                    const struct mvz_timeline *tl, char *err, size_t errlen);

/* Loads the index of trace `path` into p (its trace's metadata, and the
 * profile of the whole run, as mvz_profile_load leaves them; p->trace.path
 * is path) and tl. 1 when loaded; 0 when there is none or it is stale (p
 * and tl left empty); -1 with a reason in err when it is damaged. */
int mvz_index_load(const char *path, struct mvz_profile *p, struct mvz_timeline *tl, char *err,
                   size_t errlen);

#endif
