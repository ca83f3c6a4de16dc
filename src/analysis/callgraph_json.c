/*
 * callgraph_json.c - the call graph as JSON: what `memviz callgraph
 * --json` prints and the web UI's /api/callgraph serves (docs/CALLGRAPH.md
 * has the shape).
 */
#include "analysis/callgraph.h"

#include <stdlib.h>

#include "util/json.h"

struct cg_json {
    const struct mvz_profile *p;
    const struct mvz_callgraph *g;
    const struct mvz_cg_names *names;
    const struct mvz_cg_json_opts *o;
};

static void json_alloc(struct mvz_json *j, const struct mvz_cg_alloc *a)
{
    mvz_json_put_uint(j, "allocations", a->allocations);
    mvz_json_put_uint(j, "bytes", a->bytes);
    mvz_json_put_uint(j, "peak_bytes", a->at_peak);
    mvz_json_put_uint(j, "leaked_bytes", a->leaked);
    mvz_json_put_uint(j, "leaked_blocks", a->leaked_blocks);
    mvz_json_put_uint(j, "temporary", a->temporary);
}

static void json_total(struct mvz_json *j, const struct mvz_cg_alloc *a)
{
    mvz_json_key(j, "total");
    mvz_json_begin_object(j);
    json_alloc(j, a);
    mvz_json_end_object(j);
}

static void json_functions(struct cg_json *x, struct mvz_json *j)
{
    mvz_json_key(j, "functions");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < x->g->nfns; i++) {
        const struct mvz_cg_fn *f = &x->g->fns[i];
        const struct mvz_cg_place *pl = &x->names->fns[i];
        if (x->o->function && !mvz_cg_name_matches(pl->function, x->o->function))
            continue;
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "name", pl->function);
        mvz_json_put_string(j, "file", pl->file);
        mvz_json_put_uint(j, "line", pl->line);
        mvz_json_put_string(j, "module", pl->module);
        mvz_json_put_uint(j, "address", f->fn);
        mvz_json_put_uint(j, "calls", f->calls);
        mvz_json_put_uint(j, "inclusive_ns", f->ns);
        mvz_json_put_uint(j, "self_ns", f->self_ns);
        json_alloc(j, &f->self);
        json_total(j, &f->total);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void json_edges(struct cg_json *x, struct mvz_json *j)
{
    mvz_json_key(j, "edges");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < x->g->nedges; i++) {
        const struct mvz_cg_edge *e = &x->g->edges[i];
        const char *caller = mvz_cg_fn_name(x->names, e->caller),
                   *callee = mvz_cg_fn_name(x->names, e->callee);
        if (x->o->function && !mvz_cg_name_matches(caller, x->o->function) &&
            !mvz_cg_name_matches(callee, x->o->function))
            continue;
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "caller", caller);
        mvz_json_put_string(j, "callee", callee);
        mvz_json_put_uint(j, "calls", e->calls);
        mvz_json_key(j, "sites");
        mvz_json_begin_array(j);
        for (size_t k = 0; k < e->nsites; k++) {
            struct mvz_cg_site_place d = mvz_cg_site_place(x->names, e->caller, &e->sites[k]);
            mvz_json_begin_object(j);
            mvz_json_put_string(j, "file", d.file);
            mvz_json_put_uint(j, "line", d.line);
            mvz_json_put_uint(j, "address", e->sites[k].site);
            mvz_json_put_uint(j, "calls", e->sites[k].calls);
            mvz_json_key(j, "inlined");
            mvz_json_bool(j, d.inlined);
            mvz_json_put_string(j, "via", d.via);
            mvz_json_end_object(j);
        }
        mvz_json_end_array(j);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

/* Whether a context is worth its place (o->min_share). */
static int shown(const struct cg_json *x, const struct mvz_cg_ctx *c)
{
    const struct mvz_cg_ctx *root = &x->g->ctx[0];
    double m = x->o->min_share;
    return m <= 0 || c->ns >= m * (double)root->ns ||
           (c->total.bytes && c->total.bytes >= m * (double)root->total.bytes) ||
           (c->total.allocations && c->total.allocations >= m * (double)root->total.allocations);
}

