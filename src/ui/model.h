/*
 * model.h - what `memviz ui` knows of a trace, built once when it
 * starts (one replay): the profile, its symbols, the call trees and the
 * heap over time. Each view's query is answered from it as a JSON
 * document sized to what the view draws, never the whole trace
 * (docs/UI.md lists the queries).
 */
#ifndef MVZ_UI_MODEL_H
#define MVZ_UI_MODEL_H

#include <pthread.h>
#include <stddef.h>

#include "analysis/calltree.h"
#include "analysis/profile.h"
#include "analysis/symbols.h"
#include "analysis/timeline.h"

#define MVZ_UI_CACHE 16

/* A document made once and kept: the trace does not change. */
struct mvz_ui_cached {
    char *key, *doc;
    size_t len;
};

struct mvz_ui_model {
    char *path;
    struct mvz_profile p;
    struct mvz_symbols *sym;
    struct mvz_calltree top_down, bottom_up;
    struct mvz_timeline tl;
    pthread_mutex_t build_lock; /* one replay for a query at a time */
    pthread_mutex_t cache_lock; /* cached, ncached, next_evict */
    struct mvz_ui_cached cached[MVZ_UI_CACHE];
    size_t ncached, next_evict;
};

/* Loads path. 0, or -1 with a one-line reason in err. */
int mvz_ui_model_load(struct mvz_ui_model *m, const char *path, char *err, size_t errlen);
void mvz_ui_model_free(struct mvz_ui_model *m);

/* A copy of the document cached under key (length in *len), or NULL. */
char *mvz_ui_cache_get(struct mvz_ui_model *m, const char *key, size_t *len);
/* Keeps a copy of doc under key (the oldest goes when full). */
void mvz_ui_cache_put(struct mvz_ui_model *m, const char *key, const char *doc, size_t len);

/* The documents; each a malloc'd string (length in *len), or NULL when
 * out of memory. */
char *mvz_ui_summary_json(const struct mvz_ui_model *m, size_t *len);
/* The call tree by cost c, its nodes below min_fraction of the whole left
 * out (their cost stays in their parent's inclusive cost), and more if it
 * would still have over max_nodes (the threshold doubles until it fits);
 * bottom_up: from the allocating function out to its callers. */
char *mvz_ui_flame_json(const struct mvz_ui_model *m, enum mvz_cost c, int bottom_up,
                        double min_fraction, size_t max_nodes, size_t *len);
char *mvz_ui_timeline_json(const struct mvz_ui_model *m, size_t *len);

#endif
