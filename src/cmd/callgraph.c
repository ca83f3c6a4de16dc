/*
 * callgraph.c - `memviz callgraph FILE`: the complete dynamic call graph of
 * a run recorded with --callgraph: its functions (calls, inclusive and
 * self time, allocations), its hottest caller -> callee edges with their
 * call sites, and the hot paths of the calling-context tree with the
 * allocations of every context; --function F shows F's callers and
 * callees. docs/CALLGRAPH.md says what every number means.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/callgraph.h"
#include "analysis/profile.h"
#include "analysis/symbols.h"
#include "cmd/cmd.h"
#include "util/fmt.h"
#include "util/json.h"
#include "util/sort.h"

struct cg_cmd {
    int json, tid;
    long depth, top;
    const char *function;
    struct mvz_profile p;
    struct mvz_callgraph g;
    struct mvz_symbols *sym;
    struct mvz_cg_names names;
};

static const char usage_text[] =
    "usage: memviz callgraph [--json] [--function F] [--depth N] [--top N] [--thread TID]\n"
    "                        [--debug-dir DIR] FILE\n"
    "The complete dynamic call graph of a run recorded with memviz run --callgraph\n"
    "(the program built with -finstrument-functions): functions, caller -> callee\n"
    "edges with their call sites and exact counts, and the calling-context tree with\n"
    "the allocations made in every context.\n"
    "  --function F  F's callers and callees, with their call sites\n"
    "  --depth N     levels of the context tree shown (default 8; --json 64)\n"
    "  --top N       functions and edges listed (default 20; --json: all)\n"
    "  --thread TID  that thread's calls alone (default: every thread, merged)\n";

enum { O_FUNCTION = 256, O_DEPTH, O_THREAD };

static int parse_options(struct cg_cmd *x, int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"function", required_argument, NULL, O_FUNCTION},
        {"depth", required_argument, NULL, O_DEPTH},
        {"top", required_argument, NULL, 't'},
        {"thread", required_argument, NULL, O_THREAD},
        {"debug-dir", required_argument, NULL, MVZ_OPT_DEBUG_DIR},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    long v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            x->json = 1;
            break;
        case O_FUNCTION:
            x->function = optarg;
            break;
        case O_DEPTH:
            if ((x->depth = mvz_parse_count(optarg, 1 << 20)) < 0)
                return mvz_usage_error("callgraph", "--depth needs a number, got '%s'", optarg);
            break;
        case 't':
            if ((x->top = mvz_parse_count(optarg, 1 << 30)) < 0)
                return mvz_usage_error("callgraph", "--top needs a number, got '%s'", optarg);
            break;
        case O_THREAD:
            if ((v = mvz_parse_count(optarg, 1 << 30)) <= 0)
                return mvz_usage_error("callgraph", "--thread needs a thread id, got '%s'", optarg);
            x->tid = (int)v;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return -1;
        default: {
            int rc = mvz_cmd_shared_option("callgraph", c, argv);
            if (rc)
                return rc;
        }
        }
    }
    if (optind != argc - 1)
        return mvz_usage_error("callgraph", "needs one trace file (see --help)");
    return 0;
}

static const char *fn_name(const struct cg_cmd *x, uint64_t fn)
{
    return mvz_cg_fn_name(&x->names, fn);
}

/* ---- text ---- */

