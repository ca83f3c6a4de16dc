/*
 * retain.c - see retain.h.
 *
 * The graph's successor array keeps the snapshot's order: first every
 * block's edges (index e mirrors s->edges[e]), then every root edge (index
 * nedges + i mirrors s->root_edges[i]), then the virtual root's edges to
 * the roots. So an index on a path names the word it came through.
 *
 * Invariant: retained[v] = size of v (blocks only) + the retained bytes of
 * the nodes v immediately dominates.
 */
#include "analysis/retain.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/dominators.h"

static int build_graph(struct mvz_retain *r)
{
    const struct mvz_snapshot *s = r->s;
    uint32_t n = r->vroot + 1;
    size_t m = s->nedges + s->nroot_edges + r->nroots;
    r->first = calloc((size_t)n + 1, sizeof(*r->first));
    r->succ = malloc((m ? m : 1) * sizeof(*r->succ));
    if (!r->first || !r->succ)
        return -1;
    /* the blocks' edges are already in rows */
    for (uint32_t b = 0; b <= r->nblocks; b++)
        r->first[b] = s->first_edge[b];
    for (size_t e = 0; e < s->nedges; e++)
        r->succ[e] = s->edges[e].target;
    /* root edges, grouped by root: counting sort by group */
    size_t *fill = calloc((size_t)r->nroots + 1, sizeof(*fill));
    if (!fill)
        return -1;
    for (size_t i = 0; i < s->nroot_edges; i++)
        fill[r->group[i] + 1]++;
    for (uint32_t g = 0; g < r->nroots; g++) {
        fill[g + 1] += fill[g];
        r->first[r->nblocks + g + 1] = s->nedges + fill[g + 1];
    }
    r->first[r->nblocks] = s->nedges;
    /* within a root the edges keep the order of s->root_edges, but the
     * index no longer mirrors it: keep the mirror in bfs terms below */
    uint32_t *at = malloc((s->nroot_edges ? s->nroot_edges : 1) * sizeof(*at));
    if (!at) {
        free(fill);
        return -1;
    }
    for (size_t i = 0; i < s->nroot_edges; i++) {
        size_t k = s->nedges + fill[r->group[i]]++;
        r->succ[k] = s->root_edges[i].target;
        at[k - s->nedges] = (uint32_t)i;
    }
    free(fill);
    r->root_edge_of = at;
    size_t k = s->nedges + s->nroot_edges;
    for (uint32_t g = 0; g < r->nroots; g++)
        r->succ[k + g] = r->nblocks + g;
    r->first[n] = k + r->nroots;
    return 0;
}

/* Breadth-first from the virtual root: each node's first parent is on a
 * shortest path. With skip_weak, stacks and registers are not followed
 * (for suspects). mark gets 1 for each node reached. */
static int bfs(const struct mvz_retain *r, uint32_t from, int skip_weak, uint8_t *mark,
               uint32_t *parent, uint64_t *via)
{
    uint32_t n = r->vroot + 1;
    uint32_t *q = malloc((size_t)n * sizeof(*q));
    if (!q)
        return -1;
    size_t head = 0, tail = 0;
    q[tail++] = from;
    mark[from] = 1;
    while (head < tail) {
        uint32_t v = q[head++];
        if (skip_weak && v >= r->nblocks && v < r->vroot && r->weak && r->weak[v - r->nblocks])
            continue;
        for (size_t e = r->first[v]; e < r->first[v + 1]; e++) {
            uint32_t w = r->succ[e];
            if (mark[w])
                continue;
            mark[w] = 1;
            if (parent) {
                parent[w] = v;
                if (via && w < r->nblocks)
                    via[w] = e;
            }
            q[tail++] = w;
        }
    }
    free(q);
    return 0;
}

static void sizes(struct mvz_retain *r)
{
    const struct mvz_snapshot *s = r->s;
    for (uint32_t i = r->nreached; i-- > 0;) {
        uint32_t v = r->order[i];
        if (v < r->nblocks) {
            r->retained[v] += s->blocks[v].size;
            r->retained_n[v]++;
        }
        if (v != r->vroot) {
            r->retained[r->idom[v]] += r->retained[v];
            r->retained_n[r->idom[v]] += r->retained_n[v];
        }
    }
}

int mvz_retain_build(const struct mvz_snapshot *s, const uint32_t *group, uint32_t nroots,
                     const uint8_t *weak, struct mvz_retain *r)
{
    memset(r, 0, sizeof(*r));
    if (s->nblocks + (uint64_t)nroots + 1 >= MVZ_DOM_NONE)
        return -1;
    r->s = s;
    r->group = group;
    r->weak = weak;
    r->nblocks = (uint32_t)s->nblocks;
    r->nroots = nroots;
    r->vroot = r->nblocks + nroots;
    size_t n = (size_t)r->vroot + 1;
    r->idom = malloc(n * sizeof(*r->idom));
    r->order = malloc(n * sizeof(*r->order));
    r->retained = calloc(n, sizeof(*r->retained));
    r->retained_n = calloc(n, sizeof(*r->retained_n));
    r->bfs_parent = malloc(n * sizeof(*r->bfs_parent));
    r->bfs_edge = calloc(n, sizeof(*r->bfs_edge));
    r->suspect = calloc(n, 1);
    uint8_t *mark = calloc(n, 1), *strong = calloc(n, 1);
    int rc = -1;
    if (r->idom && r->order && r->retained && r->retained_n && r->bfs_parent && r->bfs_edge &&
        r->suspect && mark && strong && build_graph(r) == 0) {
        struct mvz_graph g = {(uint32_t)n, r->first, r->succ};
        if (mvz_dominators(&g, r->vroot, r->idom, r->order, &r->nreached) == 0) {
            sizes(r);
            for (size_t v = 0; v < n; v++)
                r->bfs_parent[v] = MVZ_DOM_NONE;
            if (bfs(r, r->vroot, 0, mark, r->bfs_parent, r->bfs_edge) == 0 &&
                bfs(r, r->vroot, 1, strong, NULL, NULL) == 0) {
                for (uint32_t b = 0; b < r->nblocks; b++)
                    r->suspect[b] = mark[b] && !strong[b];
                rc = 0;
            }
        }
    }
    free(mark);
    free(strong);
    if (rc < 0)
        mvz_retain_free(r);
    return rc;
}

