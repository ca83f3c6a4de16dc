/*
 * series.c - the heap over time by group (series.h). The groups are
 * ranked by the bytes they held at the peak (the model's profile), at a
 * moment (their live bytes at the last of the model's points at or before
 * it), or on average (over the model's points); the series are the top
 * groups' live bytes at the model's points. All come from the model's
 * every site's live bytes at every point (analysis/timeline.h), summed by
 * group without a replay; a model without them (a program of so many
 * sites that they would not fit) replays instead: the window up to the
 * moment, 100 points for the average, the top groups at the points. The
 * document is kept in the model's cache, since the trace does not change. A drill-down (module,
 * then function) keeps only the sites allocating there; the rest of the
 * heap is "other".
 */
#include "ui/series.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/doc.h"
#include "util/fmt.h"
#include "util/json.h"
#include "util/sort.h"
#include "util/strtab.h"

static const char *const BY_NAMES[] = {"site", "function", "module"};
static const char *const RANK_NAMES[] = {"peak", "average", "at"};
#define AVERAGE_POINTS 100
#define AVERAGE_MAX_GROUPS 20000 /* beyond: by the peak (100 points each) */

int mvz_ui_rank_parse(const char *name)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, RANK_NAMES[i]))
            return i;
    return -1;
}

int mvz_ui_by_parse(const char *name)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, BY_NAMES[i]))
            return i;
    return -1;
}

const char *mvz_ui_by_name(enum mvz_ui_by by)
{
    return BY_NAMES[by];
}

/* The groups: key -> bytes at the peak; each present site's group. */
struct groups {
    struct mvz_strtab keys;
    uint64_t *at_peak; /* by key id */
    size_t cap;
    uint32_t *key_of; /* by stack id; 0: none */
    uint32_t *order;  /* key ids, the most first by the rank */
    size_t n;
};

/* The site's group key into out; 0 when the query's drill-down leaves it
 * out. */
static int site_key(const struct mvz_ui_model *m, const struct mvz_site *s,
                    const struct mvz_ui_series_query *q, char *out, size_t cap)
{
    struct mvz_frame f[1];
    size_t n = mvz_symbols_stack(m->sym, s->stack, f, 1);
    const char *func = n ? f[0].function : "??";
    const char *mod = n && f[0].module ? f[0].module : "??";
    enum mvz_ui_by by = q->by;
    if ((q->module && strcmp(q->module, mod) && strcmp(q->module, mvz_base_name(mod))) ||
        (q->function && strcmp(q->function, func)))
        return 0;
    if (by == MVZ_UI_BY_MODULE)
        snprintf(out, cap, "%s", mod);
    else if (by == MVZ_UI_BY_FUNCTION)
        snprintf(out, cap, "%s [%s]", func, mvz_base_name(mod));
    else if (n && f[0].file)
        snprintf(out, cap, "%s (%s:%u) #%u", func, f[0].file, f[0].line, s->stack);
    else
        snprintf(out, cap, "%s #%u", func, s->stack);
    return 1;
}

static int add_site(struct groups *g, const char *key, uint32_t stack, uint64_t bytes)
{
    uint32_t id = mvz_strtab_intern(&g->keys, key);
    if (!id)
        return -1;
    if (id >= g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        while (cap <= id)
            cap *= 2;
        uint64_t *a = realloc(g->at_peak, cap * sizeof(*a));
        if (!a)
            return -1;
        memset(a + g->cap, 0, (cap - g->cap) * sizeof(*a));
        g->at_peak = a;
        g->cap = cap;
    }
    g->at_peak[id] += bytes;
    g->key_of[stack] = id;
    return 0;
}

