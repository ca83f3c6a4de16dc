/*
 * dominators.h - the dominator tree of a directed graph from one root
 * (Lengauer and Tarjan's algorithm, the simple version with path
 * compression: O(m log n)), for what keeps memory alive in a heap snapshot
 * (retain.h). Node u dominates v when every path from the root to v passes
 * through u: freeing u would free v.
 */
#ifndef MVZ_ANALYSIS_DOMINATORS_H
#define MVZ_ANALYSIS_DOMINATORS_H

#include <stddef.h>
#include <stdint.h>

#define MVZ_DOM_NONE UINT32_MAX

/* A graph in compressed rows: node v's successors are
 * succ[first[v] .. first[v + 1]). */
struct mvz_graph {
    uint32_t n;
    const size_t *first; /* n + 1 */
    const uint32_t *succ;
};

/* idom[v] = v's immediate dominator (idom[root] = root), MVZ_DOM_NONE for
 * nodes the root does not reach; order[0 .. *nreached) = the reached nodes
 * in depth-first preorder from the root (each node's dominator comes
 * before it). idom and order have g->n entries. Returns 0, or -1 when out
 * of memory. */
int mvz_dominators(const struct mvz_graph *g, uint32_t root, uint32_t *idom, uint32_t *order,
                   uint32_t *nreached);

#endif
