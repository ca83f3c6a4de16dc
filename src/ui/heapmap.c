/*
 * heapmap.c - a snapshot's heap map (heapmap.h). The blocks come in
 * address order from the snapshot, laid out in cells (cells.h). A cell's
 * colour is the site with the most bytes in it among the top sites
 * (the others are "other"), its fill the share of its bytes in blocks.
 *
 * The snapshot last asked for is kept in the model (under its build
 * lock): moving the pointer over the map asks for the block under each
 * cell, and loading the snapshot again each time would read the trace.
 * So are its blocks' allocation times, for their age: one replay up to
 * the snapshot, the first time the pointer asks.
 */
#include "ui/heapmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/replay.h"
#include "analysis/snapshot.h"
#include "trace/format.h"
#include "trace/heap_codec.h"
#include "ui/cells.h"
#include "ui/doc.h"
#include "util/sort.h"

#define TOP_SITES 15
#define FRAMES 24

static const struct mvz_snapshot *snapshot(struct mvz_ui_model *m, uint32_t id, char *err,
                                           size_t errlen)
{
    struct mvz_snap_info *list = NULL;
    size_t n = 0;
    if (mvz_ui_snap_list(m, &list, &n, err, errlen) < 0)
        return NULL;
    uint32_t chosen = UINT32_MAX, last = UINT32_MAX, at_exit = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        if (!list[i].complete)
            continue;
        last = list[i].id;
        if (list[i].trigger == MVZ_SNAP_EXIT)
            at_exit = list[i].id;
        if (list[i].id == id)
            chosen = id;
    }
    if (id == UINT32_MAX)
        chosen = at_exit != UINT32_MAX ? at_exit : last;
    mvz_snap_infos_free(list, n);
    if (chosen == UINT32_MAX) {
        snprintf(err, errlen, "no complete snapshot %s in this trace",
                 id == UINT32_MAX ? "at all" : "of that id");
        return NULL;
    }
    if (m->snap_loaded && m->snap.info.id == chosen)
        return &m->snap;
    if (m->snap_loaded)
        mvz_snap_free(&m->snap);
    free(m->snap_born);
    m->snap_born = NULL;
    m->snap_loaded = 0;
    if (mvz_snap_load(m->path, chosen, &m->snap, err, errlen) < 0)
        return NULL;
    m->snap_loaded = 1;
    return &m->snap;
}

static int make_layout(const struct mvz_snapshot *s, size_t want, struct mvz_ui_cells *l)
{
    struct mvz_ui_regions r = {0};
    int rc = 0;
    for (size_t b = 0; b < s->nblocks && rc == 0; b++)
        rc = mvz_ui_regions_add(&r, s->blocks[b].addr, s->blocks[b].addr + s->blocks[b].size);
    if (rc == 0)
        rc = mvz_ui_cells_make(l, &r, want);
    mvz_ui_regions_free(&r);
    return rc;
}

static void each_cell(const struct mvz_ui_cells *l, const struct mvz_snap_block *b,
                      void (*f)(void *ctx, size_t cell, uint64_t bytes), void *ctx)
{
    mvz_ui_cells_each(l, b->addr, b->size, f, ctx);
}

/* ---- the sites' colours ---- */
struct site_total {
    uint32_t stack;
    uint64_t bytes, blocks;
};

