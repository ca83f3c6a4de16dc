/*
 * snaps.c - the UI's snapshot views (snaps.h), on the analysis layer's
 * snapshot graph, leak kinds, roots, dominator tree and growth. The same
 * numbers as `memviz leaks`, `memviz retain` and `memviz growth`, under
 * their names.
 */
#include "ui/snaps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dominators.h"
#include "analysis/growth.h"
#include "analysis/leaks.h"
#include "analysis/retain.h"
#include "analysis/roots.h"
#include "analysis/snapshot.h"
#include "trace/format.h"
#include "ui/doc.h"
#include "util/sort.h"

#define TOP 20
#define FRAMES 24
#define PATH_STEPS 32

static void put_info(struct mvz_json *j, const struct mvz_snap_info *s)
{
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "id", s->id);
    mvz_json_put_string(j, "name", s->name);
    mvz_json_put_string(j, "trigger", mvz_snap_trigger_name(s->trigger));
    mvz_json_put_uint(j, "time_ns", s->ts);
    mvz_json_put_uint(j, "blocks", s->nblocks);
    mvz_json_key(j, "complete");
    mvz_json_bool(j, s->complete);
    mvz_json_end_object(j);
}

char *mvz_ui_snapshots_json(struct mvz_ui_model *m, size_t *len, char *err, size_t errlen)
{
    struct mvz_snap_info *list = NULL;
    size_t n = 0;
    if (mvz_ui_snap_list(m, &list, &n, err, errlen) < 0)
        return NULL;
    struct mvz_ui_doc d;
    char *doc = NULL;
    if (mvz_ui_doc_open(&d) == 0) {
        mvz_json_begin_object(&d.j);
        mvz_json_key(&d.j, "snapshots");
        mvz_json_begin_array(&d.j);
        for (size_t i = 0; i < n; i++)
            put_info(&d.j, &list[i]);
        mvz_json_end_array(&d.j);
        /* whether the heap map of any moment can be drawn (places.h) */
        mvz_json_key(&d.j, "addresses");
        mvz_json_bool(&d.j, m->whole.p.trace.addrs_records > 0);
        mvz_json_end_object(&d.j);
        doc = mvz_ui_doc_close(&d, len);
    }
    mvz_snap_infos_free(list, n);
    if (!doc)
        snprintf(err, errlen, "out of memory");
    return doc;
}

/* ---- one snapshot ---- */
struct snap_view {
    struct mvz_ui_model *m;
    struct mvz_snapshot s;
    struct mvz_leaks l;
    struct mvz_root_groups g;
    struct mvz_retain r;
};

/* A loss record: the blocks of one kind from one stack. */
struct loss {
    int kind;
    uint32_t stack;
    uint64_t bytes, blocks;
};