static const uint64_t *rank_bytes;
static int by_bytes(const void *a, const void *b)
{
    uint64_t x = rank_bytes[*(const uint32_t *)a], y = rank_bytes[*(const uint32_t *)b];
    if (x != y)
        return x > y ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* What a site weighs in the ranking (peak, or at): its bytes. at: the
 * profile up to the moment, or live_at: each site's live bytes then; both
 * NULL: at the peak. */
static uint64_t weight(const struct mvz_site *s, const struct mvz_profile *at,
                       const uint64_t *live_at)
{
    if (live_at)
        return live_at[s->stack];
    if (!at)
        return s->at_peak_bytes;
    return s->stack < at->sites_cap ? at->sites[s->stack].live_bytes : 0;
}

/* ---- from the model's site changes (analysis/timeline.h) ----
 * Walks them point by point, each site's live bytes in cur and each
 * group's (by g->key_of) in sum. */
struct walk {
    const struct mvz_timeline *tl;
    const uint32_t *group_of; /* stack -> group + 1 (0: none) */
    size_t ngroup_of;
    uint64_t *cur, *sum; /* by stack; by group */
    size_t next;         /* the first change not applied */
};

static int walk_open(struct walk *w, const struct mvz_ui_model *m, const uint32_t *group_of,
                     size_t ngroups)
{
    memset(w, 0, sizeof(*w));
    w->tl = &m->tl;
    w->group_of = group_of;
    w->ngroup_of = m->whole.p.sites_cap;
    w->cur = calloc(m->whole.p.sites_cap + 1, sizeof(*w->cur));
    w->sum = calloc(ngroups + 1, sizeof(*w->sum));
    return w->cur && w->sum ? 0 : -1;
}

static void walk_close(struct walk *w)
{
    free(w->cur);
    free(w->sum);
}

/* Applies point i's changes. */
static void walk_to(struct walk *w, size_t i)
{
    const struct mvz_timeline *tl = w->tl;
    for (; w->next < tl->nchanges && tl->changes[w->next].point <= i; w->next++) {
        const struct mvz_site_change *c = &tl->changes[w->next];
        if (c->stack >= w->ngroup_of)
            continue;
        uint32_t g = w->group_of[c->stack];
        if (g)
            w->sum[g - 1] += c->live - w->cur[c->stack];
        w->cur[c->stack] = c->live;
    }
}

/* Every group's average live bytes over the model's points, from its
 * site changes, into g->at_peak. */
static int average_from_changes(struct mvz_ui_model *m, struct groups *g)
{
    size_t ng = g->keys.n, n = m->tl.npoints;
    uint32_t *group_of = calloc(m->whole.p.sites_cap + 1, sizeof(*group_of));
    uint64_t *total = calloc(ng + 1, sizeof(*total));
    struct walk w;
    int rc = group_of && total && walk_open(&w, m, group_of, ng) == 0 ? 0 : -1;
    if (rc == 0) {
        memcpy(group_of, g->key_of, m->whole.p.sites_cap * sizeof(*group_of));
        for (size_t i = 0; i < n; i++) {
            walk_to(&w, i);
            for (size_t k = 0; k < ng; k++)
                total[k] += w.sum[k];
        }
        for (size_t k = 0; k < ng; k++)
            g->at_peak[k + 1] = n ? total[k] / n : 0;
    }
    if (group_of && total)
        walk_close(&w);
    free(group_of);
    free(total);
    return rc;
}

/* The top groups' live bytes at the model's points, from its site
 * changes: tl shares the model's times and heap. */
static int series_from_changes(struct mvz_ui_model *m, const uint32_t *group_of, size_t top,
                               struct mvz_timeline *tl)
{
    memset(tl, 0, sizeof(*tl));
    tl->npoints = m->tl.npoints;
    tl->nseries = top;
    tl->t = m->tl.t;
    tl->heap = m->tl.heap;
    tl->series = calloc(tl->npoints * (top ? top : 1), sizeof(uint64_t));
    struct walk w;
    if (!tl->series || walk_open(&w, m, group_of, top) < 0) {
        if (tl->series)
            walk_close(&w);
        free(tl->series);
        tl->series = NULL;
        return -1;
    }
    for (size_t i = 0; i < tl->npoints; i++) {
        walk_to(&w, i);
        memcpy(&tl->series[i * top], w.sum, top * sizeof(uint64_t));
    }
    walk_close(&w);
    return 0;
}

/* Each site's live bytes at the last point at or before t, into live
 * (by stack id). */
static void live_at_from_changes(struct mvz_ui_model *m, uint64_t t, uint64_t *live)
{
    const struct mvz_timeline *tl = &m->tl;
    for (size_t k = 0; k < tl->nchanges; k++) {
        const struct mvz_site_change *c = &tl->changes[k];
        if (tl->t[c->point] > t)
            break;
        if (c->stack < m->whole.p.sites_cap)
            live[c->stack] = c->live;
    }
}

/* Every group's average live bytes over AVERAGE_POINTS points (a replay),
 * into g->at_peak (the ranking's values). */
static int average_of(struct mvz_ui_model *m, struct groups *g, char *err, size_t errlen)
{
    if (m->tl.changes)
        return average_from_changes(m, g);
    size_t ng = g->keys.n;
    uint32_t *group_of = calloc(m->whole.p.sites_cap + 1, sizeof(*group_of));
    struct mvz_profile *p = calloc(1, sizeof(*p));
    struct mvz_timeline tl;
    memset(&tl, 0, sizeof(tl));
    int rc = -1;
    if (group_of && p) {
        for (size_t st = 0; st < m->whole.p.sites_cap; st++)
            group_of[st] = g->key_of[st]; /* key id = series + 1 */
        rc = mvz_timeline_build(&tl, p, m->path, m->tl.from_ns, m->tl.to_ns, AVERAGE_POINTS,
                                group_of, m->whole.p.sites_cap, ng, err, errlen);
        for (size_t k = 0; rc == 0 && k < ng; k++) {
            uint64_t sum = 0;
            for (size_t i = 0; i < tl.npoints; i++)
                sum += tl.series[i * tl.nseries + k];
            g->at_peak[k + 1] = tl.npoints ? sum / tl.npoints : 0;
        }
    }
    mvz_timeline_free(&tl);
    if (p)
        mvz_profile_free(p);
    free(p);
    free(group_of);
    return rc;
}

/* The groups whose name holds text (any case) move to the front, in
 * their rank's order: a search adds them to the series shown. */
static void searched_first(struct groups *g, const char *text)
{
    uint32_t *o = malloc((g->n + 1) * sizeof(*o));
    if (!o)
        return;
    size_t k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < g->n; i++) {
            int hit = strcasestr(mvz_strtab_get(&g->keys, g->order[i]), text) != NULL;
            if (hit == !pass)
                o[k++] = g->order[i];
        }
    memcpy(g->order, o, g->n * sizeof(*o));
    free(o);
}

