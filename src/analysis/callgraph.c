/*
 * callgraph.c - reads the threads' calling-context trees and merges them
 * into the call graph (callgraph.h).
 *
 * Merging is by path hash: a node's identity is mvz_cg_path applied from
 * the root (trace/callgraph.h), so the same chain of calls on two threads
 * is one context, and a --callgraph stack's mark names the context its
 * allocations were made in. Every tree lists parents before children, so
 * each merged context is made after its parent and ctx indices keep that
 * order too: sums from the leaves up are one pass backwards.
 */
#include "analysis/callgraph.h"

#include <stdlib.h>
#include <string.h>

#include "trace/callgraph.h"

/* ---- the raw trees ---- */

static struct mvz_cg_raw_thread *raw_thread(struct mvz_cg_raw **raw, uint32_t serial)
{
    if (!*raw && !(*raw = calloc(1, sizeof(**raw))))
        return NULL;
    struct mvz_cg_raw *r = *raw;
    for (size_t i = 0; i < r->n; i++)
        if (r->threads[i].serial == serial)
            return &r->threads[i];
    struct mvz_cg_raw_thread *v = realloc(r->threads, (r->n + 1) * sizeof(*v));
    if (!v)
        return NULL;
    r->threads = v;
    memset(&v[r->n], 0, sizeof(v[r->n]));
    v[r->n].serial = serial;
    return &v[r->n++];
}

static int raw_reserve(struct mvz_cg_raw_thread *th, size_t n)
{
    if (n <= th->cap)
        return 0;
    size_t cap = th->cap ? th->cap : 256;
    while (cap < n)
        cap *= 2;
    struct mvz_cg_raw_node *v = realloc(th->nodes, cap * sizeof(*v));
    if (!v)
        return -1;
    th->nodes = v;
    th->cap = cap;
    return 0;
}

static int raw_site(struct mvz_cg_raw_thread *th, uint64_t site, uint64_t calls)
{
    if (th->nsites == th->sites_cap) {
        size_t cap = th->sites_cap ? th->sites_cap * 2 : 256;
        struct mvz_cg_callsite *v = realloc(th->sites, cap * sizeof(*v));
        if (!v)
            return -1;
        th->sites = v;
        th->sites_cap = cap;
    }
    th->sites[th->nsites++] = (struct mvz_cg_callsite){site, calls};
    return 0;
}

/* A node's record after its parent: fn and first site (deltas from the
 * previous node's), calls, time, then its other sites. */
static int raw_node(struct mvz_cg_raw_thread *th, struct mvz_cursor *c, size_t at, uint64_t *fn,
                    uint64_t *site)
{
    struct mvz_cg_raw_node *x = &th->nodes[at];
    x->parent = (uint32_t)mvz_get_uvarint(c);
    *fn += (uint64_t)mvz_get_svarint(c);
    *site += (uint64_t)mvz_get_svarint(c);
    x->fn = *fn;
    uint64_t calls = mvz_get_uvarint(c);
    x->ns = mvz_get_uvarint(c);
    uint64_t k = mvz_get_uvarint(c);
    if (c->bad || x->parent >= at || k > mvz_cursor_left(c) / 2)
        return -1;
    x->first_site = (uint32_t)th->nsites;
    x->nsites = (uint32_t)(k + 1);
    x->calls = calls;
    if (raw_site(th, *site, calls) < 0)
        return -1;
    for (uint64_t i = 0; i < k; i++) {
        uint64_t s = *site + (uint64_t)mvz_get_svarint(c), n = mvz_get_uvarint(c);
        if (c->bad || raw_site(th, s, n) < 0)
            return -1;
        x->calls += n;
    }
    return 0;
}

