/*
 * timeline.c - samples the heap at evenly spaced times during a replay.
 *
 * The end of the run is not known before the replay, so the window's end is
 * taken from a first, cheap pass over the trace's metadata when it is open
 * (to_ns = UINT64_MAX): the duration. Points are filled as events cross
 * their times; a point's values are those before the first event after it.
 */
#include "analysis/timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/sort.h"

static void drop_changes(struct mvz_timeline *tl)
{
    free(tl->changes);
    tl->changes = NULL;
    tl->nchanges = tl->changes_cap = 0;
    tl->per_site = 0;
}

/* The sites changed since the last point, at point i. */
static void note_changes(struct mvz_timeline *tl, size_t i)
{
    if (tl->nchanges + tl->ndirty > tl->changes_cap) {
        size_t cap = tl->changes_cap ? 2 * tl->changes_cap : 4096;
        while (cap < tl->nchanges + tl->ndirty)
            cap *= 2;
        struct mvz_site_change *v =
            cap > MVZ_SITE_CHANGES_MAX ? NULL : realloc(tl->changes, cap * sizeof(*v));
        if (!v) {
            drop_changes(tl);
            return;
        }
        tl->changes = v;
        tl->changes_cap = cap;
    }
    for (size_t k = 0; k < tl->ndirty; k++) {
        uint32_t st = tl->dirty[k];
        tl->changes[tl->nchanges++] = (struct mvz_site_change){(uint32_t)i, st, tl->site_live[st]};
        tl->listed[st] = 0;
    }
    tl->ndirty = 0;
}

/* Site st's live bytes change by +size or -size. */
static void site_change(struct mvz_timeline *tl, uint32_t st, uint64_t size, int alloc)
{
    if (st >= tl->sites_cap) {
        size_t cap = tl->sites_cap ? 2 * tl->sites_cap : 4096;
        while (cap <= st)
            cap *= 2;
        uint64_t *live = realloc(tl->site_live, cap * sizeof(*live));
        if (live)
            tl->site_live = live;
        uint32_t *dirty = live ? realloc(tl->dirty, cap * sizeof(*dirty)) : NULL;
        if (dirty)
            tl->dirty = dirty;
        uint8_t *listed = dirty ? realloc(tl->listed, cap) : NULL;
        if (!listed) {
            drop_changes(tl);
            return;
        }
        tl->listed = listed;
        memset(live + tl->sites_cap, 0, (cap - tl->sites_cap) * sizeof(*live));
        memset(listed + tl->sites_cap, 0, cap - tl->sites_cap);
        tl->sites_cap = cap;
    }
    uint64_t before = tl->site_live[st];
    tl->site_live[st] = alloc ? before + size : before - size;
    if (!tl->listed[st]) {
        tl->listed[st] = 1;
        tl->dirty[tl->ndirty++] = st;
    }
}

/* Fills every point whose time is before ts with the state before ts:
 * heap bytes live and tl->live per group. */
static void fill_until(struct mvz_timeline *tl, uint64_t heap, uint64_t ts)
{
    while (tl->next < tl->npoints && tl->t[tl->next] < ts) {
        size_t i = tl->next++;
        if (tl->per_site && tl->ndirty)
            note_changes(tl, i);
        tl->heap[i] = heap;
        tl->heap_max[i] = tl->cur_max > heap ? tl->cur_max : heap;
        if (tl->nseries)
            memcpy(&tl->series[i * tl->nseries], tl->live, tl->nseries * sizeof(*tl->live));
        tl->cur_max = heap;
    }
}

static void observe(void *ctx, const struct mvz_profile *p, const struct mvz_event *e,
                    uint32_t stack, uint64_t size)
{
    struct mvz_timeline *tl = ctx;
    int alloc = e->op == MVZ_OP_ALLOC;
    fill_until(tl, alloc ? p->sum.live_bytes - size : p->sum.live_bytes + size, e->ts);
    if (stack < tl->ngroup_of && tl->group_of[stack]) {
        uint64_t *live = &tl->live[tl->group_of[stack] - 1];
        *live = alloc ? *live + size : *live - size;
    }
    if (tl->per_site && size && stack) /* stack 0 is no site */
        site_change(tl, stack, size, alloc);
    if (p->in_window && !(e->flags & MVZ_EV_TRANSIENT) && p->sum.live_bytes > tl->cur_max)
        tl->cur_max = p->sum.live_bytes;
}

/* RSS records are decoded ahead of the events buffered around them, so
 * samples are kept and placed on the points by their own times at the end. */
static void observe_rss(void *ctx, uint64_t ts, uint64_t rss)
{
    struct mvz_timeline *tl = ctx;
    if (tl->nrss == tl->rss_cap) {
        size_t cap = tl->rss_cap ? tl->rss_cap * 2 : 256;
        struct mvz_rss_sample *v = realloc(tl->rss_samples, cap * sizeof(*v));
        if (!v)
            return; /* out of memory: this sample is dropped */
        tl->rss_samples = v;
        tl->rss_cap = cap;
    }
    tl->rss_samples[tl->nrss].ts = ts;
    tl->rss_samples[tl->nrss++].rss = rss;
}

