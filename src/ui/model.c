/*
 * model.c - `memviz ui`'s model of a trace (model.h): one replay
 * fills the profile and the heap over time; every site's stack is
 * symbolized once into a top-down and a bottom-up call tree carrying all
 * five costs, so that switching the flame graph's cost or direction is a
 * walk of a tree already built.
 *
 * The flame graph's document is a flat list of nodes, each naming its
 * parent's index, in depth-first order: its size grows with the nodes
 * kept, not with the depth of the stacks (a nested document as deep as a
 * 2,000-frame recursion would be as deep for the browser's parser).
 */
#include "ui/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/replay.h"
#include "analysis/index.h"
#include "analysis/profile_json.h"
#include "ui/doc.h"
#include "util/json.h"

#define TIMELINE_POINTS 800
#define MAX_FRAMES 2048

/* ---- building ---- */
/* Every site of v's profile into its call trees, with all five costs. */
static int add_sites(struct mvz_ui_view *v, struct mvz_symbols *sym)
{
    struct mvz_frame *f = malloc(MAX_FRAMES * sizeof(*f));
    if (!f || mvz_calltree_init(&v->top_down, 1) < 0 || mvz_calltree_init(&v->bottom_up, 0) < 0) {
        free(f);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < v->p.sites_cap && rc == 0; i++) {
        const struct mvz_site *s = &v->p.sites[i];
        if (!s->stack || !(s->allocations || s->at_peak_bytes || s->live_bytes))
            continue;
        uint64_t cost[MVZ_COST_COUNT];
        for (int c = 0; c < MVZ_COST_COUNT; c++)
            cost[c] = mvz_site_cost(s, (enum mvz_cost)c);
        size_t n = mvz_symbols_stack(sym, s->stack, f, MAX_FRAMES);
        if (mvz_calltree_add(&v->top_down, f, n, cost) < 0 ||
            mvz_calltree_add(&v->bottom_up, f, n, cost) < 0)
            rc = -1;
    }
    free(f);
    return rc;
}

static void view_free(struct mvz_ui_view *v)
{
    mvz_calltree_free(&v->top_down);
    mvz_calltree_free(&v->bottom_up);
    mvz_profile_free(&v->p);
}

uint64_t mvz_ui_index_from(void)
{
    const char *v = getenv("MEMVIZ_INDEX_FROM");
    char *end;
    unsigned long long n = v ? strtoull(v, &end, 10) : 0;
    return v && *v && !*end ? n : MVZ_UI_INDEX_FROM;
}

/* The whole run: from its index when there is a fresh one, else by a
 * replay, then written to an index for the next time when the trace is
 * large (MVZ_UI_INDEX_FROM) and complete (a trace still being written
 * would make it stale at once). */
static int load_whole(struct mvz_ui_model *m, const char *path, char *err, size_t errlen)
{
    char why[512];
    int got = mvz_index_load(path, &m->whole.p, &m->tl, why, sizeof(why));
    if (got > 0) {
        m->from_index = 1;
        return 0;
    }
    if (got < 0)
        fprintf(stderr, "memviz: %s; replaying the trace instead\n", why);
    struct stat before;
    int large = stat(path, &before) == 0 && (uint64_t)before.st_size >= mvz_ui_index_from();
    if (mvz_timeline_build_sites(&m->tl, &m->whole.p, path, TIMELINE_POINTS, err, errlen) < 0)
        return -1;
    const struct mvz_trace *t = &m->whole.p.trace;
    if (large && (t->have_end || t->have_exec) && /* one still written would be stale at once */
        mvz_index_write(path, &before, &m->whole.p, &m->tl, why, sizeof(why)) < 0)
        fprintf(stderr, "memviz: no index written (%s)\n", why);
    return 0;
}

/* The list, read once: from the index when the model came from it (it
 * carries the snapshots' headers and ends), else from the trace, a pass
 * over all of it. */
