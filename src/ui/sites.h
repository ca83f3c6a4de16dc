/*
 * sites.h - the UI's tables over a view of the run (the whole, or a
 * window): the top allocation sites by a cost with their stacks; the
 * allocations by size, by allocator function and by thread; and one
 * function's callers and callees.
 */
#ifndef MVZ_UI_SITES_H
#define MVZ_UI_SITES_H

#include <stddef.h>

#include "ui/model.h"

/* Each a malloc'd document (length in *len), or NULL when out of memory. */
char *mvz_ui_sites_json(const struct mvz_ui_model *m, const struct mvz_ui_view *v, enum mvz_cost c,
                        size_t top, size_t *len);
char *mvz_ui_breakdown_json(const struct mvz_ui_model *m, const struct mvz_ui_view *v, size_t *len);
/* Function `name` (as the call trees name it): its inclusive and self
 * cost c, each stack counted once however often it recurses, and its
 * callers' and callees' shares. */
char *mvz_ui_function_json(const struct mvz_ui_view *v, const char *name, enum mvz_cost c,
                           size_t *len);

#endif