static int make_groups(struct mvz_ui_model *m, const struct mvz_ui_series_query *q,
                       struct groups *g, char *err, size_t errlen)
{
    const struct mvz_profile *p = &m->whole.p, *at = NULL;
    uint64_t *live_at = NULL;
    if (q->rank == MVZ_UI_RANK_AT && m->tl.changes) {
        if (!(live_at = calloc(p->sites_cap + 1, sizeof(*live_at))))
            return -1;
        live_at_from_changes(m, q->at_ns, live_at);
    } else if (q->rank == MVZ_UI_RANK_AT) {
        const struct mvz_ui_view *v = mvz_ui_window(m, 0, q->at_ns, err, errlen);
        if (!v)
            return -1;
        at = &v->p;
    }
    g->key_of = calloc(p->sites_cap + 1, sizeof(*g->key_of));
    if (!g->key_of) {
        free(live_at);
        return -1;
    }
    char key[1200];
    for (size_t i = 0; i < p->sites_cap; i++) {
        const struct mvz_site *s = &p->sites[i];
        if (!s->stack || !s->allocations || !site_key(m, s, q, key, sizeof(key)))
            continue;
        if (add_site(g, key, s->stack, weight(s, at, live_at)) < 0) {
            free(live_at);
            return -1;
        }
    }
    free(live_at);
    if (q->rank == MVZ_UI_RANK_AVERAGE && g->keys.n <= AVERAGE_MAX_GROUPS && g->keys.n &&
        average_of(m, g, err, errlen) < 0)
        return -1;
    g->order = malloc((g->keys.n + 1) * sizeof(*g->order));
    if (!g->order)
        return -1;
    for (size_t id = 1; id <= g->keys.n; id++)
        g->order[g->n++] = (uint32_t)id;
    rank_bytes = g->at_peak;
    mvz_sort(g->order, g->n, sizeof(*g->order), by_bytes);
    if (q->add && *q->add)
        searched_first(g, q->add);
    return 0;
}

static void free_groups(struct groups *g)
{
    mvz_strtab_free(&g->keys);
    free(g->at_peak);
    free(g->key_of);
    free(g->order);
}

/* The site key's name for people: without the "#stack" that kept sites
 * of one line apart. */
static void put_name(struct mvz_json *j, const char *key, enum mvz_ui_by by)
{
    const char *hash = by == MVZ_UI_BY_SITE ? strrchr(key, '#') : NULL;
    if (!hash) {
        mvz_json_string(j, key);
        return;
    }
    char buf[1200];
    snprintf(buf, sizeof(buf), "%.*s", (int)(hash - key - 1), key);
    mvz_json_string(j, buf);
}

