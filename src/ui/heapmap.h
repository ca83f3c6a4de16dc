/*
 * heapmap.h - the heap map of a snapshot: its live blocks in address
 * order, the address space's empty stretches left out, drawn as a grid of
 * cells, each coloured by the allocation site holding most of its bytes;
 * and the block under a cell, for the hover.
 */
#ifndef MVZ_UI_HEAPMAP_H
#define MVZ_UI_HEAPMAP_H

#include <stddef.h>
#include <stdint.h>

#include "ui/model.h"

/* Under the model's build lock. Snapshot id (UINT32_MAX: the one at exit,
 * else the last complete one) in about ncells cells. Each a malloc'd
 * document, or NULL with a reason in err. */
char *mvz_ui_heapmap_json(struct mvz_ui_model *m, uint32_t id, size_t ncells, size_t *len,
                          char *err, size_t errlen);
/* The block holding most of cell `cell` of that map (its address, size,
 * stack), or an empty cell. */
char *mvz_ui_heapmap_block_json(struct mvz_ui_model *m, uint32_t id, size_t ncells, size_t cell,
                                size_t *len, char *err, size_t errlen);

#endif