int mvz_ui_snap_list(struct mvz_ui_model *m, struct mvz_snap_info **out, size_t *n, char *err,
                     size_t errlen)
{
    int rc = 0;
    pthread_mutex_lock(&m->snaps_lock);
    if (!m->snaps_read) {
        char ipath[4096];
        const char *from = m->path;
        if (m->from_index && mvz_index_path(m->path, ipath, sizeof(ipath)) == 0)
            from = ipath;
        rc = mvz_snap_list(from, &m->snaps, &m->nsnaps, err, errlen);
        m->snaps_read = rc == 0;
    }
    *out = NULL;
    *n = 0;
    if (rc == 0 && m->nsnaps) {
        *out = calloc(m->nsnaps, sizeof(**out));
        for (size_t i = 0; *out && i < m->nsnaps; i++) {
            (*out)[i] = m->snaps[i];
            if (!((*out)[i].name = strdup(m->snaps[i].name))) {
                mvz_snap_infos_free(*out, i);
                *out = NULL;
            }
        }
        if (!*out) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        } else {
            *n = m->nsnaps;
        }
    }
    pthread_mutex_unlock(&m->snaps_lock);
    return rc;
}

int mvz_ui_index_write(const char *path, char *err, size_t errlen)
{
    static struct mvz_profile p; /* large: off the stack */
    struct mvz_timeline tl;
    struct stat before;
    if (stat(path, &before) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (mvz_timeline_build_sites(&tl, &p, path, TIMELINE_POINTS, err, errlen) < 0)
        return -1;
    int rc = mvz_index_write(path, &before, &p, &tl, err, errlen);
    mvz_timeline_free(&tl);
    mvz_profile_free(&p);
    return rc;
}

int mvz_ui_model_load(struct mvz_ui_model *m, const char *path, char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->build_lock, NULL);
    pthread_mutex_init(&m->cache_lock, NULL);
    pthread_mutex_init(&m->snaps_lock, NULL);
    m->whole.to_ns = UINT64_MAX;
    m->path = strdup(path);
    if (!m->path) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (load_whole(m, path, err, errlen) < 0)
        return -1;
    m->sym = mvz_symbols_new(&m->whole.p.trace);
    if (!m->sym || add_sites(&m->whole, m->sym) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void mvz_ui_model_free(struct mvz_ui_model *m)
{
    for (size_t i = 0; i < m->ncached; i++) {
        free(m->cached[i].key);
        free(m->cached[i].doc);
    }
    for (size_t i = 0; i < m->nwindows; i++) {
        view_free(m->windows[i]);
        free(m->windows[i]);
    }
    view_free(&m->whole);
    if (m->snap_loaded)
        mvz_snap_free(&m->snap);
    free(m->snap_born);
    mvz_snap_infos_free(m->snaps, m->nsnaps);
    mvz_ui_places_free(m);
    if (m->sym)
        mvz_symbols_free(m->sym);
    mvz_timeline_free(&m->tl);
    free(m->path);
    memset(m, 0, sizeof(*m));
}

/* A replay of [from_ns, to_ns]: events before from_ns build the heap but
 * are not counted, events after to_ns are not read (profile.h). */
static struct mvz_ui_view *window_new(struct mvz_ui_model *m, uint64_t from_ns, uint64_t to_ns,
                                      char *err, size_t errlen)
{
    struct mvz_ui_view *v = calloc(1, sizeof(*v));
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    v->from_ns = from_ns;
    v->to_ns = to_ns;
    struct mvz_profile_options o = {.from_ns = from_ns, .to_ns = to_ns, .symbolize = 1};
    if (mvz_profile_load_window(&v->p, m->path, &o, err, errlen) < 0) {
        view_free(v);
        free(v);
        return NULL;
    }
    if (add_sites(v, m->sym) < 0) {
        snprintf(err, errlen, "out of memory");
        view_free(v);
        free(v);
        return NULL;
    }
    return v;
}

const struct mvz_ui_view *mvz_ui_window(struct mvz_ui_model *m, uint64_t from_ns, uint64_t to_ns,
                                        char *err, size_t errlen)
{
    if (from_ns == 0 && to_ns == UINT64_MAX)
        return &m->whole;
    for (size_t i = 0; i < m->nwindows; i++)
        if (m->windows[i]->from_ns == from_ns && m->windows[i]->to_ns == to_ns)
            return m->windows[i];
    struct mvz_ui_view *v = window_new(m, from_ns, to_ns, err, errlen);
    if (!v)
        return NULL;
    if (m->nwindows == MVZ_UI_WINDOWS) { /* the oldest goes */
        view_free(m->windows[0]);
        free(m->windows[0]);
        memmove(m->windows, m->windows + 1, (MVZ_UI_WINDOWS - 1) * sizeof(m->windows[0]));
        m->nwindows--;
    }
    m->windows[m->nwindows++] = v;
    return v;
}

/* ---- the cache ---- */
static char *copy(const char *s, size_t len)
{
    char *c = malloc(len + 1);
    if (c) {
        memcpy(c, s, len);
        c[len] = 0;
    }
    return c;
}

char *mvz_ui_cache_get(struct mvz_ui_model *m, const char *key, size_t *len)
{
    char *doc = NULL;
    pthread_mutex_lock(&m->cache_lock);
    for (size_t i = 0; i < m->ncached && !doc; i++)
        if (!strcmp(m->cached[i].key, key) && (doc = copy(m->cached[i].doc, m->cached[i].len)))
            *len = m->cached[i].len;
    pthread_mutex_unlock(&m->cache_lock);
    return doc;
}

void mvz_ui_cache_put(struct mvz_ui_model *m, const char *key, const char *doc, size_t len)
{
    char *k = strdup(key), *d = copy(doc, len);
    if (!k || !d) {
        free(k);
        free(d);
        return;
    }
    pthread_mutex_lock(&m->cache_lock);
    size_t i = m->ncached < MVZ_UI_CACHE ? m->ncached++ : m->next_evict++ % MVZ_UI_CACHE;
    if (i < m->ncached && m->cached[i].key) {
        free(m->cached[i].key);
        free(m->cached[i].doc);
    }
    m->cached[i] = (struct mvz_ui_cached){k, d, len};
    pthread_mutex_unlock(&m->cache_lock);
}

/* ---- documents ---- */
static void put_process(struct mvz_json *j, const struct mvz_trace *t)
{
    mvz_json_key(j, "process");
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "pid", (uint64_t)t->pid);
    mvz_json_put_string(j, "exe", t->exe);
    mvz_json_key(j, "argv");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < t->argc; i++)
        mvz_json_string(j, t->argv[i]);
    mvz_json_end_array(j);
    if (t->have_exit && t->exit_signal) {
        mvz_json_put_uint(j, "exit_signal", (uint64_t)t->exit_signal);
    } else if (t->have_exit) {
        mvz_json_key(j, "exit_status");
        mvz_json_int(j, t->exit_status);
    }
    mvz_json_end_object(j);
}

