/*
 * retain.h - what keeps memory alive, from a heap snapshot's graph: the
 * dominator tree under one virtual root over every root (a root is a group
 * of root words the caller chooses: a global variable, a thread's stack),
 * each block's and root's retained size (what freeing it would free: its
 * dominator subtree), shortest paths from the roots, and the blocks only a
 * stack or register word keeps alive (suspects: a stale word can hide a
 * leak). docs/SNAPSHOTS.md defines the numbers.
 *
 * Nodes: blocks are 0 .. nblocks-1, roots nblocks .. nblocks+nroots-1, the
 * virtual root nblocks+nroots.
 */
#ifndef MVZ_ANALYSIS_RETAIN_H
#define MVZ_ANALYSIS_RETAIN_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/snapshot.h"

struct mvz_retain {
    uint32_t nblocks, nroots, vroot;
    uint32_t *idom;                  /* per node; MVZ_DOM_NONE when unreached */
    uint64_t *retained, *retained_n; /* per node: bytes and blocks of its dominator subtree */
    uint32_t *bfs_parent;            /* per node: the node a shortest path comes from */
    uint64_t *bfs_edge;              /* per block: the edge it comes through (see below) */
    uint8_t *suspect;                /* per block: only stack or register words reach it */
    uint32_t *order;                 /* reached nodes, dominators first */
    uint32_t nreached;
    /* private: the graph */
    size_t *first;
    uint32_t *succ;
    const struct mvz_snapshot *s;
    const uint32_t *group;  /* root edge -> root */
    uint32_t *root_edge_of; /* succ index - nedges -> root edge */
    const uint8_t *weak;
};

/* Builds it for snapshot s; group[i] (i < s->nroot_edges) is the root
 * (0 .. nroots-1) root edge i belongs to, and weak[r] whether root r is a
 * stack or registers (for suspects). 0, or -1 when out of memory. */
int mvz_retain_build(const struct mvz_snapshot *s, const uint32_t *group, uint32_t nroots,
                     const uint8_t *weak, struct mvz_retain *r);
void mvz_retain_free(struct mvz_retain *r);

/* The word a block's shortest path arrives by (bfs_edge): 0 and *offset
 * in the block bfs_parent names, or 1 and the index of the root edge. */
int mvz_retain_path_step(const struct mvz_retain *r, uint32_t block, uint64_t *offset,
                         size_t *root_edge);

/* Bytes and blocks reachable from node v (every block some path from it
 * reaches; what it dominates is part of it). One traversal per call. */
int mvz_retain_reachable(const struct mvz_retain *r, uint32_t v, uint64_t *bytes, uint64_t *blocks);

/* Per allocation stack: the bytes and blocks freeing every block of that
 * stack would free (the union of their dominator subtrees), into arrays
 * indexed by stack id (nstacks entries, zeroed by the caller). */
int mvz_retain_by_stack(const struct mvz_retain *r, uint64_t *bytes, uint64_t *blocks,
                        uint32_t nstacks);

/* The deep size of the blocks marked in from (per block of s): every block
 * some path from them reaches, each counted once, them included. 0, or
 * -1 when out of memory. */
int mvz_snap_deep_size(const struct mvz_snapshot *s, const uint8_t *from, uint64_t *bytes,
                       uint64_t *blocks);

#endif