int mvz_cg_raw_add(struct mvz_cg_raw **raw, struct mvz_cursor *c)
{
    int tid = (int)mvz_get_uvarint(c);
    uint32_t serial = (uint32_t)mvz_get_uvarint(c);
    uint64_t ts = mvz_get_uvarint(c), flags = mvz_get_uvarint(c);
    uint32_t gen = (uint32_t)mvz_get_uvarint(c);
    uint64_t first = mvz_get_uvarint(c), n = mvz_get_uvarint(c);
    /* a node takes at least 5 bytes */
    if (c->bad || first == 0 || n > mvz_cursor_left(c) / 5)
        return -1;
    struct mvz_cg_raw_thread *th = raw_thread(raw, serial);
    if (!th)
        return 0;
    if (first == 1)
        th->n = 1, th->nsites = 0; /* a new copy of the tree begins */
    if (first != th->n || raw_reserve(th, th->n + n) < 0)
        return -1; /* a part is missing: the later parts are not taken */
    memset(&th->nodes[0], 0, sizeof(th->nodes[0]));
    uint64_t fn = 0, site = 0;
    size_t at = th->n;
    for (uint64_t i = 0; i < n; i++, at++) {
        if (raw_node(th, c, at, &fn, &site) < 0) {
            if (first == 1) /* a damaged copy: what came before it, or nothing */
                th->n = 1, th->nsites = 0;
            else
                th->nsites = th->nodes[th->n - 1].first_site + th->nodes[th->n - 1].nsites;
            return -1;
        }
    }
    th->unmatched = mvz_get_uvarint(c);
    th->untracked = mvz_get_uvarint(c);
    if (c->bad)
        return -1;
    th->n = at;
    th->tid = tid;
    th->gen = gen;
    th->ts = ts;
    th->ended = (flags & MVZ_CG_ENDED) != 0;
    return 0;
}

void mvz_cg_raw_free(struct mvz_cg_raw *raw)
{
    if (!raw)
        return;
    for (size_t i = 0; i < raw->n; i++) {
        free(raw->threads[i].nodes);
        free(raw->threads[i].sites);
    }
    free(raw->threads);
    free(raw);
}

/* ---- contexts by path ---- */

static size_t key_slot(const struct mvz_callgraph *g, uint64_t key)
{
    return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 24) & g->key_mask;
}

/* The context whose mark is `mark`, or -1. */
static long ctx_by_mark(const struct mvz_callgraph *g, uint64_t mark)
{
    for (size_t i = key_slot(g, mark);; i = (i + 1) & g->key_mask) {
        uint64_t v = g->keys[2 * i];
        if (!v)
            return -1;
        if (v == mark)
            return (long)g->keys[2 * i + 1] - 1;
    }
}

static int keys_grow(struct mvz_callgraph *g)
{
    size_t slots = g->keys ? (g->key_mask + 1) * 2 : 1024;
    uint64_t *k = calloc(slots * 2, sizeof(*k)), *old = g->keys;
    if (!k)
        return -1;
    size_t old_slots = g->keys ? g->key_mask + 1 : 0;
    g->keys = k;
    g->key_mask = slots - 1;
    for (size_t i = 0; i < old_slots; i++) {
        if (!old[2 * i])
            continue;
        size_t j = key_slot(g, old[2 * i]);
        while (k[2 * j])
            j = (j + 1) & g->key_mask;
        k[2 * j] = old[2 * i];
        k[2 * j + 1] = old[2 * i + 1];
    }
    free(old);
    return 0;
}

/* The context of path under parent, made when new; -1 when out of memory. */
static long ctx_find_or_add(struct mvz_callgraph *g, uint64_t path, uint32_t parent, uint64_t fn,
                            size_t *cap)
{
    uint64_t mark = mvz_cg_mark(path);
    long at = g->keys ? ctx_by_mark(g, mark) : -1;
    if (at >= 0)
        return at;
    if ((g->nctx + 1) * 2 > (g->keys ? g->key_mask + 1 : 0) && keys_grow(g) < 0)
        return -1;
    if (g->nctx == *cap) {
        size_t ncap = *cap ? *cap * 2 : 256;
        struct mvz_cg_ctx *v = realloc(g->ctx, ncap * sizeof(*v));
        if (!v)
            return -1;
        g->ctx = v;
        *cap = ncap;
    }
    struct mvz_cg_ctx *c = &g->ctx[g->nctx];
    memset(c, 0, sizeof(*c));
    c->fn = fn;
    c->path = path;
    c->parent = parent;
    if (g->nctx) {
        struct mvz_cg_ctx *p = &g->ctx[parent];
        c->depth = p->depth + 1;
        c->next_sibling = p->first_child;
        p->first_child = (uint32_t)g->nctx;
    }
    size_t i = key_slot(g, mark);
    while (g->keys[2 * i])
        i = (i + 1) & g->key_mask;
    g->keys[2 * i] = mark;
    g->keys[2 * i + 1] = g->nctx + 1;
    return (long)g->nctx++;
}

