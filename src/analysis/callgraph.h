/*
 * callgraph.h - the complete dynamic call graph of a trace recorded with
 * --callgraph: the threads' calling-context trees (CALLGRAPH records,
 * trace/callgraph.h), merged into one tree, with the functions, the
 * caller -> callee edges and their call sites, and every context's
 * allocation metrics from a profile of the same trace.
 */
#ifndef MVZ_ANALYSIS_CALLGRAPH_H
#define MVZ_ANALYSIS_CALLGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/profile.h"
#include "trace/buf.h"

/* A call site of a context, and the calls made there. */
struct mvz_cg_callsite {
    uint64_t site, calls;
};

/* One thread's tree as its latest records gave it; nodes[0] is the root. */
struct mvz_cg_raw_node {
    uint32_t parent;
    uint32_t first_site, nsites; /* in the thread's sites */
    uint64_t fn, calls, ns;      /* calls: from every site */
};

struct mvz_cg_raw_thread {
    int tid;
    uint32_t serial, gen;
    int ended; /* the thread had ended when it was written */
    uint64_t ts, unmatched, untracked;
    struct mvz_cg_raw_node *nodes;
    size_t n, cap;
    struct mvz_cg_callsite *sites;
    size_t nsites, sites_cap;
};

struct mvz_cg_raw {
    struct mvz_cg_raw_thread *threads;
    size_t n;
};

/* replay.c: a CALLGRAPH record into t's raw trees; -1 when it is damaged. */
int mvz_cg_raw_add(struct mvz_cg_raw **raw, struct mvz_cursor *c);
void mvz_cg_raw_free(struct mvz_cg_raw *raw);

/* The allocation metrics of a context (docs/METRICS.md). */
struct mvz_cg_alloc {
    uint64_t allocations, bytes, at_peak, leaked, leaked_blocks, temporary;
};

struct mvz_cg_ctx {
    uint64_t fn, path;
    uint32_t first_site, nsites; /* in mvz_callgraph.sites, by address */
    uint32_t parent, first_child, next_sibling, depth;
    uint64_t calls, ns, self_ns;
    struct mvz_cg_alloc self, total; /* made here; here and below */
};

/* One call site of an edge: its calls, and their inclusive time and
 * allocations (summed over the contexts of the calls, so a recursive
 * edge's include each other's). */
struct mvz_cg_site {
    uint64_t site, calls, ns;
    int inlined; /* the callee was inlined into the caller there */
    struct mvz_cg_alloc total;
};

struct mvz_cg_edge {
    uint64_t caller, callee; /* caller 0: the root */
    uint64_t calls;
    struct mvz_cg_site *sites; /* by calls, most first */
    size_t nsites;
};

struct mvz_cg_fn {
    uint64_t fn;
    uint64_t calls, ns, self_ns; /* ns: inclusive, recursion counted once */
    struct mvz_cg_alloc self, total;
};

struct mvz_callgraph {
    struct mvz_cg_ctx *ctx; /* ctx[0] is the root; a parent before its children */
    size_t nctx;
    struct mvz_cg_callsite *sites; /* the contexts' call sites */
    size_t nsites;
    struct mvz_cg_edge *edges; /* by calls, most first */
    size_t nedges;
    struct mvz_cg_fn *fns; /* by address */
    size_t nfns;
    size_t nthreads;
    uint32_t gen; /* the module generation to symbolize addresses in */
    uint64_t calls, unmatched, untracked;
    /* allocations whose stack names no context of the tree (made outside
     * any instrumented call): counted at the root */
    uint64_t allocations_outside;
    uint64_t *keys; /* path hash -> ctx + 1, open addressing */
    size_t key_mask;
};

/* Merges the threads' trees of p's trace (tid 0: every thread; else that
 * thread's alone) and adds p's allocation metrics to the contexts. -1
 * when out of memory; the graph is then empty. */
int mvz_callgraph_build(struct mvz_callgraph *g, const struct mvz_profile *p, int tid);
void mvz_callgraph_free(struct mvz_callgraph *g);
/* The function entry of fn, or NULL. */
const struct mvz_cg_fn *mvz_callgraph_fn(const struct mvz_callgraph *g, uint64_t fn);
/* Whether a call of ctx from site was inlined into its caller (the site is
 * one of the caller's own). */
int mvz_cg_site_inlined(const struct mvz_callgraph *g, const struct mvz_cg_ctx *c, uint64_t site);

/* ---- callgraph_names.c: the graph's addresses symbolized ---- */
struct mvz_symbols;
struct mvz_cg_place {
    const char *function, *file, *module; /* function never NULL */
    unsigned line;
};
/* Where a call was made: the call's line, and, when the call site is not
 * in the caller (code that was not instrumented called back, as qsort
 * calls its comparator), the function it is in (via). */
struct mvz_cg_site_place {
    const char *file, *via;
    unsigned line;
    int inlined;
};
struct mvz_cg_names {
    const struct mvz_callgraph *g;
    struct mvz_symbols *sym;
    struct mvz_cg_place *fns; /* parallel to g->fns */
};
/* Names every function of g (strings valid as long as sym); -1: out of memory. */
int mvz_cg_names_init(struct mvz_cg_names *n, const struct mvz_callgraph *g,
                      struct mvz_symbols *sym);
void mvz_cg_names_free(struct mvz_cg_names *n);
/* fn's place; "(root)" for 0. */
struct mvz_cg_place mvz_cg_fn_place(const struct mvz_cg_names *n, uint64_t fn);
const char *mvz_cg_fn_name(const struct mvz_cg_names *n, uint64_t fn);
struct mvz_cg_site_place mvz_cg_site_place(const struct mvz_cg_names *n, uint64_t caller,
                                           const struct mvz_cg_site *s);
/* ---- callgraph_json.c ---- */
struct mvz_json;
struct mvz_cg_json_opts {
    const char *function; /* only its functions and edges, and no contexts; NULL: all */
    int tid;              /* the threads listed: 0, all */
    uint32_t depth;       /* levels of contexts */
    /* contexts under this share of the root's time, bytes and allocations
     * (all three) are left out; 0: none */
    double min_share;
};
void mvz_callgraph_json(struct mvz_json *j, const struct mvz_profile *p,
                        const struct mvz_callgraph *g, const struct mvz_cg_names *names,
                        const struct mvz_cg_json_opts *o);

/* Whether function name `name` is the one asked for: the same, or a C++
 * name whose parameters were left out. */
int mvz_cg_name_matches(const char *name, const char *want);

#endif