static int by_bytes(const void *a, const void *b)
{
    const struct site_total *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int by_stack(const void *a, const void *b)
{
    const struct site_total *x = a, *y = b;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* Sites by bytes, largest first; *n of them. */
static struct site_total *site_totals(const struct mvz_snapshot *s, size_t *n)
{
    struct site_total *v = malloc((s->nblocks + 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (size_t b = 0; b < s->nblocks; b++)
        v[b] = (struct site_total){s->blocks[b].stack, s->blocks[b].size, 1};
    mvz_sort(v, s->nblocks, sizeof(*v), by_stack);
    size_t k = 0;
    for (size_t b = 0; b < s->nblocks; b++) {
        if (k && v[k - 1].stack == v[b].stack) {
            v[k - 1].bytes += v[b].bytes;
            v[k - 1].blocks++;
        } else {
            v[k++] = v[b];
        }
    }
    mvz_sort(v, k, sizeof(*v), by_bytes);
    *n = k;
    return v;
}

/* ---- the map ---- */
struct paint {
    uint64_t *used, *best; /* per cell: bytes in blocks; the best site's bytes */
    uint8_t *colour;       /* per cell: 0 empty, 1..TOP_SITES a top site, TOP_SITES + 1 other */
    uint8_t c;             /* the colour of the block being painted */
};

static void paint_cell(void *ctx, size_t cell, uint64_t bytes)
{
    struct paint *p = ctx;
    p->used[cell] += bytes;
    if (bytes > p->best[cell]) { /* the block with most bytes in the cell names it */
        p->best[cell] = bytes;
        p->colour[cell] = p->c;
    }
}

static uint8_t colour_of(const struct site_total *top, size_t ntop, uint32_t stack)
{
    for (size_t i = 0; i < ntop; i++)
        if (top[i].stack == stack)
            return (uint8_t)(i + 1);
    return TOP_SITES + 1;
}

static char *render(struct mvz_ui_model *m, const struct mvz_snapshot *s,
                    const struct mvz_ui_cells *l, const struct paint *p,
                    const struct site_total *top, size_t ntop, size_t *len)
{
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0)
        return NULL;
    struct mvz_json *j = &d.j;
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "snapshot", s->info.id);
    mvz_json_put_string(j, "name", s->info.name);
    mvz_json_put_uint(j, "time_ns", s->info.ts);
    mvz_json_put_uint(j, "blocks", s->nblocks);
    mvz_ui_cells_put(j, l);
    mvz_json_key(j, "sites");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < ntop; i++)
        mvz_ui_put_site(j, m->sym, top[i].stack, top[i].bytes, top[i].blocks);
    mvz_json_end_array(j);
    mvz_json_key(j, "colour");
    mvz_json_begin_array(j);
    for (size_t c = 0; c < l->ncells; c++)
        mvz_json_uint(j, p->colour[c]);
    mvz_json_end_array(j);
    mvz_json_key(j, "fill"); /* per cell, percent of its bytes in blocks */
    mvz_json_begin_array(j);
    for (size_t c = 0; c < l->ncells; c++)
        mvz_json_uint(j, (p->used[c] * 100 + l->cell_bytes - 1) / l->cell_bytes);
    mvz_json_end_array(j);
    mvz_json_end_object(j);
    return mvz_ui_doc_close(&d, len);
}

char *mvz_ui_heapmap_json(struct mvz_ui_model *m, uint32_t id, size_t ncells, size_t *len,
                          char *err, size_t errlen)
{
    const struct mvz_snapshot *s = snapshot(m, id, err, errlen);
    if (!s)
        return NULL;
    struct mvz_ui_cells l;
    size_t nsites = 0;
    struct site_total *top = site_totals(s, &nsites);
    struct paint p = {0};
    char *doc = NULL;
    if (top && make_layout(s, ncells, &l) == 0) {
        size_t ntop = nsites < TOP_SITES ? nsites : TOP_SITES;
        p.used = calloc(l.ncells + 1, sizeof(*p.used));
        p.best = calloc(l.ncells + 1, sizeof(*p.best));
        p.colour = calloc(l.ncells + 1, 1);
        for (size_t b = 0; p.used && p.best && p.colour && b < s->nblocks; b++) {
            p.c = colour_of(top, ntop, s->blocks[b].stack);
            each_cell(&l, &s->blocks[b], paint_cell, &p);
        }
        if (p.used && p.best && p.colour)
            doc = render(m, s, &l, &p, top, ntop, len);
        mvz_ui_cells_free(&l);
    }
    free(p.used);
    free(p.best);
    free(p.colour);
    free(top);
    if (!doc)
        snprintf(err, errlen, "out of memory");
    return doc;
}

/* ---- when the snapshot's blocks were allocated ---- */
/* A block's name (thread and serial, as HEAP records name it) and its
 * index in the snapshot. */
struct named {
    uint64_t name;
    size_t block;
};

struct birth_scan {
    struct named *v;
    size_t n;
    uint64_t *born;
};

static int by_name(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    return x->name < y->name ? -1 : x->name > y->name;
}

static void saw(void *ctx, const struct mvz_profile *p, const struct mvz_event *e, uint32_t stack,
                uint64_t size)
{
    struct birth_scan *k = ctx;
    (void)p;
    (void)stack;
    (void)size;
    if (e->op != MVZ_OP_ALLOC || !(e->flags & MVZ_EV_NAMED))
        return;
    size_t lo = 0, hi = k->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (k->v[mid].name < e->addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < k->n && k->v[lo].name == e->addr)
        k->born[k->v[lo].block] = e->ts;
}

/* m->snap_born: one replay up to the snapshot, keeping the allocation time
 * of each of its blocks (by name). 0, or -1 with a reason in err. */
static int births(struct mvz_ui_model *m, char *err, size_t errlen)
{
    if (m->snap_born)
        return 0;
    const struct mvz_snapshot *s = &m->snap;
    struct birth_scan k = {malloc((s->nblocks + 1) * sizeof(*k.v)), s->nblocks,
                           calloc(s->nblocks + 1, sizeof(uint64_t))};
    struct mvz_profile *p = calloc(1, sizeof(*p));
    int rc = -1;
    if (k.v && k.born && p) {
        for (size_t b = 0; b < s->nblocks; b++)
            k.v[b] = (struct named){mvz_heap_block(s->blocks[b].tid, s->blocks[b].serial), b};
        mvz_sort(k.v, k.n, sizeof(*k.v), by_name);
        struct mvz_profile_options o = {.to_ns = s->info.ts, .observe = saw, .ctx = &k};
        rc = mvz_profile_load_window(p, m->path, &o, err, errlen);
    } else {
        snprintf(err, errlen, "out of memory");
    }
    if (p)
        mvz_profile_free(p);
    free(p);
    free(k.v);
    if (rc == 0)
        m->snap_born = k.born;
    else
        free(k.born);
    return rc;
}

/* ---- the block under a cell ---- */
static void snap_block_at(const void *ctx, size_t i, uint64_t *addr, uint64_t *size)
{
    const struct mvz_snap_block *b = &((const struct mvz_snapshot *)ctx)->blocks[i];
    *addr = b->addr;
    *size = b->size;
}

char *mvz_ui_heapmap_block_json(struct mvz_ui_model *m, uint32_t id, size_t ncells, size_t cell,
                                size_t *len, char *err, size_t errlen)
{
    const struct mvz_snapshot *s = snapshot(m, id, err, errlen);
    struct mvz_ui_cells l;
    if (!s || make_layout(s, ncells, &l) < 0) {
        if (s)
            snprintf(err, errlen, "out of memory");
        return NULL;
    }
    long block = mvz_ui_cells_pick(&l, cell, s->nblocks, snap_block_at, s);
    mvz_ui_cells_free(&l);
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    mvz_json_begin_object(&d.j);
    mvz_json_put_uint(&d.j, "cell", cell);
    char berr[256];
    int aged = block >= 0 && births(m, berr, sizeof(berr)) == 0 && m->snap_born[block];
    if (block >= 0) {
        const struct mvz_snap_block *b = &s->blocks[block];
        if (aged) { /* 0: allocated before the trace saw it */
            mvz_json_put_uint(&d.j, "born_ns", m->snap_born[block]);
            mvz_json_put_uint(&d.j, "age_ns",
                              s->info.ts > m->snap_born[block] ? s->info.ts - m->snap_born[block]
                                                               : 0);
        }
        struct mvz_frame f[FRAMES];
        size_t n = mvz_symbols_stack(m->sym, b->stack, f, FRAMES);
        mvz_json_put_uint(&d.j, "addr", b->addr);
        mvz_json_put_uint(&d.j, "size", b->size);
        mvz_json_put_uint(&d.j, "tid", b->tid);
        mvz_json_put_uint(&d.j, "stack_id", b->stack);
        mvz_json_key(&d.j, "frames");
        mvz_json_begin_array(&d.j);
        for (size_t i = 0; i < n; i++)
            mvz_json_string(&d.j, f[i].function);
        mvz_json_end_array(&d.j);
    }
    mvz_json_end_object(&d.j);
    return mvz_ui_doc_close(&d, len);
}