/* A context's call site, while the trees are merged. */
struct ctx_site {
    uint32_t ctx;
    uint64_t site, calls;
};

struct merging {
    size_t cap;         /* of g->ctx */
    struct ctx_site *v; /* every thread's (context, site, calls) */
    size_t n, vcap;
};

static int note_site(struct merging *m, uint32_t ctx, const struct mvz_cg_callsite *s)
{
    if (m->n == m->vcap) {
        size_t cap = m->vcap ? m->vcap * 2 : 1024;
        struct ctx_site *v = realloc(m->v, cap * sizeof(*v));
        if (!v)
            return -1;
        m->v = v;
        m->vcap = cap;
    }
    m->v[m->n++] = (struct ctx_site){ctx, s->site, s->calls};
    return 0;
}

/* Adds one thread's tree; `where` maps its nodes to contexts (scratch). */
static int merge_thread(struct mvz_callgraph *g, const struct mvz_cg_raw_thread *th,
                        struct merging *m)
{
    uint32_t *where = malloc((th->n ? th->n : 1) * sizeof(*where));
    uint64_t *path = malloc((th->n ? th->n : 1) * sizeof(*path));
    if (!where || !path) {
        free(where);
        free(path);
        return -1;
    }
    where[0] = 0;
    path[0] = MVZ_CG_ROOT_PATH;
    int rc = 0;
    for (size_t i = 1; i < th->n && rc == 0; i++) {
        const struct mvz_cg_raw_node *x = &th->nodes[i];
        path[i] = mvz_cg_path(path[x->parent], x->fn);
        long at = ctx_find_or_add(g, path[i], where[x->parent], x->fn, &m->cap);
        if (at < 0) {
            rc = -1;
            break;
        }
        where[i] = (uint32_t)at;
        g->ctx[at].calls += x->calls;
        g->ctx[at].ns += x->ns;
        g->calls += x->calls;
        for (uint32_t k = 0; k < x->nsites && rc == 0; k++)
            if (x->first_site + k < th->nsites)
                rc = note_site(m, (uint32_t)at, &th->sites[x->first_site + k]);
    }
    g->unmatched += th->unmatched;
    g->untracked += th->untracked;
    if (th->gen > g->gen)
        g->gen = th->gen;
    free(where);
    free(path);
    return rc;
}

