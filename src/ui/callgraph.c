/*
 * callgraph.c - the web UI's call graph (/api/callgraph): the document of
 * `memviz callgraph --json`, its context tree cut to what a flame graph
 * can show, or {"callgraph": false} for a trace recorded without
 * --callgraph. Made once and cached; from the model's whole-run profile
 * when it replayed the trace, else (opened from the index) by a replay of
 * its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/callgraph.h"
#include "ui/doc.h"
#include "ui/model.h"

#define TREE_DEPTH 128
#define MIN_SHARE 0.0005 /* contexts under 1/2000 of the run's time, bytes and allocations */

static const char none[] = "{\"callgraph\":false}";

static char *no_callgraph(size_t *len)
{
    *len = sizeof(none) - 1;
    return strdup(none);
}

static char *render(struct mvz_symbols *sym, const struct mvz_profile *p, size_t *len, char *err,
                    size_t errlen)
{
    struct mvz_callgraph g;
    struct mvz_cg_names names = {0};
    struct mvz_ui_doc d;
    char *doc = NULL;
    if (mvz_callgraph_build(&g, p, 0) < 0) {
        snprintf(err, errlen, "out of memory building the call graph");
        return NULL;
    }
    if (sym && mvz_cg_names_init(&names, &g, sym) == 0 && mvz_ui_doc_open(&d) == 0) {
        struct mvz_cg_json_opts o = {NULL, 0, TREE_DEPTH, MIN_SHARE};
        mvz_callgraph_json(&d.j, p, &g, &names, &o);
        doc = mvz_ui_doc_close(&d, len);
    }
    if (!doc)
        snprintf(err, errlen, "out of memory");
    mvz_cg_names_free(&names);
    mvz_callgraph_free(&g);
    return doc;
}

static char *build(struct mvz_ui_model *m, size_t *len, char *err, size_t errlen)
{
    if (m->whole.p.trace.callgraph)
        return render(m->sym, &m->whole.p, len, err, errlen);
    if (!m->from_index) /* replayed: the trace has none */
        return no_callgraph(len);
    struct mvz_profile *p = calloc(1, sizeof(*p));
    char *doc = NULL;
    if (!p) {
        snprintf(err, errlen, "out of memory");
    } else if (mvz_profile_load(p, m->path, err, errlen) == 0 && !p->trace.callgraph) {
        doc = no_callgraph(len);
    } else if (!*err) { /* the index's symbols have its stacks' frames only */
        struct mvz_symbols *sym = mvz_symbols_new(&p->trace);
        doc = render(sym, p, len, err, errlen);
        if (sym)
            mvz_symbols_free(sym);
    }
    if (p)
        mvz_profile_free(p);
    free(p);
    return doc;
}

char *mvz_ui_callgraph_json(struct mvz_ui_model *m, size_t *len, char *err, size_t errlen)
{
    *err = 0;
    pthread_mutex_lock(&m->build_lock);
    char *doc = mvz_ui_cache_get(m, "callgraph", len);
    if (!doc && (doc = build(m, len, err, errlen)))
        mvz_ui_cache_put(m, "callgraph", doc, *len);
    pthread_mutex_unlock(&m->build_lock);
    if (!doc && !*err)
        snprintf(err, errlen, "out of memory");
    return doc;
}
