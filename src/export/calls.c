/*
 * calls.c - the call graph of a trace recorded with --callgraph
 * (analysis/callgraph.h) in three formats: DOT (graphviz draws it), the
 * callgrind format with real call counts (callgrind_annotate and
 * KCachegrind read it) and speedscope's (time and allocations by calling
 * context).
 *
 * DOT: a node per function (its calls, time, allocations with its
 * callees'), an edge per caller -> callee with its calls and sites;
 * dashed when code that was not instrumented made the call, dotted when
 * the callee was inlined.
 *
 * callgrind: events Ns (time), then the allocation metrics. A function's
 * self costs are at its first line; each call site is a calls= line with
 * the calls made there and, as its cost, their inclusive time and
 * allocations (recursive calls' include each other's, as callgrind's own
 * do). The root is a function, "(root)", whose calls are the entry points.
 *
 * speedscope: a "sampled" profile per metric in which every calling
 * context is one sample, weighted by its self value.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "export/export.h"
#include "util/fmt.h"
#include "util/json.h"

/* ---- DOT ---- */

/* Writes s inside a DOT double-quoted string. */
static void dot_put(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
}

static void dot_node(const struct mvz_export *x, size_t i)
{
    const struct mvz_cg_fn *f = &x->g->fns[i];
    const struct mvz_cg_place *pl = &x->names->fns[i];
    char a[32], b[32], c[32], d[32], e[32], line[400];
    fprintf(x->out, "  f%zu [label=\"", i);
    dot_put(x->out, pl->function);
    if (pl->file) {
        snprintf(line, sizeof(line), "\n%s:%u", mvz_base_name(pl->file), pl->line);
        dot_put(x->out, line);
    }
    snprintf(line, sizeof(line), "\n%s call(s), %s (self %s)",
             mvz_fmt_count(f->calls, a, sizeof(a)), mvz_fmt_duration(f->ns, b, sizeof(b)),
             mvz_fmt_duration(f->self_ns, c, sizeof(c)));
    dot_put(x->out, line);
    if (f->total.allocations) {
        snprintf(line, sizeof(line), "\n%s allocation(s), %s (with callees)",
                 mvz_fmt_count(f->total.allocations, d, sizeof(d)),
                 mvz_fmt_bytes(f->total.bytes, e, sizeof(e)));
        dot_put(x->out, line);
    }
    fputs("\"];\n", x->out);
}

static void dot_edge(const struct mvz_export *x, const struct mvz_cg_edge *e)
{
    char a[32], line[400];
    const struct mvz_cg_fn *from = e->caller ? mvz_callgraph_fn(x->g, e->caller) : NULL;
    const struct mvz_cg_fn *to = mvz_callgraph_fn(x->g, e->callee);
    if (from)
        fprintf(x->out, "  f%zu -> f%zu [label=\"", (size_t)(from - x->g->fns),
                (size_t)(to - x->g->fns));
    else
        fprintf(x->out, "  root -> f%zu [label=\"", (size_t)(to - x->g->fns));
    fprintf(x->out, "%s call(s)", mvz_fmt_count(e->calls, a, sizeof(a)));
    int via = 0, inlined = 0;
    for (size_t k = 0; k < e->nsites; k++) {
        struct mvz_cg_site_place d = mvz_cg_site_place(x->names, e->caller, &e->sites[k]);
        via |= d.via != NULL;
        inlined |= d.inlined;
        if (k == 4) {
            snprintf(line, sizeof(line), "\n(%zu more sites)", e->nsites - k);
            dot_put(x->out, line);
            break;
        }
        if (e->nsites == 1 && !d.file)
            continue;
        snprintf(line, sizeof(line), "\n%s%s:%u x%" PRIu64, d.inlined ? "inlined " : "",
                 d.file ? mvz_base_name(d.file) : "?", d.line, e->sites[k].calls);
        dot_put(x->out, line);
    }
    unsigned width = 1;
    for (uint64_t c = e->calls; c >= 10 && width < 8; c /= 10)
        width++;
    fprintf(x->out, "\", penwidth=%u%s];\n", width,
            via       ? ", style=dashed"
            : inlined ? ", style=dotted"
                      : "");
}

int mvz_export_callgraph_dot(struct mvz_export *x)
{
    fputs("digraph callgraph {\n  graph [label=\"", x->out);
    dot_put(x->out, x->p->trace.exe ? x->p->trace.exe : x->trace_path);
    fputs(" (memviz callgraph)\", labelloc=t];\n"
          "  node [shape=box, fontname=\"monospace\", fontsize=10];\n"
          "  edge [fontname=\"monospace\", fontsize=9];\n"
          "  root [label=\"(root)\", shape=ellipse];\n",
          x->out);
    for (size_t i = 0; i < x->g->nfns; i++)
        dot_node(x, i);
    for (size_t i = 0; i < x->g->nedges; i++)
        dot_edge(x, &x->g->edges[i]);
    fputs("}\n", x->out);
    return ferror(x->out) ? -1 : 0;
}