static int by_ts(const void *a, const void *b)
{
    const struct mvz_rss_sample *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void place_rss(struct mvz_timeline *tl)
{
    mvz_sort(tl->rss_samples, tl->nrss, sizeof(*tl->rss_samples), by_ts);
    size_t k = 0;
    uint64_t cur = 0;
    for (size_t i = 0; i < tl->npoints; i++) {
        while (k < tl->nrss && tl->rss_samples[k].ts <= tl->t[i])
            cur = tl->rss_samples[k++].rss;
        tl->rss[i] = cur;
    }
}

static int alloc_points(struct mvz_timeline *tl)
{
    size_t n = tl->npoints;
    tl->t = calloc(n, sizeof(uint64_t));
    tl->heap = calloc(n, sizeof(uint64_t));
    tl->heap_max = calloc(n, sizeof(uint64_t));
    tl->rss = calloc(n, sizeof(uint64_t));
    tl->series = calloc(n * (tl->nseries ? tl->nseries : 1), sizeof(uint64_t));
    tl->live = calloc(tl->nseries ? tl->nseries : 1, sizeof(uint64_t));
    return tl->t && tl->heap && tl->heap_max && tl->rss && tl->series && tl->live ? 0 : -1;
}

/* The end of the run: from the trace's last chunks when it is complete,
 * else from a replay without any event handling (a third of a report's
 * time). */
static int run_end(const char *path, uint64_t *end, char *err, size_t errlen)
{
    if (mvz_trace_end_ns(path, end))
        return 0;
    struct mvz_trace t;
    struct mvz_replay_ops ops = {0};
    memset(&t, 0, sizeof(t));
    if (mvz_replay(path, &t, &ops, NULL, err, errlen) < 0)
        return -1;
    *end = t.end_ts > t.last_ts ? t.end_ts : t.last_ts;
    if (t.exit_ts > *end)
        *end = t.exit_ts;
    mvz_trace_free(&t);
    return 0;
}

static int build(struct mvz_timeline *tl, struct mvz_profile *p, const char *path, uint64_t from_ns,
                 uint64_t to_ns, size_t npoints, const uint32_t *group_of, size_t ngroup_of,
                 size_t nseries, int per_site, char *err, size_t errlen)
{
    memset(tl, 0, sizeof(*tl));
    tl->per_site = per_site;
    if (to_ns == UINT64_MAX && run_end(path, &to_ns, err, errlen) < 0)
        return -1;
    if (to_ns < from_ns)
        to_ns = from_ns;
    tl->from_ns = from_ns;
    tl->to_ns = to_ns;
    tl->npoints = npoints ? npoints : 1;
    tl->nseries = nseries;
    tl->group_of = group_of;
    tl->ngroup_of = ngroup_of;
    tl->step_ns = (to_ns - from_ns) / tl->npoints;
    if (alloc_points(tl) < 0) {
        snprintf(err, errlen, "out of memory for %zu timeline points", tl->npoints);
        mvz_timeline_free(tl);
        return -1;
    }
    for (size_t i = 0; i < tl->npoints; i++)
        tl->t[i] = i + 1 == tl->npoints ? to_ns : from_ns + (i + 1) * tl->step_ns;
    struct mvz_profile_options opt = {.from_ns = from_ns,
                                      .to_ns = to_ns,
                                      .observe = observe,
                                      .observe_rss = observe_rss,
                                      .ctx = tl};
    if (mvz_profile_load_window(p, path, &opt, err, errlen) < 0) {
        mvz_timeline_free(tl);
        return -1;
    }
    fill_until(tl, p->sum.live_bytes, UINT64_MAX);
    place_rss(tl);
    free(tl->site_live);
    free(tl->dirty);
    free(tl->listed);
    tl->site_live = NULL;
    tl->dirty = NULL;
    tl->listed = NULL;
    return 0;
}

int mvz_timeline_build(struct mvz_timeline *tl, struct mvz_profile *p, const char *path,
                       uint64_t from_ns, uint64_t to_ns, size_t npoints, const uint32_t *group_of,
                       size_t ngroup_of, size_t nseries, char *err, size_t errlen)
{
    return build(tl, p, path, from_ns, to_ns, npoints, group_of, ngroup_of, nseries, 0, err,
                 errlen);
}

int mvz_timeline_build_sites(struct mvz_timeline *tl, struct mvz_profile *p, const char *path,
                             size_t npoints, char *err, size_t errlen)
{
    return build(tl, p, path, 0, UINT64_MAX, npoints, NULL, 0, 0, 1, err, errlen);
}

void mvz_timeline_free(struct mvz_timeline *tl)
{
    free(tl->changes);
    free(tl->site_live);
    free(tl->dirty);
    free(tl->listed);
    free(tl->t);
    free(tl->heap);
    free(tl->heap_max);
    free(tl->rss);
    free(tl->series);
    free(tl->live);
    free(tl->rss_samples);
    memset(tl, 0, sizeof(*tl));
}
