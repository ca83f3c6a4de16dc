/*
 * export.h - writers of the formats other tools read, one file per format.
 * Each gets a loaded profile (the whole run or a --from/--to window) and
 * the trace's symbols, and writes to x->out. Formats that draw the heap
 * over time replay the trace again through src/analysis/timeline.h.
 */
#ifndef MVZ_EXPORT_EXPORT_H
#define MVZ_EXPORT_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/profile.h"
#include "analysis/symbols.h"

struct mvz_export {
    const char *trace_path;
    struct mvz_profile *p; /* sites, summary, threads of the window */
    struct mvz_symbols *sym;
    enum mvz_cost cost;      /* for formats with one cost per stack */
    uint64_t from_ns, to_ns; /* the window; to_ns = UINT64_MAX: to the end */
    FILE *out;
};

/* Each returns 0, or -1 after printing a one-line "memviz: ..." error. */
int mvz_export_collapsed(const struct mvz_export *x);
int mvz_export_pprof(const struct mvz_export *x);
int mvz_export_massif(const struct mvz_export *x);
int mvz_export_callgrind(const struct mvz_export *x);
int mvz_export_speedscope(const struct mvz_export *x);
int mvz_export_chrome(const struct mvz_export *x);

#endif
