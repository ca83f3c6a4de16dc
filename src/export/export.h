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

#include "analysis/callgraph.h"
#include "analysis/profile.h"
#include "analysis/retain.h"
#include "analysis/roots.h"
#include "analysis/symbols.h"

struct mvz_export {
    const char *trace_path;
    struct mvz_profile *p; /* sites, summary, threads of the window */
    struct mvz_symbols *sym;
    enum mvz_cost cost;      /* for formats with one cost per stack */
    uint64_t from_ns, to_ns; /* the window; to_ns = UINT64_MAX: to the end */
    FILE *out;
    /* trimming (mvz_export_stack, mvz_export_site_shown) */
    unsigned depth;                 /* keep the innermost `depth` frames; 0: all */
    int fold_recursion;             /* a run of frames of one function becomes one frame */
    double min_percent;             /* sites under this share of their cost go into one */
    uint64_t total[MVZ_COST_COUNT]; /* every site's costs summed (set by export.c) */
    /* --children: p merges these images (analysis/merge.h); the formats that
     * draw time sum their heaps on one wall clock (mvz_export_heap_points) */
    size_t nimages;
    const char **image_paths;
    const uint64_t *image_starts; /* wall clock, ns */
    /* the peak the formats that draw time mark: the summary's, or for a
     * merged profile the summed heap's highest point (set by
     * mvz_export_heap_points) */
    uint64_t peak_bytes, peak_time_ns;
    /* pprof: a heap snapshot's leak kinds (analysis/leaks.h) as sample
     * types, per stack id: bytes then blocks of each kind; NULL: none */
    const uint64_t (*leak_by_stack)[8];
    size_t leak_nstacks;
    /* a trace recorded with --callgraph, exported whole: its call graph,
     * which dot, callgrind and speedscope write instead (calls.c) */
    const struct mvz_callgraph *g;
    struct mvz_cg_names *names;
};

/* ---- common.c: shared by the writers ---- */
/* An unknown function is named after its module, as `memviz report` shows
 * it ("?? [libfoo.so]"), so that the unknown frames of different modules
 * stay apart. Returns f->function or buf. */
const char *mvz_export_frame_name(const struct mvz_frame *f, char *buf, size_t cap);
/* A stack's symbolized frames, innermost first, as the options trim it:
 * recursion folded, then the innermost x->depth frames kept, with a
 * pseudo-frame in place of the rest ("[outer frames]"); a stack that
 * reached the trace's depth cap ends with "[cut at the depth cap]".
 * Returns how many frames were written (at most max, which must be at
 * least 2). */
size_t mvz_export_stack(const struct mvz_export *x, uint32_t stack, struct mvz_frame *out,
                        size_t max);
/* Whether site s is written on its own for cost c; the sites under
 * --min-percent of c's total go into one pseudo-site, named
 * MVZ_EXPORT_OTHER_SITES. */
int mvz_export_site_shown(const struct mvz_export *x, const struct mvz_site *s, enum mvz_cost c);
#define MVZ_EXPORT_OTHER_SITES "[sites under --min-percent]"
/* A name or path on one line (newlines as spaces). */
void mvz_export_put_clean(FILE *out, const char *s);
/* The callgrind format's first lines (creator, pid, cmd, part, the trace's
 * path), and its events: nevents (name, long name) pairs. */
void mvz_export_callgrind_head(FILE *out, const struct mvz_export *x);
void mvz_export_callgrind_events(FILE *out, const char *const (*events)[2], int nevents);
/* A speedscope file's opening: the object begun, with its schema, name (the
 * trace's path), exporter and first profile; the writer goes on with
 * "shared" (the frames) and "profiles". */
struct mvz_json;
void mvz_export_speedscope_head(struct mvz_json *j, const struct mvz_export *x);
/* The heap at npoints evenly spaced times of the window (clamped to the
 * run), and the peak to mark in x->peak_*; 0, or -1 after printing an
 * error. Free tl with mvz_timeline_free. */
struct mvz_timeline;
int mvz_export_heap_points(struct mvz_export *x, size_t npoints, struct mvz_timeline *tl);

/* Each returns 0, or -1 after printing a one-line "memviz: ..." error. */
int mvz_export_collapsed(struct mvz_export *x);
int mvz_export_pprof(struct mvz_export *x);
int mvz_export_massif(struct mvz_export *x);
int mvz_export_callgrind(struct mvz_export *x);
int mvz_export_speedscope(struct mvz_export *x);
int mvz_export_chrome(struct mvz_export *x);
/* calls.c: the call graph (x->g) */
int mvz_export_callgraph_dot(struct mvz_export *x);
int mvz_export_callgraph_callgrind(struct mvz_export *x);
int mvz_export_callgraph_speedscope(struct mvz_export *x);

/* --cost retained (retained.c): a heap snapshot's dominator tree as a
 * flame graph, collapsed or speedscope. Of x it uses sym, out, depth (the
 * dominators shown under a root; 0: 128) and trace_path. */
struct mvz_export_retained {
    const struct mvz_snapshot *snap;
    const struct mvz_retain *r;
    const struct mvz_root_groups *g;
};
int mvz_export_retained(struct mvz_export *x, const struct mvz_export_retained *rx, int speedscope);

#endif