/* The same numbers, under the same names, as `memviz report --json`'s
 * summary (docs/METRICS.md). */
static void put_summary(struct mvz_json *j, const struct mvz_ui_view *v)
{
    mvz_json_key(j, "summary");
    mvz_json_begin_object(j);
    mvz_profile_json_summary(j, &v->p);
    mvz_json_end_object(j);
    /* a sampled run's numbers are estimates (report --json's "sampling") */
    mvz_json_put_uint(j, "sample_bytes", v->p.trace.sample_bytes);
}

static void put_window(struct mvz_json *j, const struct mvz_ui_view *v)
{
    mvz_json_key(j, "window");
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "from_ns", v->from_ns);
    mvz_json_key(j, "to_ns");
    if (v->to_ns == UINT64_MAX)
        mvz_json_null(j);
    else
        mvz_json_uint(j, v->to_ns);
    mvz_json_end_object(j);
}

char *mvz_ui_summary_json(const struct mvz_ui_model *m, const struct mvz_ui_view *v, size_t *len)
{
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0)
        return NULL;
    mvz_json_begin_object(&d.j);
    mvz_json_put_string(&d.j, "trace", m->path);
    put_process(&d.j, &m->whole.p.trace);
    put_window(&d.j, v);
    put_summary(&d.j, v);
    mvz_json_key(&d.j, "from_index"); /* the whole run was read from the trace's index */
    mvz_json_bool(&d.j, m->from_index);
    mvz_json_end_object(&d.j);
    return mvz_ui_doc_close(&d, len);
}

