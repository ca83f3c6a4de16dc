/*
 * profile_json.h - parts of a profile written as JSON the same way for
 * every reader of them (`memviz report --json` and the web UI's queries),
 * so that the two show the same numbers under the same names.
 */
#ifndef MVZ_ANALYSIS_PROFILE_JSON_H
#define MVZ_ANALYSIS_PROFILE_JSON_H

#include "analysis/profile.h"
#include "util/json.h"

/* The summary's numbers, into the object open in j: allocations, frees,
 * allocated_bytes, peak_bytes, peak_time_ns, peak_rss_bytes,
 * peak_rss_agent_bytes, leaked_bytes, leaked_blocks, temporary,
 * duration_ns, threads, unmatched_frees, mismatched_frees
 * (docs/METRICS.md). */
void mvz_profile_json_summary(struct mvz_json *j, const struct mvz_profile *p);
/* key: the allocations by size class (power of two), the empty ones
 * left out: min, max, allocations, bytes. */
void mvz_profile_json_sizes(struct mvz_json *j, const char *key, const struct mvz_summary *s);
/* key: per allocating thread: tid, name, allocations, allocated_bytes,
 * frees, temporary, at_peak_bytes, leaked_bytes, leaked_blocks. */
void mvz_profile_json_threads(struct mvz_json *j, const char *key, const struct mvz_profile *p);

#endif
