/*
 * places.c - the heap map at any moment, its frames, and the heat map
 * (places.h).
 */
#include "ui/places.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/placement.h"
#include "ui/cells.h"
#include "ui/doc.h"
#include "util/sort.h"

#define TOP_SITES 15
#define FRAMES 24

/* What the first replay found: the address ranges used, the sites. */
struct mvz_ui_survey {
    struct mvz_ui_regions regions;
    struct site {
        uint32_t stack;
        uint64_t bytes, blocks;
    } * sites; /* by stack id while surveying; then the top ones, largest first */
    size_t nsites, ntop;
    struct mvz_place_info info;
    /* the moment asked last (its blocks by address), for the hover */
    struct mvz_placed *moment;
    size_t nmoment;
    uint64_t moment_t;
    int have_moment;
};

void mvz_ui_places_free(struct mvz_ui_model *m)
{
    struct mvz_ui_survey *s = m->places;
    if (!s)
        return;
    mvz_ui_regions_free(&s->regions);
    free(s->sites);
    free(s->moment);
    free(s);
    m->places = NULL;
}

/* ---- the survey ---- */
struct surveying {
    struct mvz_ui_survey *s;
    int oom;
};

static void survey_alloc(void *ctx, const struct mvz_placed *b)
{
    struct surveying *k = ctx;
    struct mvz_ui_survey *s = k->s;
    if (!b->addr || k->oom)
        return;
    if (mvz_ui_regions_add(&s->regions, b->addr, b->addr + b->size) < 0)
        k->oom = 1;
    if (b->stack >= s->nsites) {
        size_t n = b->stack + 1024;
        struct site *v = realloc(s->sites, n * sizeof(*v));
        if (!v) {
            k->oom = 1;
            return;
        }
        memset(v + s->nsites, 0, (n - s->nsites) * sizeof(*v));
        s->sites = v;
        s->nsites = n;
    }
    s->sites[b->stack].stack = b->stack;
    s->sites[b->stack].bytes += b->size;
    s->sites[b->stack].blocks++;
}

