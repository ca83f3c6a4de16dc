/*
 * cells.c - regions of the address space and the cells they are cut
 * into (cells.h).
 */
#include "ui/cells.h"

#include <stdlib.h>
#include <string.h>

/* a + b, or UINT64_MAX when it does not fit. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The first region whose end comes within the gap of lo (n if none). */
static size_t first_near(const struct mvz_ui_regions *r, uint64_t lo)
{
    size_t a = 0, b = r->n;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (sat_add(r->hi[mid], MVZ_UI_GAP) < lo)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

static int insert_at(struct mvz_ui_regions *r, size_t i, uint64_t lo, uint64_t hi)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        uint64_t *l = realloc(r->lo, cap * sizeof(*l));
        if (!l)
            return -1;
        r->lo = l;
        uint64_t *h = realloc(r->hi, cap * sizeof(*h));
        if (!h)
            return -1;
        r->hi = h;
        r->cap = cap;
    }
    memmove(r->lo + i + 1, r->lo + i, (r->n - i) * sizeof(*r->lo));
    memmove(r->hi + i + 1, r->hi + i, (r->n - i) * sizeof(*r->hi));
    r->lo[i] = lo;
    r->hi[i] = hi;
    r->n++;
    return 0;
}

int mvz_ui_regions_add(struct mvz_ui_regions *r, uint64_t lo, uint64_t hi)
{
    if (hi <= lo) /* empty, or past the end of the address space */
        hi = lo == UINT64_MAX ? lo : lo + 1;
    size_t i = r->n && lo >= r->lo[r->n - 1] && r->hi[r->n - 1] + MVZ_UI_GAP >= lo
                   ? r->n - 1
                   : first_near(r, lo);
    if (i == r->n || r->lo[i] > hi + MVZ_UI_GAP)
        return insert_at(r, i, lo, hi);
    if (lo < r->lo[i])
        r->lo[i] = lo;
    if (hi > r->hi[i])
        r->hi[i] = hi;
    size_t j = i + 1; /* the regions it now reaches join it */
    while (j < r->n && r->lo[j] <= sat_add(r->hi[i], MVZ_UI_GAP)) {
        if (r->hi[j] > r->hi[i])
            r->hi[i] = r->hi[j];
        j++;
    }
    memmove(r->lo + i + 1, r->lo + j, (r->n - j) * sizeof(*r->lo));
    memmove(r->hi + i + 1, r->hi + j, (r->n - j) * sizeof(*r->hi));
    r->n -= j - i - 1;
    return 0;
}

void mvz_ui_regions_free(struct mvz_ui_regions *r)
{
    free(r->lo);
    free(r->hi);
    memset(r, 0, sizeof(*r));
}

int mvz_ui_cells_make(struct mvz_ui_cells *c, const struct mvz_ui_regions *r, size_t want)
{
    memset(c, 0, sizeof(*c));
    c->start = malloc((r->n + 1) * sizeof(*c->start));
    c->first_cell = malloc((r->n + 1) * sizeof(*c->first_cell));
    if (!c->start || !c->first_cell) {
        mvz_ui_cells_free(c);
        return -1;
    }
    uint64_t span = 0;
    for (size_t i = 0; i < r->n; i++)
        span = sat_add(span, r->hi[i] - r->lo[i]);
    if (!want)
        want = 1;
    c->cell_bytes = span / want + (span % want != 0);
    if (c->cell_bytes < 16)
        c->cell_bytes = 16;
    c->nregions = r->n;
    for (size_t i = 0; i < r->n; i++) {
        uint64_t len = r->hi[i] - r->lo[i];
        c->start[i] = r->lo[i];
        c->first_cell[i] = c->ncells;
        c->ncells += len / c->cell_bytes + (len % c->cell_bytes != 0);
    }
    /* each region rounds up to whole cells: want + nregions at most; more
     * than MVZ_UI_MAX_CELLS (regions by the million) is refused */
    if (c->ncells > MVZ_UI_MAX_CELLS) {
        mvz_ui_cells_free(c);
        return -1;
    }
    return 0;
}

void mvz_ui_cells_free(struct mvz_ui_cells *c)
{
    free(c->start);
    free(c->first_cell);
    memset(c, 0, sizeof(*c));
}

/* The region of address a (the last starting at or below it). */
static size_t region_of(const struct mvz_ui_cells *c, uint64_t a)
{
    size_t lo = 0, hi = c->nregions;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (c->start[mid] <= a)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void mvz_ui_cells_each(const struct mvz_ui_cells *c, uint64_t addr, uint64_t size,
                       void (*f)(void *ctx, size_t cell, uint64_t bytes), void *ctx)
{
    if (!c->nregions)
        return;
    size_t r = region_of(c, addr);
    if (addr < c->start[r])
        return; /* below every region: not laid out */
    uint64_t off = addr - c->start[r], left = size ? size : 1;
    while (left) {
        size_t cell = c->first_cell[r] + off / c->cell_bytes;
        uint64_t room = c->cell_bytes - off % c->cell_bytes, n = left < room ? left : room;
        if (cell >= c->ncells)
            return;
        f(ctx, cell, n);
        off += n;
        left -= n;
    }
}

struct pick {
    size_t cell;
    uint64_t best;
    long block, at;
};

static void pick_cell(void *ctx, size_t cell, uint64_t bytes)
{
    struct pick *k = ctx;
    if (cell == k->cell && bytes > k->best) {
        k->best = bytes;
        k->block = k->at;
    }
}

long mvz_ui_cells_pick(const struct mvz_ui_cells *c, size_t cell, size_t n,
                       void (*at)(const void *ctx, size_t i, uint64_t *addr, uint64_t *size),
                       const void *ctx)
{
    struct pick k = {cell, 0, -1, 0};
    for (size_t i = 0; i < n; i++) {
        uint64_t addr, size;
        at(ctx, i, &addr, &size);
        k.at = (long)i;
        mvz_ui_cells_each(c, addr, size, pick_cell, &k);
    }
    return k.block;
}

void mvz_ui_cells_put(struct mvz_json *j, const struct mvz_ui_cells *c)
{
    mvz_json_put_uint(j, "cell_bytes", c->cell_bytes);
    mvz_json_put_uint(j, "cells", c->ncells);
    mvz_json_key(j, "regions");
    mvz_json_begin_array(j);
    for (size_t r = 0; r < c->nregions; r++) {
        mvz_json_begin_array(j);
        mvz_json_uint(j, c->start[r]);
        mvz_json_uint(j, c->first_cell[r]);
        mvz_json_end_array(j);
    }
    mvz_json_end_array(j);
}
