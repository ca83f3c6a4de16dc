/*
 * series.h - the heap over time split by what allocated it: the live
 * bytes of the top groups (sites, allocating functions or modules) at
 * each point of the model's timeline, for the UI's stacked areas.
 */
#ifndef MVZ_UI_SERIES_H
#define MVZ_UI_SERIES_H

#include <stddef.h>

#include "ui/model.h"

enum mvz_ui_by { MVZ_UI_BY_SITE, MVZ_UI_BY_FUNCTION, MVZ_UI_BY_MODULE };

/* "site", "function", "module"; -1 when none of them. */
int mvz_ui_by_parse(const char *name);
const char *mvz_ui_by_name(enum mvz_ui_by by);

/* The top groups by bytes live at the peak (at most top), each a series
 * over the model's points, and "other": the rest of the heap. A replay of
 * the trace the first time; the document is kept for the next asking.
 * malloc'd (length in *len), NULL with a reason in err. */
char *mvz_ui_series_json(struct mvz_ui_model *m, enum mvz_ui_by by, size_t top, size_t *len,
                         char *err, size_t errlen);

#endif