static int by_bytes(const void *a, const void *b)
{
    const struct site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static struct mvz_ui_survey *survey(struct mvz_ui_model *m, char *err, size_t errlen)
{
    if (m->places)
        return m->places;
    struct mvz_ui_survey *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    struct surveying k = {s, 0};
    struct mvz_place_ops ops = {.alloc = survey_alloc};
    int rc = mvz_place_replay(m->path, &ops, &k, &s->info, err, errlen);
    if (rc == 0 && k.oom)
        snprintf(err, errlen, "out of memory");
    else if (rc == 0 && !s->info.placed)
        snprintf(err, errlen,
                 "this trace has no block addresses: record it with memviz run --addresses");
    if (rc < 0 || k.oom || !s->info.placed) {
        m->places = s;
        mvz_ui_places_free(m);
        return NULL;
    }
    mvz_sort(s->sites, s->nsites, sizeof(*s->sites), by_bytes);
    while (s->ntop < TOP_SITES && s->ntop < s->nsites && s->sites[s->ntop].blocks)
        s->ntop++;
    m->places = s;
    return s;
}

/* The survey, and the whole run's layout in about ncells cells; NULL
 * with a reason in err. */
static struct mvz_ui_survey *laid_out(struct mvz_ui_model *m, size_t ncells, struct mvz_ui_cells *c,
                                      char *err, size_t errlen)
{
    struct mvz_ui_survey *s = survey(m, err, errlen);
    if (s && mvz_ui_cells_make(c, &s->regions, ncells) < 0) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return s;
}

/* A site's colour: 1 to TOP_SITES for the top ones, TOP_SITES + 1 else. */
static uint8_t colour_of(const struct mvz_ui_survey *s, uint32_t stack)
{
    for (size_t i = 0; i < s->ntop; i++)
        if (s->sites[i].stack == stack)
            return (uint8_t)(i + 1);
    return TOP_SITES + 1;
}

/* ---- painting a moment ---- */
struct paint {
    const struct mvz_ui_survey *s;
    const struct mvz_ui_cells *cells;
    uint64_t *used, *best; /* per cell: bytes in blocks; the biggest block's bytes there */
    uint8_t *colour;       /* per cell: 0 empty, else the biggest block's site's colour */
    uint8_t c;
};

static void paint_cell(void *ctx, size_t cell, uint64_t bytes)
{
    struct paint *p = ctx;
    p->used[cell] += bytes;
    if (bytes > p->best[cell]) {
        p->best[cell] = bytes;
        p->colour[cell] = p->c;
    }
}

static int paint_open(struct paint *p, const struct mvz_ui_survey *s, const struct mvz_ui_cells *c)
{
    memset(p, 0, sizeof(*p));
    p->s = s;
    p->cells = c;
    p->used = calloc(c->ncells + 1, sizeof(*p->used));
    p->best = calloc(c->ncells + 1, sizeof(*p->best));
    p->colour = calloc(c->ncells + 1, 1);
    return p->used && p->best && p->colour ? 0 : -1;
}

static void paint_clear(struct paint *p)
{
    memset(p->used, 0, p->cells->ncells * sizeof(*p->used));
    memset(p->best, 0, p->cells->ncells * sizeof(*p->best));
    memset(p->colour, 0, p->cells->ncells);
}

static void paint_close(struct paint *p)
{
    free(p->used);
    free(p->best);
    free(p->colour);
}

static void paint_block(struct paint *p, const struct mvz_placed *b)
{
    if (!b->addr)
        return;
    p->c = colour_of(p->s, b->stack);
    mvz_ui_cells_each(p->cells, b->addr, b->size, paint_cell, p);
}

static uint8_t fill_of(const struct paint *p, size_t cell)
{
    uint64_t cb = p->cells->cell_bytes, f = (p->used[cell] * 100 + cb - 1) / cb;
    return (uint8_t)(f > 100 ? 100 : f);
}

static void put_sites(struct mvz_json *j, struct mvz_ui_model *m, const struct mvz_ui_survey *s)
{
    mvz_json_key(j, "sites");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < s->ntop; i++)
        mvz_ui_put_site(j, m->sym, s->sites[i].stack, s->sites[i].bytes, s->sites[i].blocks);
    mvz_json_end_array(j);
}

static void put_paint(struct mvz_json *j, const struct paint *p)
{
    mvz_json_key(j, "colour");
    mvz_json_begin_array(j);
    for (size_t c = 0; c < p->cells->ncells; c++)
        mvz_json_uint(j, p->colour[c]);
    mvz_json_end_array(j);
    mvz_json_key(j, "fill");
    mvz_json_begin_array(j);
    for (size_t c = 0; c < p->cells->ncells; c++)
        mvz_json_uint(j, fill_of(p, c));
    mvz_json_end_array(j);
}

/* ---- one moment ---- */
static int moment(struct mvz_ui_model *m, struct mvz_ui_survey *s, uint64_t t, char *err,
                  size_t errlen)
{
    if (s->have_moment && s->moment_t == t)
        return 0;
    free(s->moment);
    s->moment = NULL;
    s->have_moment = 0;
    struct mvz_place_info info;
    if (mvz_place_at(m->path, t, &s->moment, &s->nmoment, &info, err, errlen) < 0)
        return -1;
    s->moment_t = t;
    s->have_moment = 1;
    return 0;
}

