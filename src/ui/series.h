/*
 * series.h - the heap over time split by what allocated it: the live
 * bytes of the top groups (sites, allocating functions or modules) at
 * each point of the model's timeline, for the UI's stacked areas.
 */
#ifndef MVZ_UI_SERIES_H
#define MVZ_UI_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "ui/model.h"

enum mvz_ui_by { MVZ_UI_BY_SITE, MVZ_UI_BY_FUNCTION, MVZ_UI_BY_MODULE };

/* "site", "function", "module"; -1 when none of them. */
int mvz_ui_by_parse(const char *name);
const char *mvz_ui_by_name(enum mvz_ui_by by);

/* How the top groups are chosen: by their bytes live at the peak, their
 * average live bytes over the run, or their live bytes at a moment. */
enum mvz_ui_rank { MVZ_UI_RANK_PEAK, MVZ_UI_RANK_AVERAGE, MVZ_UI_RANK_AT };

struct mvz_ui_series_query {
    enum mvz_ui_by by;
    size_t top;
    enum mvz_ui_rank rank;
    uint64_t at_ns;       /* MVZ_UI_RANK_AT */
    const char *module;   /* only sites allocating in this module (file name), or NULL */
    const char *function; /* only sites allocating in this function, or NULL */
    const char *add;      /* groups whose name holds this text come first, or NULL */
};

/* "peak", "average", "at"; -1 when none of them. */
int mvz_ui_rank_parse(const char *name);

/* The top groups (at most q->top) of the sites q lets in, each a series
 * over the model's points, and "other": the rest of the heap. A replay of
 * the trace the first time (two to rank by average); the document is
 * kept for the next asking. malloc'd (length in *len), NULL with a reason
 * in err. */
char *mvz_ui_series_json(struct mvz_ui_model *m, const struct mvz_ui_series_query *q, size_t *len,
                         char *err, size_t errlen);

#endif