/* ---- callgrind ---- */

enum { EV_NS, EV_ALLOCS, EV_BYTES, EV_PEAK, EV_LEAKED, EV_TEMPORARY, NEV };

static const char *const event_names[NEV][2] = {
    {"Ns", "time, ns"},
    {"Allocations", "allocation calls"},
    {"AllocBytes", "bytes allocated"},
    {"PeakBytes", "bytes live at the heap peak"},
    {"LeakedBytes", "bytes still live at the end"},
    {"Temporary", "temporary allocations"},
};

static void put_costs(FILE *out, unsigned line, uint64_t ns, const struct mvz_cg_alloc *a,
                      uint64_t *sum)
{
    uint64_t v[NEV] = {ns, a->allocations, a->bytes, a->at_peak, a->leaked, a->temporary};
    fprintf(out, "%u", line);
    for (int e = 0; e < NEV; e++) {
        fprintf(out, " %" PRIu64, v[e]);
        if (sum)
            sum[e] += v[e];
    }
    fputc('\n', out);
}

/* fl= and fn= (or cfl= and cfn=) of fn. */
static void put_function(FILE *out, const struct mvz_cg_place *pl, const char *prefix)
{
    fprintf(out, "%sob=", prefix);
    mvz_export_put_clean(out, pl->module ? pl->module : "???");
    fprintf(out, "\n%sfl=", prefix);
    mvz_export_put_clean(out, pl->file ? pl->file : "???");
    fprintf(out, "\n%sfn=", prefix);
    mvz_export_put_clean(out, pl->function);
    fputc('\n', out);
}

/* One function's self costs and its calls (fn 0: the root). */
static void callgrind_function(const struct mvz_export *x, uint64_t fn, uint64_t *sum)
{
    FILE *out = x->out;
    struct mvz_cg_place pl = mvz_cg_fn_place(x->names, fn);
    const struct mvz_cg_fn *f = fn ? mvz_callgraph_fn(x->g, fn) : NULL;
    fputc('\n', out);
    put_function(out, &pl, "");
    if (f)
        put_costs(out, pl.line, f->self_ns, &f->self, sum);
    else
        put_costs(out, 0, 0, &x->g->ctx[0].self, sum);
    for (size_t i = 0; i < x->g->nedges; i++) {
        const struct mvz_cg_edge *e = &x->g->edges[i];
        if (e->caller != fn)
            continue;
        struct mvz_cg_place callee = mvz_cg_fn_place(x->names, e->callee);
        for (size_t k = 0; k < e->nsites; k++) {
            struct mvz_cg_site_place d = mvz_cg_site_place(x->names, fn, &e->sites[k]);
            /* a position in the caller's file: a site elsewhere (in code
             * that was not instrumented) is put at the caller's line */
            int here = d.file && pl.file && !strcmp(d.file, pl.file) && !d.via;
            put_function(out, &callee, "c");
            fprintf(out, "calls=%" PRIu64 " %u\n", e->sites[k].calls, callee.line);
            put_costs(out, here ? d.line : pl.line, e->sites[k].ns, &e->sites[k].total, NULL);
        }
    }
}

int mvz_export_callgraph_callgrind(struct mvz_export *x)
{
    FILE *out = x->out;
    mvz_export_callgrind_head(out, x);
    fputs("desc: The call graph (memviz run --callgraph)\n", out);
    mvz_export_callgrind_events(out, event_names, NEV);
    const struct mvz_cg_ctx *root = &x->g->ctx[0];
    fprintf(out,
            "summary: %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
            root->ns, root->total.allocations, root->total.bytes, root->total.at_peak,
            root->total.leaked, root->total.temporary);
    uint64_t sum[NEV] = {0};
    callgrind_function(x, 0, sum);
    for (size_t i = 0; i < x->g->nfns; i++)
        callgrind_function(x, x->g->fns[i].fn, sum);
    fputs("\ntotals:", out);
    for (int e = 0; e < NEV; e++)
        fprintf(out, " %" PRIu64, sum[e]);
    fputc('\n', out);
    return ferror(out) ? -1 : 0;
}

/* ---- speedscope ---- */

enum { SP_TIME, SP_BYTES, SP_ALLOCS, SP_COUNT };

