/*
 * diff.h - the UI's comparison of two runs (`memviz ui BASE NEW`): the
 * totals side by side, what grew and what shrank by site and by
 * allocating function (matched by name, as `memviz diff` matches them),
 * and a flame graph of the new run whose frames carry the base run's cost
 * too, for a differential colouring.
 */
#ifndef MVZ_UI_DIFF_H
#define MVZ_UI_DIFF_H

#include <stddef.h>

#include "ui/model.h"

/* Each a malloc'd document (length in *len), or NULL when out of memory. */
char *mvz_ui_diff_json(const struct mvz_ui_model *base, const struct mvz_ui_model *new_,
                       enum mvz_cost c, size_t top, size_t *len);
char *mvz_ui_diff_flame_json(const struct mvz_ui_model *base, const struct mvz_ui_model *new_,
                             enum mvz_cost c, double min_fraction, size_t *len);

#endif