static int cmp_ctx_site(const void *a, const void *b)
{
    const struct ctx_site *x = a, *y = b;
    if (x->ctx != y->ctx)
        return x->ctx < y->ctx ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

/* Each context's sites, summed over the threads, by address. */
static int sites_build(struct mvz_callgraph *g, struct merging *m)
{
    qsort(m->v, m->n, sizeof(*m->v), cmp_ctx_site);
    g->sites = malloc((m->n ? m->n : 1) * sizeof(*g->sites));
    if (!g->sites)
        return -1;
    for (size_t i = 0; i < m->n; i++) {
        struct mvz_cg_ctx *c = &g->ctx[m->v[i].ctx];
        if (!c->nsites)
            c->first_site = (uint32_t)g->nsites;
        if (c->nsites && g->sites[g->nsites - 1].site == m->v[i].site) {
            g->sites[g->nsites - 1].calls += m->v[i].calls;
            continue;
        }
        g->sites[g->nsites++] = (struct mvz_cg_callsite){m->v[i].site, m->v[i].calls};
        c->nsites++;
    }
    return 0;
}

/* ---- allocation metrics ---- */

static void alloc_add(struct mvz_cg_alloc *a, const struct mvz_cg_alloc *b)
{
    a->allocations += b->allocations;
    a->bytes += b->bytes;
    a->at_peak += b->at_peak;
    a->leaked += b->leaked;
    a->leaked_blocks += b->leaked_blocks;
    a->temporary += b->temporary;
}

static void add_sites(struct mvz_callgraph *g, const struct mvz_profile *p)
{
    for (size_t id = 0; id < p->sites_cap; id++) {
        const struct mvz_site *s = &p->sites[id];
        if (!s->stack)
            continue;
        const struct mvz_stack *st = mvz_trace_stack(&p->trace, (uint32_t)id);
        long at = st && st->context ? ctx_by_mark(g, st->context) : -1;
        if (at < 0) {
            at = 0;
            g->allocations_outside += s->allocations;
        }
        struct mvz_cg_alloc a = {s->allocations,  s->allocated_bytes, s->at_peak_bytes,
                                 s->leaked_bytes, s->leaked_blocks,   s->temporary};
        alloc_add(&g->ctx[at].self, &a);
    }
}

/* Children were linked newest first: put them in the order of their
 * first appearance. */
static void order_children(struct mvz_callgraph *g)
{
    for (size_t i = 0; i < g->nctx; i++) {
        uint32_t prev = 0, c = g->ctx[i].first_child;
        while (c) {
            uint32_t next = g->ctx[c].next_sibling;
            g->ctx[c].next_sibling = prev;
            prev = c;
            c = next;
        }
        g->ctx[i].first_child = prev;
    }
}

/* Totals from the leaves up, and each context's own time. */
static void sum_up(struct mvz_callgraph *g)
{
    for (size_t i = 0; i < g->nctx; i++) {
        g->ctx[i].total = g->ctx[i].self;
        g->ctx[i].self_ns = g->ctx[i].ns;
    }
    for (size_t i = g->nctx; i-- > 1;) {
        struct mvz_cg_ctx *c = &g->ctx[i], *p = &g->ctx[c->parent];
        alloc_add(&p->total, &c->total);
        p->self_ns = p->self_ns > c->ns ? p->self_ns - c->ns : 0;
    }
    /* the root's time is its children's */
    g->ctx[0].ns = 0;
    for (uint32_t k = g->ctx[0].first_child; k; k = g->ctx[k].next_sibling)
        g->ctx[0].ns += g->ctx[k].ns;
    g->ctx[0].self_ns = 0;
}

/* ---- functions and edges ---- */

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

static int cmp_fn(const void *a, const void *b)
{
    return cmp_u64(((const struct mvz_cg_fn *)a)->fn, ((const struct mvz_cg_fn *)b)->fn);
}

const struct mvz_cg_fn *mvz_callgraph_fn(const struct mvz_callgraph *g, uint64_t fn)
{
    struct mvz_cg_fn key = {.fn = fn};
    return g->nfns ? bsearch(&key, g->fns, g->nfns, sizeof(key), cmp_fn) : NULL;
}

/* Inclusive time and allocations: a context counts for its function
 * unless the function is already on the path above it (recursion). A
 * walk of the tree keeps how often each function is on the path. */
static int functions_inclusive(struct mvz_callgraph *g)
{
    uint32_t *fidx = malloc(g->nctx * sizeof(*fidx)),
             *onpath = calloc(g->nfns + 1, sizeof(*onpath));
    if (!fidx || !onpath) {
        free(fidx);
        free(onpath);
        return -1;
    }
    for (size_t i = 1; i < g->nctx; i++)
        fidx[i] = (uint32_t)(mvz_callgraph_fn(g, g->ctx[i].fn) - g->fns);
    uint32_t c = g->ctx[0].first_child;
    while (c) {
        struct mvz_cg_fn *f = &g->fns[fidx[c]];
        if (onpath[fidx[c]]++ == 0) {
            f->ns += g->ctx[c].ns;
            alloc_add(&f->total, &g->ctx[c].total);
        }
        if (g->ctx[c].first_child) {
            c = g->ctx[c].first_child;
            continue;
        }
        while (c) { /* leave c, and its parents that have no sibling left */
            onpath[fidx[c]]--;
            if (g->ctx[c].next_sibling) {
                c = g->ctx[c].next_sibling;
                break;
            }
            c = g->ctx[c].parent;
        }
    }
    free(fidx);
    free(onpath);
    return 0;
}

static int functions_build(struct mvz_callgraph *g)
{
    if (g->nctx < 2)
        return 0;
    struct mvz_cg_fn *v = calloc(g->nctx - 1, sizeof(*v));
    if (!v)
        return -1;
    for (size_t i = 1; i < g->nctx; i++)
        v[i - 1].fn = g->ctx[i].fn;
    qsort(v, g->nctx - 1, sizeof(*v), cmp_fn);
    size_t n = 0;
    for (size_t i = 0; i < g->nctx - 1; i++)
        if (!n || v[n - 1].fn != v[i].fn)
            v[n++] = v[i];
    g->fns = v;
    g->nfns = n;
    for (size_t i = 1; i < g->nctx; i++) {
        struct mvz_cg_fn *f = (struct mvz_cg_fn *)mvz_callgraph_fn(g, g->ctx[i].fn);
        f->calls += g->ctx[i].calls;
        f->self_ns += g->ctx[i].self_ns;
        alloc_add(&f->self, &g->ctx[i].self);
    }
    return functions_inclusive(g);
}

struct call {
    uint64_t caller, callee, site, calls, ns;
    int inlined;
    struct mvz_cg_alloc total;
};

static int cmp_call(const void *a, const void *b)
{
    const struct call *x = a, *y = b;
    int c = cmp_u64(x->caller, y->caller);
    if (!c)
        c = cmp_u64(x->callee, y->callee);
    return c ? c : cmp_u64(x->site, y->site);
}

static int cmp_site_calls(const void *a, const void *b)
{
    const struct mvz_cg_site *x = a, *y = b;
    return x->calls != y->calls ? cmp_u64(y->calls, x->calls) : cmp_u64(x->site, y->site);
}

static int cmp_edge_calls(const void *a, const void *b)
{
    const struct mvz_cg_edge *x = a, *y = b;
    if (x->calls != y->calls)
        return cmp_u64(y->calls, x->calls);
    return x->caller != y->caller ? cmp_u64(x->caller, y->caller) : cmp_u64(x->callee, y->callee);
}

/* A share of a: its part for `calls` of `all` calls. */
static void alloc_share(struct mvz_cg_alloc *out, const struct mvz_cg_alloc *a, uint64_t calls,
                        uint64_t all)
{
    double f = all ? (double)calls / (double)all : 0;
    *out = (struct mvz_cg_alloc){
        (uint64_t)(a->allocations * f + 0.5),   (uint64_t)(a->bytes * f + 0.5),
        (uint64_t)(a->at_peak * f + 0.5),       (uint64_t)(a->leaked * f + 0.5),
        (uint64_t)(a->leaked_blocks * f + 0.5), (uint64_t)(a->temporary * f + 0.5)};
}

/* Every (context, site) is one (caller, site, callee) call; equal ones
 * summed. A context called from several sites gives each its share of
 * the context's time and allocations, by calls. */
static int edges_build(struct mvz_callgraph *g)
{
    size_t n = g->nsites;
    if (!n)
        return 0;
    struct call *v = malloc(n * sizeof(*v));
    if (!v)
        return -1;
    size_t k = 0;
    for (size_t i = 1; i < g->nctx; i++) {
        const struct mvz_cg_ctx *c = &g->ctx[i];
        for (uint32_t j = 0; j < c->nsites; j++) {
            const struct mvz_cg_callsite *s = &g->sites[c->first_site + j];
            struct call *x = &v[k++];
            *x = (struct call){.caller = g->ctx[c->parent].fn,
                               .callee = c->fn,
                               .site = s->site,
                               .calls = s->calls,
                               .inlined = mvz_cg_site_inlined(g, c, s->site)};
            x->ns = c->nsites == 1
                        ? c->ns
                        : (uint64_t)((double)c->ns * s->calls / (c->calls ? c->calls : 1));
            if (c->nsites == 1)
                x->total = c->total;
            else
                alloc_share(&x->total, &c->total, s->calls, c->calls);
        }
    }
    n = k;
    qsort(v, n, sizeof(*v), cmp_call);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = i;
        while (j < n && v[j].caller == v[i].caller && v[j].callee == v[i].callee)
            j++;
        struct mvz_cg_edge *e = realloc(g->edges, (g->nedges + 1) * sizeof(*e));
        struct mvz_cg_site *sites = malloc((j - i) * sizeof(*sites));
        if (e)
            g->edges = e;
        if (!e || !sites) {
            free(sites);
            rc = -1;
            break;
        }
        e = &g->edges[g->nedges++];
        *e = (struct mvz_cg_edge){v[i].caller, v[i].callee, 0, sites, 0};
        for (size_t k = i; k < j; k++) {
            e->calls += v[k].calls;
            if (!e->nsites || sites[e->nsites - 1].site != v[k].site)
                sites[e->nsites++] =
                    (struct mvz_cg_site){.site = v[k].site, .inlined = v[k].inlined};
            struct mvz_cg_site *st = &sites[e->nsites - 1];
            st->calls += v[k].calls;
            st->ns += v[k].ns;
            alloc_add(&st->total, &v[k].total);
        }
        qsort(sites, e->nsites, sizeof(*sites), cmp_site_calls);
        i = j;
    }
    free(v);
    if (rc == 0 && g->nedges)
        qsort(g->edges, g->nedges, sizeof(*g->edges), cmp_edge_calls);
    return rc;
}

