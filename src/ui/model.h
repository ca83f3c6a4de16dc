/*
 * model.h - what `memviz ui` knows of a trace, built once when it
 * starts (one replay): the profile, its symbols, the call trees and the
 * heap over time; and the same for the last few windows of the run asked
 * for. Each view's query is answered from it as a JSON
 * document sized to what the view draws, never the whole trace
 * (docs/UI.md lists the queries).
 */
#ifndef MVZ_UI_MODEL_H
#define MVZ_UI_MODEL_H

#include <pthread.h>
#include <stddef.h>

#include "analysis/calltree.h"
#include "analysis/profile.h"
#include "analysis/snapshot.h"
#include "analysis/symbols.h"
#include "analysis/timeline.h"

#define MVZ_UI_CACHE 16
/* Traces of this size or more get an index when first opened, and at the
 * end of `memviz run` (replaying 64 MiB takes seconds; analysis/index.h);
 * MEMVIZ_INDEX_FROM=BYTES sets another size (the tests' small traces). */
#define MVZ_UI_INDEX_FROM (64ull << 20)
uint64_t mvz_ui_index_from(void);

/* A document made once and kept: the trace does not change. */
struct mvz_ui_cached {
    char *key, *doc;
    size_t len;
};

#define MVZ_UI_WINDOWS 4

/* The run, or a window of it: its profile and call trees. */
struct mvz_ui_view {
    uint64_t from_ns, to_ns; /* the whole run: 0, UINT64_MAX */
    struct mvz_profile p;
    struct mvz_calltree top_down, bottom_up;
};

struct mvz_ui_model {
    char *path;
    struct mvz_ui_view whole;
    struct mvz_symbols *sym; /* the whole run's: every window's stacks are in it */
    struct mvz_timeline tl;
    struct mvz_ui_view *windows[MVZ_UI_WINDOWS]; /* the last windows asked, under build_lock */
    size_t nwindows;
    pthread_mutex_t build_lock; /* one replay for a query at a time */
    pthread_mutex_t cache_lock; /* cached, ncached, next_evict */
    struct mvz_ui_cached cached[MVZ_UI_CACHE];
    size_t ncached, next_evict;
    struct mvz_snapshot snap; /* the heap map's, under build_lock */
    int snap_loaded;
    uint64_t *snap_born;         /* per block of snap: when it was allocated; NULL until asked */
    int from_index;              /* the whole run came from the trace's index */
    pthread_mutex_t snaps_lock;  /* snaps, nsnaps, snaps_read */
    struct mvz_snap_info *snaps; /* the trace's snapshots, read once */
    size_t nsnaps;
    int snaps_read;
    struct mvz_ui_survey *places; /* the address ranges the run used (places.c), under
                                     build_lock; NULL until asked */
};

/* Loads path. 0, or -1 with a one-line reason in err. */
int mvz_ui_model_load(struct mvz_ui_model *m, const char *path, char *err, size_t errlen);
void mvz_ui_model_free(struct mvz_ui_model *m);
/* The trace's snapshots (analysis/snapshot.h), read once: a copy, which
 * the caller frees with mvz_snap_infos_free. */
int mvz_ui_snap_list(struct mvz_ui_model *m, struct mvz_snap_info **out, size_t *n, char *err,
                     size_t errlen);
/* Writes trace path's index (analysis/index.h) as the model reads it: one
 * replay. 0, or -1 with a reason in err. */
int mvz_ui_index_write(const char *path, char *err, size_t errlen);
/* Frees m->places (places.c). */
void mvz_ui_places_free(struct mvz_ui_model *m);

/* The view of [from_ns, to_ns] (0, UINT64_MAX: the whole run), made by a
 * replay unless among the last few asked. Under build_lock: the view may
 * go when the lock is let go. NULL with a reason in err. */
const struct mvz_ui_view *mvz_ui_window(struct mvz_ui_model *m, uint64_t from_ns, uint64_t to_ns,
                                        char *err, size_t errlen);

/* A copy of the document cached under key (length in *len), or NULL. */
char *mvz_ui_cache_get(struct mvz_ui_model *m, const char *key, size_t *len);
/* Keeps a copy of doc under key (the oldest goes when full). */
void mvz_ui_cache_put(struct mvz_ui_model *m, const char *key, const char *doc, size_t len);

/* The documents; each a malloc'd string (length in *len), or NULL when
 * out of memory. */
char *mvz_ui_summary_json(const struct mvz_ui_model *m, const struct mvz_ui_view *v, size_t *len);
/* The call tree by cost c, its nodes below min_fraction of the whole left
 * out (their cost stays in their parent's inclusive cost), and more if it
 * would still have over max_nodes (the threshold doubles until it fits);
 * bottom_up: from the allocating function out to its callers. */
char *mvz_ui_flame_json(const struct mvz_ui_view *v, enum mvz_cost c, int bottom_up,
                        double min_fraction, size_t max_nodes, size_t *len);
char *mvz_ui_timeline_json(const struct mvz_ui_model *m, size_t *len);
/* callgraph.c: the call graph (--callgraph traces), cached; NULL with a
 * reason in err. */
char *mvz_ui_callgraph_json(struct mvz_ui_model *m, size_t *len, char *err, size_t errlen);

#endif
