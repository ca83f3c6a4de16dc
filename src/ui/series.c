/*
 * series.c - the heap over time by group (series.h). The groups are
 * ranked on the model's profile, by the bytes they held at the peak; the
 * series come from a second replay that samples each group's live bytes
 * at the model's points (analysis/timeline.c), and the document is kept
 * in the model's cache, since the trace does not change.
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
    uint32_t *order;  /* key ids, most at the peak first */
    size_t n;
};

static void site_key(const struct mvz_ui_model *m, const struct mvz_site *s, enum mvz_ui_by by,
                     char *out, size_t cap)
{
    struct mvz_frame f[1];
    size_t n = mvz_symbols_stack(m->sym, s->stack, f, 1);
    const char *func = n ? f[0].function : "??";
    const char *mod = n && f[0].module ? f[0].module : "??";
    if (by == MVZ_UI_BY_MODULE)
        snprintf(out, cap, "%s", mod);
    else if (by == MVZ_UI_BY_FUNCTION)
        snprintf(out, cap, "%s [%s]", func, mvz_base_name(mod));
    else if (n && f[0].file)
        snprintf(out, cap, "%s (%s:%u) #%u", func, f[0].file, f[0].line, s->stack);
    else
        snprintf(out, cap, "%s #%u", func, s->stack);
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

static int make_groups(const struct mvz_ui_model *m, enum mvz_ui_by by, struct groups *g)
{
    const struct mvz_profile *p = &m->whole.p;
    g->key_of = calloc(p->sites_cap + 1, sizeof(*g->key_of));
    if (!g->key_of)
        return -1;
    char key[1200];
    for (size_t i = 0; i < p->sites_cap; i++) {
        const struct mvz_site *s = &p->sites[i];
        if (!s->stack || !s->at_peak_bytes)
            continue;
        site_key(m, s, by, key, sizeof(key));
        if (add_site(g, key, s->stack, s->at_peak_bytes) < 0)
            return -1;
    }
    g->order = malloc((g->keys.n + 1) * sizeof(*g->order));
    if (!g->order)
        return -1;
    for (size_t id = 1; id <= g->keys.n; id++)
        g->order[g->n++] = (uint32_t)id;
    rank_bytes = g->at_peak;
    mvz_sort(g->order, g->n, sizeof(*g->order), by_bytes);
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
                    enum mvz_ui_by by, size_t *len)
{
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0)
        return NULL;
    struct mvz_json *j = &d.j;
    mvz_json_begin_object(j);
    mvz_json_key(j, "by");
    mvz_json_string(j, mvz_ui_by_name(by));
    mvz_json_key(j, "names");
    mvz_json_begin_array(j);
    for (size_t k = 0; k < top; k++)
        put_name(j, mvz_strtab_get(&g->keys, g->order[k]), by);
    mvz_json_end_array(j);
    mvz_json_key(j, "at_peak");
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

static char *build(struct mvz_ui_model *m, enum mvz_ui_by by, size_t top, size_t *len, char *err,
                   size_t errlen)
{
    struct groups g = {0};
    if (make_groups(m, by, &g) < 0) {
        free_groups(&g);
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
    if (!p)
        snprintf(err, errlen, "out of memory");
    else if (mvz_timeline_build(&tl, p, m->path, m->tl.from_ns, m->tl.to_ns, m->tl.npoints,
                                group_of, m->whole.p.sites_cap, top, err, errlen) == 0 &&
             !(doc = render(&tl, &g, top, by, len)))
        snprintf(err, errlen, "out of memory");
    mvz_timeline_free(&tl);
    if (p)
        mvz_profile_free(p);
    free(p);
    free(group_of);
    free_groups(&g);
    return doc;
}

char *mvz_ui_series_json(struct mvz_ui_model *m, enum mvz_ui_by by, size_t top, size_t *len,
                         char *err, size_t errlen)
{
    char key[64];
    snprintf(key, sizeof(key), "series:%s:%zu", mvz_ui_by_name(by), top);
    *err = 0;
    /* one replay at a time: a second asker waits, then finds it cached */
    pthread_mutex_lock(&m->build_lock);
    char *doc = mvz_ui_cache_get(m, key, len);
    if (!doc) {
        doc = build(m, by, top, len, err, errlen);
        if (doc)
            mvz_ui_cache_put(m, key, doc, *len);
    }
    pthread_mutex_unlock(&m->build_lock);
    if (!doc && !*err)
        snprintf(err, errlen, "out of memory");
    return doc;
}
