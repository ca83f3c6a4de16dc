/*
 * dominators.c - see dominators.h. Everything runs on depth-first numbers
 * (0 is the root): semi-dominators, the forest of linked nodes with path
 * compression, buckets. Iterative throughout: a heap's chains (a linked
 * list of a million nodes) are deeper than any thread's stack.
 *
 * Invariants, as in Lengauer and Tarjan's paper: after node w is processed,
 * semi[w] is its semi-dominator's number; eval(v) returns the node of
 * smallest semi among the linked ancestors of v, v included.
 */
#include "analysis/dominators.h"

#include <stdlib.h>
#include <string.h>

#define NONE MVZ_DOM_NONE

struct lt {
    uint32_t *dfn;    /* node -> number, NONE when unreached */
    uint32_t *vertex; /* number -> node (the caller's order array) */
    uint32_t *parent; /* numbers */
    uint32_t *semi, *ancestor, *label, *idom;
    uint32_t *bucket, *next; /* bucket lists, by number */
    size_t *pfirst;          /* predecessors, by number */
    uint32_t *pred;
    uint32_t *stack;
    uint32_t n;
};

static void lt_free(struct lt *t)
{
    free(t->dfn);
    free(t->parent);
    free(t->semi);
    free(t->ancestor);
    free(t->label);
    free(t->idom);
    free(t->bucket);
    free(t->next);
    free(t->pfirst);
    free(t->pred);
    free(t->stack);
}

/* Depth-first numbering from root, iteratively: the stack holds (node,
 * next successor to look at). */
static uint32_t number(struct lt *t, const struct mvz_graph *g, uint32_t root)
{
    size_t *pos = malloc(((size_t)g->n + 1) * sizeof(*pos));
    if (!pos)
        return 0;
    uint32_t count = 0, depth = 0;
    t->dfn[root] = count;
    t->vertex[count] = root;
    t->parent[count++] = NONE;
    t->stack[depth] = root;
    pos[depth++] = g->first[root];
    while (depth) {
        uint32_t v = t->stack[depth - 1];
        if (pos[depth - 1] == g->first[v + 1]) {
            depth--;
            continue;
        }
        uint32_t w = g->succ[pos[depth - 1]++];
        if (w >= g->n || t->dfn[w] != NONE)
            continue;
        t->dfn[w] = count;
        t->vertex[count] = w;
        t->parent[count++] = t->dfn[v];
        t->stack[depth] = w;
        pos[depth++] = g->first[w];
    }
    free(pos);
    return count;
}

/* Predecessors of each reached node, by number. */
static int predecessors(struct lt *t, const struct mvz_graph *g)
{
    if (!(t->pfirst = calloc((size_t)t->n + 1, sizeof(*t->pfirst))))
        return -1;
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t v = t->vertex[i];
        for (size_t e = g->first[v]; e < g->first[v + 1]; e++)
            if (g->succ[e] < g->n && t->dfn[g->succ[e]] != NONE)
                t->pfirst[t->dfn[g->succ[e]] + 1]++;
    }
    for (uint32_t i = 0; i < t->n; i++)
        t->pfirst[i + 1] += t->pfirst[i];
    if (!(t->pred = malloc((t->pfirst[t->n] ? t->pfirst[t->n] : 1) * sizeof(*t->pred))))
        return -1;
    size_t *fill = malloc(((size_t)t->n + 1) * sizeof(*fill));
    if (!fill)
        return -1;
    memcpy(fill, t->pfirst, ((size_t)t->n + 1) * sizeof(*fill));
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t v = t->vertex[i];
        for (size_t e = g->first[v]; e < g->first[v + 1]; e++)
            if (g->succ[e] < g->n && t->dfn[g->succ[e]] != NONE)
                t->pred[fill[t->dfn[g->succ[e]]]++] = i;
    }
    free(fill);
    return 0;
}

/* The linked ancestor of v with the smallest semi (v itself when v is a
 * forest root), compressing the path on the way. */
static uint32_t eval(struct lt *t, uint32_t v)
{
    if (t->ancestor[v] == NONE)
        return v;
    uint32_t depth = 0;
    for (uint32_t x = v; t->ancestor[t->ancestor[x]] != NONE; x = t->ancestor[x])
        t->stack[depth++] = x;
    while (depth) { /* from the one nearest the forest root down to v */
        uint32_t x = t->stack[--depth], a = t->ancestor[x];
        if (t->semi[t->label[a]] < t->semi[t->label[x]])
            t->label[x] = t->label[a];
        t->ancestor[x] = t->ancestor[a];
    }
    return t->label[v];
}

static void solve(struct lt *t)
{
    for (uint32_t i = 0; i < t->n; i++) {
        t->semi[i] = t->label[i] = i;
        t->ancestor[i] = t->bucket[i] = NONE;
    }
    for (uint32_t w = t->n; w-- > 1;) {
        for (size_t e = t->pfirst[w]; e < t->pfirst[w + 1]; e++) {
            uint32_t u = eval(t, t->pred[e]);
            if (t->semi[u] < t->semi[w])
                t->semi[w] = t->semi[u];
        }
        t->next[w] = t->bucket[t->semi[w]];
        t->bucket[t->semi[w]] = w;
        uint32_t p = t->parent[w];
        t->ancestor[w] = p; /* link */
        for (uint32_t v = t->bucket[p]; v != NONE; v = t->next[v]) {
            uint32_t u = eval(t, v);
            t->idom[v] = t->semi[u] < t->semi[v] ? u : p;
        }
        t->bucket[p] = NONE;
    }
    t->idom[0] = 0;
    for (uint32_t w = 1; w < t->n; w++)
        if (t->idom[w] != t->semi[w])
            t->idom[w] = t->idom[t->idom[w]];
}

int mvz_dominators(const struct mvz_graph *g, uint32_t root, uint32_t *idom, uint32_t *order,
                   uint32_t *nreached)
{
    struct lt t = {.vertex = order};
    size_t n = (size_t)g->n + 1;
    t.dfn = malloc(n * sizeof(uint32_t));
    t.parent = malloc(n * sizeof(uint32_t));
    t.stack = malloc(n * sizeof(uint32_t));
    int rc = -1;
    if (t.dfn && t.parent && t.stack && root < g->n) {
        memset(t.dfn, 0xff, n * sizeof(uint32_t));
        t.n = number(&t, g, root);
        t.semi = malloc(n * sizeof(uint32_t));
        t.ancestor = malloc(n * sizeof(uint32_t));
        t.label = malloc(n * sizeof(uint32_t));
        t.idom = malloc(n * sizeof(uint32_t));
        t.bucket = malloc(n * sizeof(uint32_t));
        t.next = malloc(n * sizeof(uint32_t));
        if (t.n && t.semi && t.ancestor && t.label && t.idom && t.bucket && t.next &&
            predecessors(&t, g) == 0) {
            solve(&t);
            for (uint32_t v = 0; v < g->n; v++)
                idom[v] = NONE;
            for (uint32_t i = 0; i < t.n; i++)
                idom[order[i]] = order[t.idom[i]];
            *nreached = t.n;
            rc = 0;
        }
    }
    lt_free(&t);
    return rc;
}