static char *render(const struct mvz_timeline *tl, const struct groups *g, size_t top,
                    const struct mvz_ui_series_query *q, size_t *len)
{
    enum mvz_ui_by by = q->by;
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0)
        return NULL;
    struct mvz_json *j = &d.j;
    mvz_json_begin_object(j);
    mvz_json_put_string(j, "by", mvz_ui_by_name(by));
    mvz_json_put_string(j, "rank", RANK_NAMES[q->rank]);
    mvz_json_put_string(j, "module", q->module);
    mvz_json_put_string(j, "function", q->function);
    mvz_json_put_string(j, "add", q->add);
    mvz_json_key(j, "names");
    mvz_json_begin_array(j);
    for (size_t k = 0; k < top; k++)
        put_name(j, mvz_strtab_get(&g->keys, g->order[k]), by);
    mvz_json_end_array(j);
    mvz_json_key(j, "ranked_by"); /* each one's bytes by the rank */
    mvz_json_begin_array(j);
    for (size_t k = 0; k < top; k++)
        mvz_json_uint(j, g->at_peak[g->order[k]]);
    mvz_json_end_array(j);
    mvz_json_key(j, "t_ns");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < tl->npoints; i++)
        mvz_json_uint(j, tl->t[i]);
    mvz_json_end_array(j);
    mvz_json_key(j, "series");
    mvz_json_begin_array(j);
    for (size_t k = 0; k < top; k++) {
        mvz_json_begin_array(j);
        for (size_t i = 0; i < tl->npoints; i++)
            mvz_json_uint(j, tl->series[i * tl->nseries + k]);
        mvz_json_end_array(j);
    }
    mvz_json_end_array(j);
    mvz_json_key(j, "other");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < tl->npoints; i++) {
        uint64_t in = 0;
        for (size_t k = 0; k < top; k++)
            in += tl->series[i * tl->nseries + k];
        mvz_json_uint(j, tl->heap[i] > in ? tl->heap[i] - in : 0);
    }
    mvz_json_end_array(j);
    mvz_json_end_object(j);
    return mvz_ui_doc_close(&d, len);
}

static char *build(struct mvz_ui_model *m, const struct mvz_ui_series_query *q, size_t *len,
                   char *err, size_t errlen)
{
    struct groups g = {0};
    size_t top = q->top;
    if (make_groups(m, q, &g, err, errlen) < 0) {
        free_groups(&g);
        if (!*err)
            snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (top > g.n)
        top = g.n;
    uint32_t *group_of = calloc(m->whole.p.sites_cap + 1, sizeof(*group_of));
    if (!group_of) {
        free_groups(&g);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    uint32_t *rank = calloc(g.keys.n + 1, sizeof(*rank)); /* key id -> series + 1 */
    for (size_t k = 0; rank && k < top; k++)
        rank[g.order[k]] = (uint32_t)k + 1;
    for (size_t s = 0; rank && s < m->whole.p.sites_cap; s++)
        group_of[s] = g.key_of[s] ? rank[g.key_of[s]] : 0;
    free(rank);
    struct mvz_timeline tl;
    memset(&tl, 0, sizeof(tl));
    struct mvz_profile *p = calloc(1, sizeof(*p));
    char *doc = NULL;
    if (!p) {
        snprintf(err, errlen, "out of memory");
    } else if (m->tl.changes) { /* no replay: the model has every site at every point */
        if (series_from_changes(m, group_of, top, &tl) < 0 || !(doc = render(&tl, &g, top, q, len)))
            snprintf(err, errlen, "out of memory");
        free(tl.series);
        memset(&tl, 0, sizeof(tl));
    } else if (mvz_timeline_build(&tl, p, m->path, m->tl.from_ns, m->tl.to_ns, m->tl.npoints,
                                  group_of, m->whole.p.sites_cap, top, err, errlen) == 0 &&
               !(doc = render(&tl, &g, top, q, len))) {
        snprintf(err, errlen, "out of memory");
    }
    mvz_timeline_free(&tl);
    if (p)
        mvz_profile_free(p);
    free(p);
    free(group_of);
    free_groups(&g);
    return doc;
}

char *mvz_ui_series_json(struct mvz_ui_model *m, const struct mvz_ui_series_query *q, size_t *len,
                         char *err, size_t errlen)
{
    char key[2600];
    snprintf(key, sizeof(key), "series:%s:%zu:%s:%llu:%.1200s:%.1200s", mvz_ui_by_name(q->by),
             q->top, RANK_NAMES[q->rank], (unsigned long long)q->at_ns, q->module ? q->module : "",
             q->function ? q->function : "");
    *err = 0;
    /* one replay at a time: a second asker waits, then finds it cached */
    pthread_mutex_lock(&m->build_lock);
    char *doc = mvz_ui_cache_get(m, key, len);
    if (!doc) {
        doc = build(m, q, len, err, errlen);
        if (doc)
            mvz_ui_cache_put(m, key, doc, *len);
    }
    pthread_mutex_unlock(&m->build_lock);
    if (!doc && !*err)
        snprintf(err, errlen, "out of memory");
    return doc;
}
