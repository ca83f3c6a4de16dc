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

/* ---- common.c: shared by the writers ---- */
/* An unknown function is named after its module, as `memviz report` shows
 * it ("?? [libfoo.so]"), so that the unknown frames of different modules
 * stay apart. Returns f->function or buf. */
const char *mvz_export_frame_name(const struct mvz_frame *f, char *buf, size_t cap);
/* The heap at npoints evenly spaced times of the window (clamped to the
 * run); 0, or -1 after printing an error. Free tl with mvz_timeline_free. */
struct mvz_timeline;
int mvz_export_heap_points(const struct mvz_export *x, size_t npoints, struct mvz_timeline *tl);

/* Each returns 0, or -1 after printing a one-line "memviz: ..." error. */
int mvz_export_collapsed(const struct mvz_export *x);
int mvz_export_pprof(const struct mvz_export *x);
int mvz_export_massif(const struct mvz_export *x);
int mvz_export_callgrind(const struct mvz_export *x);
int mvz_export_speedscope(const struct mvz_export *x);
int mvz_export_chrome(const struct mvz_export *x);

#endif