static int by_loss(const void *a, const void *b)
{
    const struct loss *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind > y->kind ? -1 : 1; /* definite first */
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int by_kind_stack(const void *a, const void *b)
{
    const struct loss *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The lost blocks (all but reachable) by kind and stack, worst first. */
static struct loss *losses(const struct snap_view *v, size_t *n)
{
    struct loss *a = malloc((v->s.nblocks + 1) * sizeof(*a));
    size_t k = 0;
    if (!a)
        return NULL;
    for (size_t b = 0; b < v->s.nblocks; b++)
        if (v->l.kind[b] != MVZ_LEAK_REACHABLE)
            a[k++] = (struct loss){v->l.kind[b], v->s.blocks[b].stack, v->s.blocks[b].size, 1};
    mvz_sort(a, k, sizeof(*a), by_kind_stack);
    size_t out = 0;
    for (size_t i = 0; i < k; i++) {
        if (out && a[out - 1].kind == a[i].kind && a[out - 1].stack == a[i].stack) {
            a[out - 1].bytes += a[i].bytes;
            a[out - 1].blocks++;
        } else {
            a[out++] = a[i];
        }
    }
    mvz_sort(a, out, sizeof(*a), by_loss);
    *n = out;
    return a;
}

static void put_leaks(struct mvz_json *j, const struct snap_view *v)
{
    mvz_json_key(j, "leaks");
    mvz_json_begin_object(j);
    for (int k = MVZ_LEAK_DEFINITE; k >= 0; k--) {
        mvz_json_key(j, mvz_leak_kind_name(k));
        mvz_json_begin_object(j);
        mvz_json_put_uint(j, "bytes", v->l.t.bytes[k]);
        mvz_json_put_uint(j, "blocks", v->l.t.blocks[k]);
        mvz_json_end_object(j);
    }
    mvz_json_end_object(j);
    size_t n = 0;
    struct loss *a = losses(v, &n);
    mvz_json_key(j, "records");
    mvz_json_begin_array(j);
    for (size_t i = 0; a && i < n && i < TOP; i++) {
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "kind", mvz_leak_kind_name(a[i].kind));
        mvz_json_put_uint(j, "bytes", a[i].bytes);
        mvz_json_put_uint(j, "blocks", a[i].blocks);
        mvz_ui_put_frames(j, v->m->sym, a[i].stack, FRAMES);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
    free(a);
}

/* ---- retention ---- */
static const uint64_t *rank_by;
static int by_rank(const void *a, const void *b)
{
    uint64_t x = rank_by[*(const uint32_t *)a], y = rank_by[*(const uint32_t *)b];
    if (x != y)
        return x > y ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void put_roots(struct mvz_json *j, const struct snap_view *v)
{
    uint32_t *order = malloc((v->g.n + 1) * sizeof(*order));
    mvz_json_key(j, "roots");
    mvz_json_begin_array(j);
    if (order) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < v->g.n; i++)
            if (v->r.retained[v->r.nblocks + i])
                order[n++] = v->r.nblocks + i;
        rank_by = v->r.retained;
        mvz_sort(order, n, sizeof(*order), by_rank);
        for (uint32_t i = 0; i < n && i < TOP; i++) {
            const struct mvz_root_info *ri = &v->g.roots[order[i] - v->r.nblocks];
            char label[512];
            mvz_root_label(ri, label, sizeof(label));
            mvz_json_begin_object(j);
            mvz_json_put_string(j, "kind", mvz_root_kind_name(ri->kind));
            mvz_json_put_string(j, "name", ri->name);
            mvz_json_put_string(j, "label", label);
            mvz_json_put_uint(j, "retained_bytes", v->r.retained[order[i]]);
            mvz_json_put_uint(j, "retained_blocks", v->r.retained_n[order[i]]);
            mvz_json_end_object(j);
        }
    }
    mvz_json_end_array(j);
    free(order);
}

/* The shortest path from a root to block b, root first: the root's label,
 * then each block's site and size, and the offset of the word in the
 * block before that points to it ("must, 2000 bytes, by the word at +16
 * of the block before"). */
static void put_path(struct mvz_json *j, const struct snap_view *v, uint32_t b)
{
    uint32_t steps[PATH_STEPS];
    size_t n = 0;
    for (uint32_t at = b; at != MVZ_DOM_NONE && at != v->r.vroot && n < PATH_STEPS;
         at = v->r.bfs_parent[at])
        steps[n++] = at;
    mvz_json_key(j, "path");
    mvz_json_begin_array(j);
    struct mvz_frame f[1];
    for (size_t i = n; i-- > 0;) {
        uint32_t at = steps[i];
        char text[640];
        if (at >= v->r.nblocks) {
            mvz_root_label(&v->g.roots[at - v->r.nblocks], text, sizeof(text));
        } else {
            size_t k = mvz_symbols_stack(v->m->sym, v->s.blocks[at].stack, f, 1), re;
            uint64_t off = 0;
            int by_root = mvz_retain_path_step(&v->r, at, &off, &re);
            int n = snprintf(text, sizeof(text), "%s, %llu bytes", k ? f[0].function : "??",
                             (unsigned long long)v->s.blocks[at].size);
            if (!by_root && n > 0 && (size_t)n < sizeof(text))
                snprintf(text + n, sizeof(text) - (size_t)n,
                         ", by the word at +%llu of the block before", (unsigned long long)off);
        }
        mvz_json_string(j, text);
    }
    mvz_json_end_array(j);
}

static void put_sites(struct mvz_json *j, const struct snap_view *v)
{
    uint32_t nstacks = 1;
    for (size_t b = 0; b < v->s.nblocks; b++)
        if (v->s.blocks[b].stack >= nstacks)
            nstacks = v->s.blocks[b].stack + 1;
    uint64_t *bytes = calloc(nstacks, sizeof(*bytes)), *blocks = calloc(nstacks, sizeof(*blocks));
    uint32_t *order = malloc(nstacks * sizeof(*order));
    uint32_t *biggest = malloc(nstacks * sizeof(*biggest)); /* the block retaining most */
    mvz_json_key(j, "sites");
    mvz_json_begin_array(j);
    if (bytes && blocks && order && biggest &&
        mvz_retain_by_stack(&v->r, bytes, blocks, nstacks) == 0) {
        memset(biggest, 0xff, nstacks * sizeof(*biggest));
        for (uint32_t b = 0; b < v->s.nblocks; b++) {
            uint32_t st = v->s.blocks[b].stack, was = biggest[st];
            if (was == UINT32_MAX || v->r.retained[b] > v->r.retained[was])
                biggest[st] = b;
        }
        uint32_t n = 0;
        for (uint32_t st = 0; st < nstacks; st++)
            if (bytes[st])
                order[n++] = st;
        rank_by = bytes;
        mvz_sort(order, n, sizeof(*order), by_rank);
        for (uint32_t i = 0; i < n && i < TOP; i++) {
            mvz_json_begin_object(j);
            mvz_json_put_uint(j, "stack_id", order[i]);
            mvz_json_put_uint(j, "retained_bytes", bytes[order[i]]);
            mvz_json_put_uint(j, "retained_blocks", blocks[order[i]]);
            mvz_ui_put_frames(j, v->m->sym, order[i], FRAMES);
            put_path(j, v, biggest[order[i]]);
            mvz_json_end_object(j);
        }
    }
    mvz_json_end_array(j);
    free(bytes);
    free(blocks);
    free(order);
    free(biggest);
}

static const struct mvz_snap_info *choose(const struct mvz_snap_info *list, size_t n, uint32_t id)
{
    const struct mvz_snap_info *at_exit = NULL, *last = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!list[i].complete)
            continue;
        if (list[i].id == id)
            return &list[i];
        last = &list[i];
        if (list[i].trigger == MVZ_SNAP_EXIT)
            at_exit = &list[i];
    }
    return id != UINT32_MAX ? NULL : at_exit ? at_exit : last;
}