char *mvz_ui_moment_json(struct mvz_ui_model *m, uint64_t t, size_t ncells, size_t *len, char *err,
                         size_t errlen)
{
    struct mvz_ui_survey *s = survey(m, err, errlen);
    if (!s || moment(m, s, t, err, errlen) < 0)
        return NULL;
    struct mvz_ui_cells c;
    struct paint p;
    char *doc = NULL;
    struct mvz_ui_doc d;
    if (mvz_ui_cells_make(&c, &s->regions, ncells) == 0) {
        if (paint_open(&p, s, &c) == 0 && mvz_ui_doc_open(&d) == 0) {
            uint64_t bytes = 0;
            for (size_t i = 0; i < s->nmoment; i++) {
                paint_block(&p, &s->moment[i]);
                bytes += s->moment[i].size;
            }
            mvz_json_begin_object(&d.j);
            mvz_json_put_uint(&d.j, "time_ns", t);
            mvz_json_put_uint(&d.j, "end_ns", s->info.end_ns);
            mvz_json_put_uint(&d.j, "blocks", s->nmoment);
            mvz_json_put_uint(&d.j, "bytes", bytes);
            mvz_ui_cells_put(&d.j, &c);
            put_sites(&d.j, m, s);
            put_paint(&d.j, &p);
            mvz_json_end_object(&d.j);
            doc = mvz_ui_doc_close(&d, len);
        }
        paint_close(&p);
        mvz_ui_cells_free(&c);
    }
    if (!doc)
        snprintf(err, errlen, "out of memory");
    return doc;
}

/* ---- the block under a cell ---- */
static void placed_at(const void *ctx, size_t i, uint64_t *addr, uint64_t *size)
{
    const struct mvz_placed *b = &((const struct mvz_placed *)ctx)[i];
    *addr = b->addr;
    *size = b->size;
}

static void put_block(struct mvz_json *j, struct mvz_ui_model *m, const struct mvz_placed *b,
                      uint64_t t)
{
    mvz_json_put_uint(j, "addr", b->addr);
    mvz_json_put_uint(j, "size", b->size);
    mvz_json_put_uint(j, "tid", b->tid);
    mvz_json_put_uint(j, "stack_id", b->stack);
    mvz_json_put_uint(j, "born_ns", b->born);
    mvz_json_put_uint(j, "age_ns", t > b->born ? t - b->born : 0);
    struct mvz_frame f[FRAMES];
    size_t n = mvz_symbols_stack(m->sym, b->stack, f, FRAMES);
    mvz_json_key(j, "frames");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < n; i++)
        mvz_json_string(j, f[i].function);
    mvz_json_end_array(j);
}

char *mvz_ui_moment_block_json(struct mvz_ui_model *m, uint64_t t, size_t ncells, size_t cell,
                               size_t *len, char *err, size_t errlen)
{
    struct mvz_ui_cells c;
    struct mvz_ui_survey *s = laid_out(m, ncells, &c, err, errlen);
    if (!s)
        return NULL;
    if (moment(m, s, t, err, errlen) < 0) {
        mvz_ui_cells_free(&c);
        return NULL;
    }
    long block = mvz_ui_cells_pick(&c, cell, s->nmoment, placed_at, s->moment);
    mvz_ui_cells_free(&c);
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    mvz_json_begin_object(&d.j);
    mvz_json_put_uint(&d.j, "cell", cell);
    mvz_json_put_uint(&d.j, "time_ns", t);
    if (block >= 0)
        put_block(&d.j, m, &s->moment[block], t);
    mvz_json_end_object(&d.j);
    return mvz_ui_doc_close(&d, len);
}

/* ---- frames ---- */
struct framing {
    struct paint p;
    uint8_t *colour, *fill; /* nframes x ncells */
    uint64_t *blocks;       /* per frame */
};

static void frame_at(void *ctx, size_t k, const struct mvz_live_set *live)
{
    struct framing *f = ctx;
    size_t n = f->p.cells->ncells;
    paint_clear(&f->p);
    for (size_t i = 0; i < live->n; i++)
        paint_block(&f->p, &live->v[i]);
    memcpy(f->colour + k * n, f->p.colour, n);
    for (size_t c = 0; c < n; c++)
        f->fill[k * n + c] = fill_of(&f->p, c);
    f->blocks[k] = live->n;
}