/* The nodes a flame document keeps, depth first: tree node ids, and each
 * one's parent as an index into the same list (-1 for the root). */
struct kept {
    uint32_t *id;
    long *parent;
    size_t n, cap;
};

/* Keeps id and, depth first, its children of cost min or more; -1 when
 * more than max would be kept, -2 when out of memory. */
static int keep(struct kept *k, const struct mvz_calltree *t, uint32_t id, long parent,
                enum mvz_cost c, uint64_t min, size_t max)
{
    if (k->n == max)
        return -1;
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 256;
        uint32_t *ids = realloc(k->id, cap * sizeof(*ids));
        if (ids)
            k->id = ids;
        long *ps = ids ? realloc(k->parent, cap * sizeof(*ps)) : NULL;
        if (!ps)
            return -2;
        k->parent = ps;
        k->cap = cap;
    }
    long me = (long)k->n++;
    k->id[me] = id;
    k->parent[me] = parent;
    for (uint32_t ch = t->nodes[id].first_child; ch; ch = t->nodes[ch].next_sibling) {
        int rc = t->nodes[ch].incl[c] && t->nodes[ch].incl[c] >= min
                     ? keep(k, t, ch, me, c, min, max)
                     : 0;
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Names as the document numbers them: in order of first use. */
struct names {
    long *local; /* by name id: 1 + the document's index, 0 = not yet used */
    uint32_t *order;
    long n;
};

static long name_index(struct names *nm, uint32_t id)
{
    if (!id)
        return -1;
    if (!nm->local[id]) {
        nm->order[nm->n] = id;
        nm->local[id] = ++nm->n;
    }
    return nm->local[id] - 1;
}

static int put_kept(struct mvz_json *j, const struct mvz_calltree *t, const struct kept *k,
                    enum mvz_cost c)
{
    struct names nm = {calloc(t->names.n + 2, sizeof(long)),
                       calloc(t->names.n + 2, sizeof(uint32_t)), 0};
    if (!nm.local || !nm.order) {
        free(nm.local);
        free(nm.order);
        return -1;
    }
    mvz_json_key(j, "nodes");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < k->n; i++) {
        const struct mvz_tree_node *n = &t->nodes[k->id[i]];
        int root = k->id[i] == 0;
        mvz_json_begin_array(j);
        mvz_json_int(j, k->parent[i]);
        mvz_json_int(j, root ? -1 : name_index(&nm, n->func));
        mvz_json_int(j, root ? -1 : name_index(&nm, n->module));
        mvz_json_int(j, root ? -1 : name_index(&nm, n->file));
        mvz_json_uint(j, n->incl[c]);
        mvz_json_uint(j, n->self[c]);
        mvz_json_end_array(j);
    }
    mvz_json_end_array(j);
    mvz_json_key(j, "strings");
    mvz_json_begin_array(j);
    for (long i = 0; i < nm.n; i++)
        mvz_json_string(j, mvz_strtab_get(&t->names, nm.order[i]));
    mvz_json_end_array(j);
    free(nm.local);
    free(nm.order);
    return 0;
}