void mvz_retain_free(struct mvz_retain *r)
{
    free(r->idom);
    free(r->order);
    free(r->retained);
    free(r->retained_n);
    free(r->bfs_parent);
    free(r->bfs_edge);
    free(r->suspect);
    free(r->first);
    free(r->succ);
    free(r->root_edge_of);
    memset(r, 0, sizeof(*r));
}

int mvz_retain_path_step(const struct mvz_retain *r, uint32_t block, uint64_t *offset,
                         size_t *root_edge)
{
    uint64_t e = r->bfs_edge[block];
    if (e < r->s->nedges) {
        *offset = r->s->edges[e].offset;
        return 0;
    }
    *root_edge = r->root_edge_of[e - r->s->nedges];
    *offset = r->s->root_edges[*root_edge].offset;
    return 1;
}

int mvz_retain_reachable(const struct mvz_retain *r, uint32_t v, uint64_t *bytes, uint64_t *blocks)
{
    uint8_t *mark = calloc((size_t)r->vroot + 1, 1);
    if (!mark || bfs(r, v, 0, mark, NULL, NULL) < 0) {
        free(mark);
        return -1;
    }
    *bytes = *blocks = 0;
    for (uint32_t b = 0; b < r->nblocks; b++)
        if (mark[b]) {
            *bytes += r->s->blocks[b].size;
            (*blocks)++;
        }
    free(mark);
    return 0;
}

/* Depth-first over the dominator tree, counting for each stack how many of
 * the current node's dominators are of it: a block none of whose
 * dominators shares its stack tops that stack's union of subtrees. */
int mvz_retain_by_stack(const struct mvz_retain *r, uint64_t *bytes, uint64_t *blocks,
                        uint32_t nstacks)
{
    size_t n = (size_t)r->vroot + 1;
    size_t *kids = calloc(n + 1, sizeof(*kids));
    uint32_t *kid = malloc(n * sizeof(*kid)), *open = calloc(nstacks ? nstacks : 1, sizeof(*open));
    uint32_t *stack = malloc(n * sizeof(*stack));
    uint8_t *done = calloc(n, 1);
    int rc = -1;
    if (kids && kid && open && stack && done) {
        for (size_t v = 0; v < n; v++) /* children lists, by counting */
            if (v != r->vroot && r->idom[v] != MVZ_DOM_NONE)
                kids[r->idom[v] + 1]++;
        for (size_t v = 0; v < n; v++)
            kids[v + 1] += kids[v];
        size_t *fill = malloc((n + 1) * sizeof(*fill));
        if (fill) {
            memcpy(fill, kids, (n + 1) * sizeof(*fill));
            for (size_t v = 0; v < n; v++)
                if (v != r->vroot && r->idom[v] != MVZ_DOM_NONE)
                    kid[fill[r->idom[v]]++] = (uint32_t)v;
            free(fill);
            size_t depth = 0;
            stack[depth++] = r->vroot;
            while (depth) {
                uint32_t v = stack[depth - 1];
                uint32_t st = v < r->nblocks ? r->s->blocks[v].stack : UINT32_MAX;
                if (done[v]) { /* leaving v */
                    if (st < nstacks)
                        open[st]--;
                    depth--;
                    continue;
                }
                done[v] = 1;
                if (st < nstacks) {
                    if (!open[st]++) {
                        bytes[st] += r->retained[v];
                        blocks[st] += r->retained_n[v];
                    }
                }
                for (size_t k = kids[v]; k < kids[v + 1]; k++)
                    stack[depth++] = kid[k];
            }
            rc = 0;
        }
    }
    free(kids);
    free(kid);
    free(open);
    free(stack);
    free(done);
    return rc;
}

int mvz_snap_deep_size(const struct mvz_snapshot *s, const uint8_t *from, uint64_t *bytes,
                       uint64_t *blocks)
{
    uint8_t *mark = calloc(s->nblocks ? s->nblocks : 1, 1);
    uint32_t *q = malloc((s->nblocks ? s->nblocks : 1) * sizeof(*q));
    if (!mark || !q) {
        free(mark);
        free(q);
        return -1;
    }
    size_t head = 0, tail = 0;
    for (uint32_t b = 0; b < s->nblocks; b++)
        if (from[b]) {
            mark[b] = 1;
            q[tail++] = b;
        }
    *bytes = *blocks = 0;
    while (head < tail) {
        uint32_t b = q[head++];
        *bytes += s->blocks[b].size;
        (*blocks)++;
        for (size_t e = s->first_edge[b]; e < s->first_edge[b + 1]; e++) {
            uint32_t t = s->edges[e].target;
            if (!mark[t]) {
                mark[t] = 1;
                q[tail++] = t;
            }
        }
    }
    free(mark);
    free(q);
    return 0;
}