static char *render_snapshot(struct snap_view *v, size_t *len)
{
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0)
        return NULL;
    mvz_json_begin_object(&d.j);
    mvz_json_key(&d.j, "snapshot");
    put_info(&d.j, &v->s.info);
    put_leaks(&d.j, v);
    put_roots(&d.j, v);
    put_sites(&d.j, v);
    mvz_json_end_object(&d.j);
    return mvz_ui_doc_close(&d, len);
}

static char *build_snapshot(struct mvz_ui_model *m, uint32_t id, size_t *len, char *err,
                            size_t errlen)
{
    struct mvz_snap_info *list = NULL;
    size_t n = 0;
    if (mvz_ui_snap_list(m, &list, &n, err, errlen) < 0)
        return NULL;
    const struct mvz_snap_info *info = choose(list, n, id);
    uint32_t chosen = info ? info->id : 0;
    mvz_snap_infos_free(list, n);
    if (!info) {
        snprintf(err, errlen, "no complete snapshot %s in this trace",
                 id == UINT32_MAX ? "at all" : "of that id");
        return NULL;
    }
    struct snap_view *v = calloc(1, sizeof(*v));
    char *doc = NULL;
    if (!v)
        snprintf(err, errlen, "out of memory");
    else if (mvz_snap_load(m->path, chosen, &v->s, err, errlen) == 0) {
        v->m = m;
        if (mvz_leaks_classify(&v->s, &v->l) < 0 ||
            mvz_root_groups_build(&v->s, &m->whole.p.trace, m->sym, &v->g) < 0 ||
            mvz_retain_build(&v->s, v->g.group, v->g.n, v->g.weak, &v->r) < 0 ||
            !(doc = render_snapshot(v, len)))
            snprintf(err, errlen, "out of memory");
        mvz_retain_free(&v->r);
        mvz_root_groups_free(&v->g);
        mvz_leaks_free(&v->l);
        mvz_snap_free(&v->s);
    }
    free(v);
    return doc;
}