static size_t *fns_by_time(const struct cg_cmd *x)
{
    size_t *v = malloc((x->g.nfns ? x->g.nfns : 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (size_t i = 0; i < x->g.nfns; i++)
        v[i] = i;
    return v;
}

static const struct mvz_callgraph *sort_g;
static int by_time(const void *a, const void *b)
{
    const struct mvz_cg_fn *x = &sort_g->fns[*(const size_t *)a],
                           *y = &sort_g->fns[*(const size_t *)b];
    if (x->ns != y->ns)
        return x->ns < y->ns ? 1 : -1;
    return x->calls < y->calls ? 1 : x->calls > y->calls ? -1 : 0;
}

static void print_site(struct cg_cmd *x, FILE *out, uint64_t caller, const struct mvz_cg_site *s)
{
    char a[32];
    struct mvz_cg_site_place d = mvz_cg_site_place(&x->names, caller, s);
    fprintf(out, "        %12s  ", mvz_fmt_count(s->calls, a, sizeof(a)));
    if (d.inlined)
        fprintf(out, "(inlined)");
    else if (d.file)
        fprintf(out, "%s:%u", mvz_base_name(d.file), d.line);
    else
        fprintf(out, "0x%" PRIx64, s->site);
    if (d.via)
        fprintf(out, "  (via %s, not instrumented)", d.via);
    fputc('\n', out);
}

static void print_edge(struct cg_cmd *x, FILE *out, const struct mvz_cg_edge *e)
{
    char a[32];
    fprintf(out, "  %12s  %s -> %s\n", mvz_fmt_count(e->calls, a, sizeof(a)), fn_name(x, e->caller),
            fn_name(x, e->callee));
    for (size_t k = 0; k < e->nsites; k++)
        print_site(x, out, e->caller, &e->sites[k]);
}

static void print_fn_row(struct cg_cmd *x, FILE *out, const struct mvz_cg_fn *f)
{
    char a[32], b[32], c[32], d[32], e[32];
    const struct mvz_cg_place *pl = &x->names.fns[f - x->g.fns];
    fprintf(out, "  %12s %10s %10s %10s %10s  %s", mvz_fmt_count(f->calls, a, sizeof(a)),
            mvz_fmt_duration(f->ns, b, sizeof(b)), mvz_fmt_duration(f->self_ns, c, sizeof(c)),
            mvz_fmt_count(f->total.allocations, d, sizeof(d)),
            mvz_fmt_bytes(f->total.bytes, e, sizeof(e)), pl->function);
    if (pl->file)
        fprintf(out, "  %s:%u", mvz_base_name(pl->file), pl->line);
    fputc('\n', out);
}

static const char fn_header[] =
    "         calls  inclusive       self  allocs(+) bytes(+)   function\n";

static const struct mvz_callgraph *sort_ctx_g;
static int ctx_by_time(const void *a, const void *b)
{
    const struct mvz_cg_ctx *x = &sort_ctx_g->ctx[*(const uint32_t *)a];
    const struct mvz_cg_ctx *y = &sort_ctx_g->ctx[*(const uint32_t *)b];
    if (x->ns != y->ns)
        return x->ns < y->ns ? 1 : -1;
    return x->total.bytes < y->total.bytes ? 1 : x->total.bytes > y->total.bytes ? -1 : 0;
}

/* A context worth a line: a thousandth of the run's time, or allocations. */
static int ctx_shown(const struct cg_cmd *x, const struct mvz_cg_ctx *c)
{
    return c->ns * 1000 >= x->g.ctx[0].ns || c->total.allocations;
}

#define HIDDEN_MARK 0x80000000u

/* Depth first, the slowest child first; the contexts not worth a line are
 * counted on one line after their siblings. */
static void print_tree(struct cg_cmd *x, FILE *out)
{
    char a[32], b[32], c[32], d[32];
    uint32_t *stack = malloc((2 * x->g.nctx + 1) * sizeof(*stack));
    uint32_t *hidden = calloc(x->g.nctx, sizeof(*hidden));
    if (!stack || !hidden) {
        free(stack);
        free(hidden);
        return;
    }
    size_t n = 0;
    stack[n++] = 0;
    sort_ctx_g = &x->g;
    while (n) {
        uint32_t top = stack[--n];
        if (top & HIDDEN_MARK) {
            const struct mvz_cg_ctx *p = &x->g.ctx[top & ~HIDDEN_MARK];
            fprintf(out, "  %12s %10s %10s %10s  %*s(%u smaller context(s))\n", "", "", "", "",
                    (int)(2 * p->depth + 2), "", hidden[top & ~HIDDEN_MARK]);
            continue;
        }
        const struct mvz_cg_ctx *ctx = &x->g.ctx[top];
        fprintf(out, "  %12s %10s %10s %10s  %*s%s\n", mvz_fmt_count(ctx->calls, a, sizeof(a)),
                mvz_fmt_duration(ctx->ns, b, sizeof(b)),
                mvz_fmt_count(ctx->total.allocations, c, sizeof(c)),
                mvz_fmt_bytes(ctx->total.bytes, d, sizeof(d)), (int)(2 * ctx->depth), "",
                fn_name(x, ctx->fn));
        if (ctx->depth >= (uint32_t)x->depth)
            continue;
        size_t at = n;
        for (uint32_t k = ctx->first_child; k; k = x->g.ctx[k].next_sibling) {
            if (ctx_shown(x, &x->g.ctx[k]))
                stack[n++] = k;
            else
                hidden[top]++;
        }
        qsort(stack + at, n - at, sizeof(*stack), ctx_by_time);
        for (size_t i = at, j = n; i + 1 < j; i++, j--) { /* the slowest comes out first */
            uint32_t t = stack[i];
            stack[i] = stack[j - 1];
            stack[j - 1] = t;
        }
        if (hidden[top]) { /* below the children: comes out after them */
            memmove(stack + at + 1, stack + at, (n - at) * sizeof(*stack));
            stack[at] = top | HIDDEN_MARK;
            n++;
        }
    }
    free(stack);
    free(hidden);
}

static void print_summary(struct cg_cmd *x, FILE *out)
{
    char a[32];
    fprintf(out, "memviz callgraph: %s (pid %d)\n", x->p.trace.exe ? x->p.trace.exe : "?",
            x->p.trace.pid);
    fprintf(out, "  %zu thread(s), %zu function(s), %zu edge(s), %zu context(s), %s call(s)\n",
            x->g.nthreads, x->g.nfns, x->g.nedges, x->g.nctx - 1,
            mvz_fmt_count(x->g.calls, a, sizeof(a)));
    if (x->g.unmatched || x->g.untracked)
        fprintf(out, "  %" PRIu64 " exit(s) matched no call, %" PRIu64 " call(s) not counted\n",
                x->g.unmatched, x->g.untracked);
}

static void print_function(struct cg_cmd *x, FILE *out, size_t i)
{
    const struct mvz_cg_fn *f = &x->g.fns[i];
    fprintf(out, "\nFunction:\n%s", fn_header);
    print_fn_row(x, out, f);
    fprintf(out, "Callers (calls, and where):\n");
    for (size_t k = 0; k < x->g.nedges; k++)
        if (x->g.edges[k].callee == f->fn)
            print_edge(x, out, &x->g.edges[k]);
    fprintf(out, "Callees:\n");
    int any = 0;
    for (size_t k = 0; k < x->g.nedges; k++)
        if (x->g.edges[k].caller == f->fn) {
            print_edge(x, out, &x->g.edges[k]);
            any = 1;
        }
    if (!any)
        fprintf(out, "  (none instrumented)\n");
}

static int print_text(struct cg_cmd *x, FILE *out)
{
    print_summary(x, out);
    if (x->function) {
        int found = 0;
        for (size_t i = 0; i < x->g.nfns; i++)
            if (mvz_cg_name_matches(x->names.fns[i].function, x->function)) {
                print_function(x, out, i);
                found = 1;
            }
        if (!found)
            mvz_error("no function named '%s' in the call graph", x->function);
        return found ? 0 : 1;
    }
    size_t *order = fns_by_time(x);
    if (!order)
        return 1;
    sort_g = &x->g;
    qsort(order, x->g.nfns, sizeof(*order), by_time);
    fprintf(out, "\nFunctions, by inclusive time (allocations and bytes with their callees'):\n%s",
            fn_header);
    for (size_t i = 0; i < x->g.nfns && i < (size_t)x->top; i++)
        print_fn_row(x, out, &x->g.fns[order[i]]);
    free(order);
    fprintf(out, "\nHottest edges (calls, caller -> callee, and where):\n");
    for (size_t i = 0; i < x->g.nedges && i < (size_t)x->top; i++)
        print_edge(x, out, &x->g.edges[i]);
    fprintf(out,
            "\nCalling contexts (to depth %ld):\n"
            "         calls  inclusive  allocs(+) bytes(+)\n",
            x->depth);
    print_tree(x, out);
    return 0;
}

int cmd_callgraph(int argc, char **argv)
{
    struct cg_cmd *x = calloc(1, sizeof(*x));
    if (!x)
        return 1;
    x->depth = -1;
    x->top = -1;
    int rc = parse_options(x, argc, argv);
    if (rc) {
        free(x);
        return rc < 0 ? 0 : rc;
    }
    if (x->depth < 0)
        x->depth = x->json ? 64 : 8;
    if (x->top < 0)
        x->top = x->json ? (1L << 30) : 20;
    const char *path = argv[optind];
    char err[512];
    struct mvz_profile_options opt = {.to_ns = UINT64_MAX, .symbolize = 1};
    if (mvz_profile_load_window(&x->p, path, &opt, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        free(x);
        return 1;
    }
    rc = 1;
    if (!x->p.trace.callgraph)
        mvz_error("%s has no call graph: record it with memviz run --callgraph, the program "
                  "built with -finstrument-functions",
                  path);
    else if (mvz_callgraph_build(&x->g, &x->p, x->tid) < 0)
        mvz_error("out of memory building the call graph");
    else if (x->tid && !x->g.nthreads)
        mvz_error("no thread %d in the call graph of %s", x->tid, path);
    else if (!(x->sym = mvz_symbols_new(&x->p.trace)) ||
             mvz_cg_names_init(&x->names, &x->g, x->sym) < 0)
        mvz_error("out of memory symbolizing the call graph");
    else if (x->json) {
        struct mvz_cg_json_opts o = {x->function, x->tid, (uint32_t)x->depth, 0};
        struct mvz_json j;
        mvz_json_init(&j, stdout);
        mvz_callgraph_json(&j, &x->p, &x->g, &x->names, &o);
        fputc('\n', stdout);
        rc = 0;
    } else
        rc = print_text(x, stdout);
    mvz_cg_names_free(&x->names);
    if (x->sym)
        mvz_symbols_free(x->sym);
    mvz_callgraph_free(&x->g);
    mvz_profile_free(&x->p);
    free(x);
    return rc;
}