static void put_rows(struct mvz_json *j, const char *key, const uint8_t *v, size_t rows,
                     size_t cols)
{
    mvz_json_key(j, key);
    mvz_json_begin_array(j);
    for (size_t r = 0; r < rows; r++) {
        mvz_json_begin_array(j);
        for (size_t c = 0; c < cols; c++)
            mvz_json_uint(j, v[r * cols + c]);
        mvz_json_end_array(j);
    }
    mvz_json_end_array(j);
}

/* rows x cols entries of size bytes, zeroed; NULL past 64M entries (a
 * heap in a million regions) or when out of memory. */
static void *grid_alloc(size_t rows, size_t cols, size_t size)
{
    if (cols && rows > (1u << 26) / cols)
        return NULL;
    return calloc(rows * cols + 1, size);
}

/* The ends of n equal slices of the run. */
static uint64_t *slice_ends(const struct mvz_ui_survey *s, size_t n)
{
    uint64_t *t = malloc(n * sizeof(*t)), end = s->info.end_ns;
    for (size_t k = 0; t && k < n; k++) /* end * (k + 1) / n, without overflow */
        t[k] = end / n * (k + 1) + end % n * (k + 1) / n;
    return t;
}

static void put_times(struct mvz_json *j, const uint64_t *t, size_t n)
{
    mvz_json_key(j, "times");
    mvz_json_begin_array(j);
    for (size_t k = 0; k < n; k++)
        mvz_json_uint(j, t[k]);
    mvz_json_end_array(j);
}

char *mvz_ui_frames_json(struct mvz_ui_model *m, size_t nframes, size_t ncells, size_t *len,
                         char *err, size_t errlen)
{
    struct mvz_ui_cells c;
    struct mvz_ui_survey *s = laid_out(m, ncells, &c, err, errlen);
    if (!s)
        return NULL;
    struct framing f = {.colour = grid_alloc(nframes, c.ncells, 1),
                        .fill = grid_alloc(nframes, c.ncells, 1),
                        .blocks = calloc(nframes, sizeof(uint64_t))};
    uint64_t *times = slice_ends(s, nframes);
    char *doc = NULL;
    struct mvz_ui_doc d;
    struct mvz_place_info info;
    int ok = paint_open(&f.p, s, &c) == 0 && f.colour && f.fill && f.blocks && times;
    struct mvz_place_ops ops = {.moments = times, .nmoments = nframes, .moment = frame_at};
    if (ok && mvz_place_replay(m->path, &ops, &f, &info, err, errlen) == 0 &&
        mvz_ui_doc_open(&d) == 0) {
        mvz_json_begin_object(&d.j);
        mvz_json_put_uint(&d.j, "end_ns", s->info.end_ns);
        put_times(&d.j, times, nframes);
        mvz_ui_cells_put(&d.j, &c);
        put_sites(&d.j, m, s);
        mvz_json_key(&d.j, "blocks");
        mvz_json_begin_array(&d.j);
        for (size_t k = 0; k < nframes; k++)
            mvz_json_uint(&d.j, f.blocks[k]);
        mvz_json_end_array(&d.j);
        put_rows(&d.j, "colour", f.colour, nframes, c.ncells);
        put_rows(&d.j, "fill", f.fill, nframes, c.ncells);
        mvz_json_end_object(&d.j);
        doc = mvz_ui_doc_close(&d, len);
    } else if (!ok) {
        snprintf(err, errlen, "out of memory");
    }
    paint_close(&f.p);
    free(f.colour);
    free(f.fill);
    free(f.blocks);
    free(times);
    mvz_ui_cells_free(&c);
    return doc;
}

/* ---- the heat map ---- */
struct heating {
    const struct mvz_ui_cells *cells;
    const uint64_t *times; /* each slice's end */
    size_t nslices;
    uint64_t *allocs; /* nslices x ncells */
    int64_t *live;    /* nslices x ncells: changes, then (summed) the bytes */
    size_t at;        /* the slice of the block being counted */
};

/* The slice an event at ts falls in: the first whose end is at or after
 * it (as a frame holds what happened up to its time), the last for any
 * later. */