int mvz_callgraph_build(struct mvz_callgraph *g, const struct mvz_profile *p, int tid)
{
    memset(g, 0, sizeof(*g));
    struct merging m = {0};
    const struct mvz_cg_raw *raw = p->trace.callgraph;
    if (ctx_find_or_add(g, MVZ_CG_ROOT_PATH, 0, 0, &m.cap) < 0)
        goto oom;
    /* threads in the order they began, so the root's children are too */
    for (uint32_t serial = 0, next; raw; serial = next) {
        const struct mvz_cg_raw_thread *th = NULL;
        next = UINT32_MAX;
        for (size_t i = 0; i < raw->n; i++)
            if (raw->threads[i].serial > serial && raw->threads[i].serial <= next) {
                next = raw->threads[i].serial;
                th = &raw->threads[i];
            }
        if (!th)
            break;
        if (tid && th->tid != tid)
            continue;
        g->nthreads++;
        if (merge_thread(g, th, &m) < 0)
            goto oom;
    }
    if (sites_build(g, &m) < 0)
        goto oom;
    free(m.v);
    add_sites(g, p);
    order_children(g);
    sum_up(g);
    if (functions_build(g) < 0 || edges_build(g) < 0)
        goto oom;
    return 0;
oom:
    free(m.v);
    mvz_callgraph_free(g);
    return -1;
}

void mvz_callgraph_free(struct mvz_callgraph *g)
{
    for (size_t i = 0; i < g->nedges; i++)
        free(g->edges[i].sites);
    free(g->edges);
    free(g->fns);
    free(g->ctx);
    free(g->sites);
    free(g->keys);
    memset(g, 0, sizeof(*g));
}

int mvz_cg_site_inlined(const struct mvz_callgraph *g, const struct mvz_cg_ctx *c, uint64_t site)
{
    const struct mvz_cg_ctx *p = &g->ctx[c->parent];
    for (uint32_t i = 0; c->parent && i < p->nsites; i++)
        if (g->sites[p->first_site + i].site == site)
            return 1;
    return 0;
}
