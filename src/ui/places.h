/*
 * places.h - the heap as an address space over time, for a trace
 * recorded with `memviz run --addresses`: the heap map at any moment
 * (and the block under a cell, with its stack and age), the maps of
 * evenly spaced moments to play one after another, and the heat map
 * (per address cell and slice of time: allocations made there, and the
 * live bytes there at the slice's end). All share one layout, the
 * address ranges the whole run used (cells.h), so that maps of different
 * moments line up.
 *
 * The layout and the sites' colours (the top 15 sites by bytes allocated
 * over the run) come from one replay, the first time a view asks, and
 * are kept in the model; each view is then one more replay (analysis/
 * placement.h). Under the model's build lock.
 */
#ifndef MVZ_UI_PLACES_H
#define MVZ_UI_PLACES_H

#include <stddef.h>
#include <stdint.h>

#include "ui/model.h"

/* The map at time t in about ncells cells: "time_ns", "blocks",
 * "cell_bytes", "cells", "regions", "sites", "colour", "fill" as the
 * snapshot's map (heapmap.h). Each a malloc'd document, or NULL with a
 * reason in err. */
char *mvz_ui_moment_json(struct mvz_ui_model *m, uint64_t t, size_t ncells, size_t *len, char *err,
                         size_t errlen);
/* The block with the most bytes in cell `cell` of that map. */
char *mvz_ui_moment_block_json(struct mvz_ui_model *m, uint64_t t, size_t ncells, size_t cell,
                               size_t *len, char *err, size_t errlen);
/* nframes maps, at the ends of nframes equal slices of the run:
 * "times", the layout, "sites", and "colour" and "fill" per frame. */
char *mvz_ui_frames_json(struct mvz_ui_model *m, size_t nframes, size_t ncells, size_t *len,
                         char *err, size_t errlen);
/* The heat map: nslices equal slices of the run by about ncells cells:
 * "times" (each slice's end), the layout, and per slice "allocations"
 * (per cell: allocations whose block touches it) and "live_bytes" (per
 * cell: bytes of live blocks there at the slice's end). */
char *mvz_ui_heatmap_json(struct mvz_ui_model *m, size_t nslices, size_t ncells, size_t *len,
                          char *err, size_t errlen);

#endif
