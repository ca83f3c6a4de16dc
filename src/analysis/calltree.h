/*
 * calltree.h - call trees over symbolized stacks, merged by function:
 * top-down (from the outermost caller to the allocating function: which
 * callers are responsible, with inclusive and self costs) and bottom-up
 * (from the allocating function out to its callers: where memory is
 * allocated, and through which paths).
 *
 * Each stack adds its costs to every node on its path once, so a node's
 * inclusive cost is the sum over the stacks through it; its self cost the
 * sum over the stacks that end at it. Recursion makes deeper nodes, never
 * double counts.
 */
#ifndef MVZ_ANALYSIS_CALLTREE_H
#define MVZ_ANALYSIS_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/profile.h"
#include "analysis/symbolize.h"
#include "util/strtab.h"

struct mvz_tree_node {
    uint32_t func, file, module;                /* ids in mvz_calltree.names (file: first seen) */
    uint32_t parent, first_child, next_sibling; /* node indices, 0 = none */
    uint64_t incl[MVZ_COST_COUNT], self[MVZ_COST_COUNT];
};

struct mvz_calltree {
    int top_down;
    struct mvz_strtab names;
    struct mvz_tree_node *nodes; /* nodes[0]: the root, all stacks */
    size_t n, cap;
    uint32_t *slots; /* (parent, func, module) -> node index; 0 = empty */
    size_t nslots;
};

int mvz_calltree_init(struct mvz_calltree *t, int top_down);
/* Adds one stack, frames f[0..n) innermost first, with its costs. 0 or -1. */
int mvz_calltree_add(struct mvz_calltree *t, const struct mvz_frame *f, size_t n,
                     const uint64_t cost[MVZ_COST_COUNT]);
/* Orders every node's children by inclusive cost c, largest first. */
void mvz_calltree_sort(struct mvz_calltree *t, enum mvz_cost c);
void mvz_calltree_free(struct mvz_calltree *t);

#endif