char *mvz_ui_flame_json(const struct mvz_ui_view *v, enum mvz_cost c, int bottom_up,
                        double min_fraction, size_t max_nodes, size_t *len)
{
    const struct mvz_calltree *t = bottom_up ? &v->bottom_up : &v->top_down;
    uint64_t total = t->n ? t->nodes[0].incl[c] : 0;
    uint64_t min = (uint64_t)((double)total * min_fraction);
    struct kept k = {0};
    int rc = 0;
    /* too many frames above min: the smallest go, by doubling min */
    while (t->n && (rc = keep(&k, t, 0, -1, c, min, max_nodes)) == -1) {
        k.n = 0;
        min = min ? 2 * min : 1;
    }
    struct mvz_ui_doc d;
    if (rc < 0 || mvz_ui_doc_open(&d) < 0) {
        free(k.id);
        free(k.parent);
        return NULL;
    }
    mvz_json_begin_object(&d.j);
    mvz_json_put_string(&d.j, "cost", mvz_cost_name(c));
    mvz_json_key(&d.j, "bytes");
    mvz_json_bool(&d.j, mvz_cost_is_bytes(c));
    mvz_json_put_string(&d.j, "direction", bottom_up ? "bottom-up" : "top-down");
    mvz_json_put_uint(&d.j, "total", total);
    mvz_json_put_uint(&d.j, "min", min);
    mvz_json_key(&d.j, "columns");
    mvz_json_raw(&d.j, "[\"parent\",\"function\",\"module\",\"file\",\"inclusive\",\"self\"]");
    rc = put_kept(&d.j, t, &k, c);
    mvz_json_end_object(&d.j);
    free(k.id);
    free(k.parent);
    char *doc = mvz_ui_doc_close(&d, len);
    if (rc < 0) {
        free(doc);
        return NULL;
    }
    return doc;
}

static void put_series(struct mvz_json *j, const char *key, const uint64_t *v, size_t n)
{
    mvz_json_key(j, key);
    mvz_json_begin_array(j);
    for (size_t i = 0; i < n; i++)
        mvz_json_uint(j, v[i]);
    mvz_json_end_array(j);
}

/* The moments the timeline marks: phases (P), log lines (L), snapshots
 * (S), at most MAX_MARKS of each, in time order within each kind. */
#define MAX_MARKS 200
static void put_marks(struct mvz_json *j, const struct mvz_user *u)
{
    const struct {
        const struct mvz_user_text *v;
        size_t n;
        const char *kind;
    } kinds[3] = {
        {u->phases, u->nphases, "P"}, {u->logs, u->nlogs, "L"}, {u->snapshots, u->nsnapshots, "S"}};
    mvz_json_key(j, "marks");
    mvz_json_begin_array(j);
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < kinds[k].n && i < MAX_MARKS; i++) {
            mvz_json_begin_array(j);
            mvz_json_uint(j, kinds[k].v[i].ts);
            mvz_json_string(j, kinds[k].kind);
            mvz_json_string(j, kinds[k].v[i].text);
            mvz_json_end_array(j);
        }
    mvz_json_end_array(j);
}

char *mvz_ui_timeline_json(const struct mvz_ui_model *m, size_t *len)
{
    const struct mvz_timeline *tl = &m->tl;
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0)
        return NULL;
    mvz_json_begin_object(&d.j);
    mvz_json_put_uint(&d.j, "from_ns", tl->from_ns);
    mvz_json_put_uint(&d.j, "to_ns", tl->to_ns);
    mvz_json_put_uint(&d.j, "step_ns", tl->step_ns);
    mvz_json_put_uint(&d.j, "peak_bytes", m->whole.p.sum.peak_bytes);
    mvz_json_put_uint(&d.j, "peak_time_ns", m->whole.p.sum.peak_time_ns);
    put_series(&d.j, "t_ns", tl->t, tl->npoints);
    put_series(&d.j, "heap", tl->heap, tl->npoints);
    put_series(&d.j, "heap_max", tl->heap_max, tl->npoints);
    put_series(&d.j, "rss", tl->rss, tl->npoints);
    put_marks(&d.j, &m->whole.p.trace.user);
    mvz_json_end_object(&d.j);
    return mvz_ui_doc_close(&d, len);
}
