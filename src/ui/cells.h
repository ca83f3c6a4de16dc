/*
 * cells.h - the address space as the heap maps draw it: the stretches of
 * it the heap used (regions; a gap of more than MVZ_UI_GAP bytes between
 * two blocks starts a new one, since arenas and mmap'd blocks sit far
 * apart and a map drawn to scale would be empty space), laid end to end
 * and cut into cells of equal bytes. The snapshot's heap map, the map at
 * any moment and the heat map share it.
 */
#ifndef MVZ_UI_CELLS_H
#define MVZ_UI_CELLS_H

#include <stddef.h>
#include <stdint.h>

#include "util/json.h"

#define MVZ_UI_GAP (1u << 20)
/* A layout of more cells is refused (a heap in more regions than that) */
#define MVZ_UI_MAX_CELLS (1u << 20)

/* Regions, sorted and apart by more than MVZ_UI_GAP: [lo[i], hi[i]). */
struct mvz_ui_regions {
    uint64_t *lo, *hi;
    size_t n, cap;
};

/* Adds the bytes [lo, hi), merging it with the regions within the gap;
 * in any order (in address order it costs O(1)). -1 when out of memory. */
int mvz_ui_regions_add(struct mvz_ui_regions *r, uint64_t lo, uint64_t hi);
void mvz_ui_regions_free(struct mvz_ui_regions *r);

struct mvz_ui_cells {
    uint64_t cell_bytes; /* at least 16 */
    size_t ncells;
    uint64_t *start;    /* per region: its first address */
    size_t *first_cell; /* per region: its first cell */
    size_t nregions;
};

/* Cells for the regions, about `want` of them. -1 when out of memory or
 * when they would be more than MVZ_UI_MAX_CELLS. */
int mvz_ui_cells_make(struct mvz_ui_cells *c, const struct mvz_ui_regions *r, size_t want);
void mvz_ui_cells_free(struct mvz_ui_cells *c);

/* Calls f for each cell the block [addr, addr + size) overlaps, with the
 * bytes it has there (a block of size 0 counts as 1 byte). */
void mvz_ui_cells_each(const struct mvz_ui_cells *c, uint64_t addr, uint64_t size,
                       void (*f)(void *ctx, size_t cell, uint64_t bytes), void *ctx);

/* Of n blocks (block i at *addr, of *size bytes, as at() gives it), the
 * one with the most bytes in cell `cell`, or -1 when none has any there:
 * the block under the pointer. */
long mvz_ui_cells_pick(const struct mvz_ui_cells *c, size_t cell, size_t n,
                       void (*at)(const void *ctx, size_t i, uint64_t *addr, uint64_t *size),
                       const void *ctx);

/* "cell_bytes", "cells" and "regions" ([first address, first cell]). */
void mvz_ui_cells_put(struct mvz_json *j, const struct mvz_ui_cells *c);

#endif