/* The first context shown among c and its next siblings; 0: none. */
static uint32_t shown_from(const struct cg_json *x, uint32_t c)
{
    while (c && !shown(x, &x->g->ctx[c]))
        c = x->g->ctx[c].next_sibling;
    return c;
}

/* The tree to --depth, depth first without recursion (a recursive program's
 * tree is as deep as its recursion). */
static void json_contexts(struct cg_json *x, struct mvz_json *j)
{
    uint32_t *next = malloc((x->g->nctx + 1) * sizeof(*next)); /* per depth: the next sibling */
    if (!next)
        return;
    mvz_json_key(j, "contexts");
    uint32_t c = 0;
    size_t depth = 0;
    for (;;) {
        const struct mvz_cg_ctx *ctx = &x->g->ctx[c];
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "function", mvz_cg_fn_name(x->names, ctx->fn));
        mvz_json_put_uint(j, "calls", ctx->calls);
        mvz_json_put_uint(j, "inclusive_ns", ctx->ns);
        mvz_json_put_uint(j, "self_ns", ctx->self_ns);
        json_alloc(j, &ctx->self);
        json_total(j, &ctx->total);
        mvz_json_key(j, "children");
        mvz_json_begin_array(j);
        uint32_t child = shown_from(x, ctx->first_child);
        if (child && ctx->depth < x->o->depth) {
            next[depth++] = shown_from(x, ctx->next_sibling);
            c = child;
            continue;
        }
        /* close c, then every ancestor whose children are all written */
        uint32_t sib = c ? shown_from(x, ctx->next_sibling) : 0;
        mvz_json_end_array(j);
        mvz_json_end_object(j);
        while (!sib && depth) {
            sib = next[--depth];
            mvz_json_end_array(j);
            mvz_json_end_object(j);
        }
        if (!sib)
            break;
        c = sib;
    }
    free(next);
}

void mvz_callgraph_json(struct mvz_json *jp, const struct mvz_profile *p,
                        const struct mvz_callgraph *g, const struct mvz_cg_names *names,
                        const struct mvz_cg_json_opts *o)
{
    struct cg_json xs = {p, g, names, o}, *x = &xs;
    struct mvz_json j = *jp;
    mvz_json_begin_object(&j);
    mvz_json_put_uint(&j, "memviz_callgraph", 1);
    mvz_json_put_string(&j, "exe", x->p->trace.exe);
    mvz_json_put_uint(&j, "pid", (uint64_t)x->p->trace.pid);
    mvz_json_key(&j, "threads");
    mvz_json_begin_array(&j);
    const struct mvz_cg_raw *raw = x->p->trace.callgraph;
    for (size_t i = 0; i < raw->n; i++) {
        if (x->o->tid && raw->threads[i].tid != x->o->tid)
            continue;
        mvz_json_begin_object(&j);
        mvz_json_put_uint(&j, "tid", (uint64_t)raw->threads[i].tid);
        mvz_json_put_uint(&j, "contexts", raw->threads[i].n - 1);
        mvz_json_key(&j, "ended");
        mvz_json_bool(&j, raw->threads[i].ended);
        mvz_json_end_object(&j);
    }
    mvz_json_end_array(&j);
    mvz_json_put_uint(&j, "calls", x->g->calls);
    mvz_json_put_uint(&j, "unmatched_exits", x->g->unmatched);
    mvz_json_put_uint(&j, "uncounted_calls", x->g->untracked);
    mvz_json_put_uint(&j, "allocations_outside", x->g->allocations_outside);
    json_functions(x, &j);
    json_edges(x, &j);
    if (!x->o->function)
        json_contexts(x, &j);
    mvz_json_end_object(&j);
    *jp = j;
}