static uint64_t sp_value(const struct mvz_cg_ctx *c, int what)
{
    return what == SP_TIME ? c->self_ns : what == SP_BYTES ? c->self.bytes : c->self.allocations;
}

/* Index of ctx's function among the frames: g->fns's, the root last. */
static size_t sp_frame(const struct mvz_export *x, const struct mvz_cg_ctx *c)
{
    return c->fn ? (size_t)(mvz_callgraph_fn(x->g, c->fn) - x->g->fns) : x->g->nfns;
}

/* Every context with a value, depth first, its path of frames from the
 * outermost; the weights when weights is set, else the samples. */
static void sp_walk(const struct mvz_export *x, struct mvz_json *j, int what, int weights,
                    size_t *path)
{
    const struct mvz_callgraph *g = x->g;
    uint32_t c = 0;
    size_t depth = 0;
    for (;;) {
        const struct mvz_cg_ctx *ctx = &g->ctx[c];
        path[depth] = sp_frame(x, ctx);
        uint64_t v = sp_value(ctx, what);
        if (v && weights) {
            mvz_json_uint(j, v);
        } else if (v) {
            mvz_json_begin_array(j);
            for (size_t i = c ? 1 : 0; i <= depth; i++) /* the root only for its own */
                mvz_json_uint(j, path[i]);
            mvz_json_end_array(j);
        }
        if (ctx->first_child) {
            c = ctx->first_child;
            depth++;
            continue;
        }
        while (c && !g->ctx[c].next_sibling) {
            c = g->ctx[c].parent;
            depth--;
        }
        if (!c)
            break;
        c = g->ctx[c].next_sibling;
    }
}

static void sp_profile(const struct mvz_export *x, struct mvz_json *j, int what, size_t *path)
{
    static const char *const names[SP_COUNT] = {"time (self, by calling context)",
                                                "bytes allocated (by calling context)",
                                                "allocation calls (by calling context)"};
    static const char *const units[SP_COUNT] = {"nanoseconds", "bytes", "none"};
    uint64_t total = 0;
    for (size_t i = 0; i < x->g->nctx; i++)
        total += sp_value(&x->g->ctx[i], what);
    mvz_json_begin_object(j);
    mvz_json_put_string(j, "type", "sampled");
    mvz_json_put_string(j, "name", names[what]);
    mvz_json_put_string(j, "unit", units[what]);
    mvz_json_put_uint(j, "startValue", 0);
    mvz_json_put_uint(j, "endValue", total);
    mvz_json_key(j, "samples");
    mvz_json_begin_array(j);
    sp_walk(x, j, what, 0, path);
    mvz_json_end_array(j);
    mvz_json_key(j, "weights");
    mvz_json_begin_array(j);
    sp_walk(x, j, what, 1, path);
    mvz_json_end_array(j);
    mvz_json_end_object(j);
}

static size_t tree_depth(const struct mvz_callgraph *g)
{
    size_t d = 0;
    for (size_t i = 0; i < g->nctx; i++)
        d = g->ctx[i].depth > d ? g->ctx[i].depth : d;
    return d;
}

int mvz_export_callgraph_speedscope(struct mvz_export *x)
{
    size_t *path = malloc((tree_depth(x->g) + 1) * sizeof(*path));
    if (!path) {
        mvz_error("export: out of memory");
        return -1;
    }
    struct mvz_json j;
    mvz_json_init(&j, x->out);
    mvz_export_speedscope_head(&j, x);
    mvz_json_key(&j, "shared");
    mvz_json_begin_object(&j);
    mvz_json_key(&j, "frames");
    mvz_json_begin_array(&j);
    for (size_t i = 0; i <= x->g->nfns; i++) {
        struct mvz_cg_place pl = i < x->g->nfns ? x->names->fns[i] : mvz_cg_fn_place(x->names, 0);
        mvz_json_begin_object(&j);
        mvz_json_put_string(&j, "name", pl.function);
        if (pl.file) {
            mvz_json_put_string(&j, "file", pl.file);
            mvz_json_put_uint(&j, "line", pl.line);
        }
        mvz_json_end_object(&j);
    }
    mvz_json_end_array(&j);
    mvz_json_end_object(&j);
    mvz_json_key(&j, "profiles");
    mvz_json_begin_array(&j);
    for (int what = 0; what < SP_COUNT; what++)
        if (what == SP_TIME || x->g->ctx[0].total.allocations)
            sp_profile(x, &j, what, path);
    mvz_json_end_array(&j);
    mvz_json_end_object(&j);
    fputc('\n', x->out);
    free(path);
    return ferror(x->out) ? -1 : 0;
}