static size_t slice_of(const struct heating *h, uint64_t ts)
{
    size_t lo = 0, hi = h->nslices - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (h->times[mid] >= ts)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static void heat_alloc_cell(void *ctx, size_t cell, uint64_t bytes)
{
    struct heating *h = ctx;
    h->allocs[h->at * h->cells->ncells + cell]++;
    h->live[h->at * h->cells->ncells + cell] += (int64_t)bytes;
}

static void heat_free_cell(void *ctx, size_t cell, uint64_t bytes)
{
    struct heating *h = ctx;
    h->live[h->at * h->cells->ncells + cell] -= (int64_t)bytes;
}

static void heat_alloc(void *ctx, const struct mvz_placed *b)
{
    struct heating *h = ctx;
    if (!b->addr)
        return;
    h->at = slice_of(h, b->born);
    mvz_ui_cells_each(h->cells, b->addr, b->size, heat_alloc_cell, h);
}

static void heat_release(void *ctx, const struct mvz_placed *b, uint64_t ts)
{
    struct heating *h = ctx;
    if (!b->addr)
        return;
    h->at = slice_of(h, ts);
    mvz_ui_cells_each(h->cells, b->addr, b->size, heat_free_cell, h);
}

static void put_grid(struct mvz_json *j, const char *key, const struct heating *h, int live)
{
    size_t n = h->cells->ncells;
    mvz_json_key(j, key);
    mvz_json_begin_array(j);
    for (size_t k = 0; k < h->nslices; k++) {
        mvz_json_begin_array(j);
        for (size_t c = 0; c < n; c++)
            mvz_json_uint(j, live ? (uint64_t)(h->live[k * n + c] > 0 ? h->live[k * n + c] : 0)
                                  : h->allocs[k * n + c]);
        mvz_json_end_array(j);
    }
    mvz_json_end_array(j);
}

static char *heat_doc(struct mvz_ui_model *m, const struct mvz_ui_survey *s,
                      const struct heating *h, const uint64_t *times, size_t *len)
{
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0)
        return NULL;
    mvz_json_begin_object(&d.j);
    mvz_json_put_uint(&d.j, "end_ns", s->info.end_ns);
    put_times(&d.j, times, h->nslices);
    mvz_ui_cells_put(&d.j, h->cells);
    put_sites(&d.j, m, s);
    put_grid(&d.j, "allocations", h, 0);
    put_grid(&d.j, "live_bytes", h, 1);
    mvz_json_end_object(&d.j);
    return mvz_ui_doc_close(&d, len);
}

char *mvz_ui_heatmap_json(struct mvz_ui_model *m, size_t nslices, size_t ncells, size_t *len,
                          char *err, size_t errlen)
{
    struct mvz_ui_cells c;
    struct mvz_ui_survey *s = laid_out(m, ncells, &c, err, errlen);
    if (!s)
        return NULL;
    uint64_t *times = slice_ends(s, nslices);
    struct heating h = {&c,
                        times,
                        nslices,
                        grid_alloc(nslices, c.ncells, sizeof(uint64_t)),
                        grid_alloc(nslices, c.ncells, sizeof(int64_t)),
                        0};
    char *doc = NULL;
    struct mvz_place_info info;
    struct mvz_place_ops ops = {.alloc = heat_alloc, .release = heat_release};
    if (!h.allocs || !h.live || !times) {
        snprintf(err, errlen, "out of memory");
    } else if (mvz_place_replay(m->path, &ops, &h, &info, err, errlen) == 0) {
        for (size_t k = 1; k < nslices; k++) /* changes to bytes at each slice's end */
            for (size_t i = 0; i < c.ncells; i++)
                h.live[k * c.ncells + i] += h.live[(k - 1) * c.ncells + i];
        if (!(doc = heat_doc(m, s, &h, times, len)))
            snprintf(err, errlen, "out of memory");
    }
    free(h.allocs);
    free(h.live);
    free(times);
    mvz_ui_cells_free(&c);
    return doc;
}
