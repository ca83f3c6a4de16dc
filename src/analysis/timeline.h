/*
 * timeline.h - the heap over time: a replay of a window of the run sampled
 * at evenly spaced points, with the RSS the agent sampled and the live
 * bytes of chosen groups of stacks (a site, or all the sites of a function).
 * Feeds `memviz timeline` and the exports that draw time (massif, chrome).
 */
#ifndef MVZ_ANALYSIS_TIMELINE_H
#define MVZ_ANALYSIS_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/profile.h"

struct mvz_rss_sample {
    uint64_t ts, rss;
};

/* Point i covers the interval (t[i-1], t[i]] with t[i] = from + (i+1) * step:
 * heap is the live heap at t[i], heap_max the highest it reached in the
 * interval, rss the latest RSS sample at or before t[i] (0 before the first
 * sample), series[i * nseries + k] the live bytes of group k at t[i]. */
/* A site's live bytes at a point, where they differ from the point before
 * (0 before the first). */
struct mvz_site_change {
    uint32_t point, stack;
    uint64_t live;
};

struct mvz_timeline {
    uint64_t from_ns, to_ns, step_ns;
    size_t npoints, nseries;
    uint64_t *t, *heap, *heap_max, *rss, *series;
    /* every site's live bytes at every point, as changes in point order
     * (mvz_timeline_build_sites), or NULL: more than MVZ_SITE_CHANGES_MAX */
    struct mvz_site_change *changes;
    size_t nchanges;
    /* private */
    const uint32_t *group_of; /* stack id -> group + 1, 0 = none */
    size_t ngroup_of;
    uint64_t *live; /* current live bytes per group */
    struct mvz_rss_sample *rss_samples;
    size_t nrss, rss_cap;
    uint64_t cur_max;
    size_t next;         /* first point not yet filled */
    int per_site;        /* keeping changes */
    size_t changes_cap;  /* of changes */
    uint64_t *site_live; /* by stack id */
    uint32_t *dirty;     /* stack ids changed since the last point */
    uint8_t *listed;     /* by stack id: in dirty */
    size_t ndirty, sites_cap;
};

/* Beyond this many changes (16 bytes each), a timeline keeps none: a
 * program of 10,000 sites all changing at every one of 800 points. */
#define MVZ_SITE_CHANGES_MAX (4u << 20)

/*
 * Replays `path` over [from_ns, to_ns] (to_ns = UINT64_MAX: to the end of
 * the run) into npoints points. group_of[stack] (length ngroups_of) maps a
 * stack id to 1 + its series index (0 = in no series); nseries series.
 * The profile of the same window is left in p for the caller (free it with
 * mvz_profile_free). Returns 0, or -1 with a one-line reason in err.
 */
int mvz_timeline_build(struct mvz_timeline *tl, struct mvz_profile *p, const char *path,
                       uint64_t from_ns, uint64_t to_ns, size_t npoints, const uint32_t *group_of,
                       size_t ngroup_of, size_t nseries, char *err, size_t errlen);
/* The same over the whole run, keeping every site's live bytes at every
 * point (tl->changes). */
int mvz_timeline_build_sites(struct mvz_timeline *tl, struct mvz_profile *p, const char *path,
                             size_t npoints, char *err, size_t errlen);
void mvz_timeline_free(struct mvz_timeline *tl);

#endif