/* A document from the cache, or built (one at a time) and kept. */
static char *cached(struct mvz_ui_model *m, const char *key, size_t *len, char *err, size_t errlen,
                    char *(*make)(struct mvz_ui_model *, uint32_t, size_t *, char *, size_t),
                    uint32_t arg)
{
    *err = 0;
    pthread_mutex_lock(&m->build_lock);
    char *doc = mvz_ui_cache_get(m, key, len);
    if (!doc && (doc = make(m, arg, len, err, errlen)))
        mvz_ui_cache_put(m, key, doc, *len);
    pthread_mutex_unlock(&m->build_lock);
    if (!doc && !*err)
        snprintf(err, errlen, "out of memory");
    return doc;
}

char *mvz_ui_snapshot_json(struct mvz_ui_model *m, uint32_t id, size_t *len, char *err,
                           size_t errlen)
{
    char key[48];
    snprintf(key, sizeof(key), "snapshot:%u", id);
    return cached(m, key, len, err, errlen, build_snapshot, id);
}

/* ---- growth across the snapshots ---- */
static uint64_t grew(const struct mvz_growth *g, uint32_t st)
{
    uint64_t first = g->bytes[(size_t)st * g->nsnaps],
             last = g->bytes[(size_t)st * g->nsnaps + g->nsnaps - 1];
    return last > first ? last - first : 0;
}

static char *render_growth(struct mvz_ui_model *m, const struct mvz_growth *g, size_t top,
                           size_t *len)
{
    uint32_t *order = malloc((g->nstacks + 1) * sizeof(*order));
    uint64_t *growth = calloc(g->nstacks + 1, sizeof(*growth));
    struct mvz_ui_doc d;
    if (!order || !growth || mvz_ui_doc_open(&d) < 0) {
        free(order);
        free(growth);
        return NULL;
    }
    uint32_t n = 0;
    for (uint32_t st = 0; g->nsnaps && st < g->nstacks; st++)
        if ((growth[st] = grew(g, st)))
            order[n++] = st;
    rank_by = growth;
    mvz_sort(order, n, sizeof(*order), by_rank);
    mvz_json_begin_object(&d.j);
    mvz_json_key(&d.j, "snapshots");
    mvz_json_begin_array(&d.j);
    for (size_t k = 0; k < g->nsnaps; k++)
        put_info(&d.j, &g->snaps[k]);
    mvz_json_end_array(&d.j);
    mvz_json_key(&d.j, "sites");
    mvz_json_begin_array(&d.j);
    for (uint32_t i = 0; i < n && i < top; i++) {
        mvz_json_begin_object(&d.j);
        mvz_json_put_uint(&d.j, "stack_id", order[i]);
        mvz_json_put_uint(&d.j, "growth_bytes", growth[order[i]]);
        mvz_json_key(&d.j, "live_bytes");
        mvz_json_begin_array(&d.j);
        for (size_t k = 0; k < g->nsnaps; k++)
            mvz_json_uint(&d.j, g->bytes[(size_t)order[i] * g->nsnaps + k]);
        mvz_json_end_array(&d.j);
        mvz_ui_put_frames(&d.j, m->sym, order[i], FRAMES);
        mvz_json_end_object(&d.j);
    }
    mvz_json_end_array(&d.j);
    mvz_json_end_object(&d.j);
    free(order);
    free(growth);
    return mvz_ui_doc_close(&d, len);
}

static char *build_growth(struct mvz_ui_model *m, uint32_t top, size_t *len, char *err,
                          size_t errlen)
{
    struct mvz_growth g;
    memset(&g, 0, sizeof(g));
    if (mvz_growth_load(m->path, &g, err, errlen) < 0)
        return NULL;
    char *doc = render_growth(m, &g, top, len);
    mvz_growth_free(&g);
    return doc;
}

char *mvz_ui_growth_json(struct mvz_ui_model *m, size_t top, size_t *len, char *err, size_t errlen)
{
    char key[48];
    snprintf(key, sizeof(key), "growth:%zu", top);
    return cached(m, key, len, err, errlen, build_growth, (uint32_t)top);
}
