/*
 * snapshot.h - the heap snapshots stored in a trace (docs/FORMAT.md,
 * SNAPSHOT records): their list, and one snapshot's graph loaded whole:
 * the live blocks by address, the pointers between them, and the root
 * regions with the pointers in them. Memory is that of one graph.
 */
#ifndef MVZ_ANALYSIS_SNAPSHOT_H
#define MVZ_ANALYSIS_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

/* What a snapshot header says. */
struct mvz_snap_info {
    uint32_t id, trigger;
    uint64_t ts;     /* ns since the agent started */
    uint64_t events; /* heap events recorded before it */
    uint32_t tid;    /* the thread that took it */
    uint32_t threads_running;
    uint64_t nblocks;
    char *name;
    int complete; /* its SNAPSHOT_END was found */
    uint64_t pause_ns, nedges, nregions, nroot_edges, scanned, unreadable, scan_ns;
    uint64_t too_large; /* bytes of anonymous mappings too large to scan */
    int has_contents;   /* the blocks' bytes are stored (CONTENTS records) */
};

struct mvz_snap_block {
    uint64_t addr, size, serial;
    uint32_t tid, stack;
    uint32_t flags; /* MVZ_SNAP_BLOCK_* */
};

/* A pointer: from a block (or a root region) to block `target`. */
struct mvz_snap_edge {
    uint32_t target;
    uint8_t kind;    /* enum mvz_edge_kind */
    uint64_t offset; /* of the pointer in its block or region */
};

struct mvz_snap_root {
    int kind; /* enum mvz_root_kind */
    uint32_t tid;
    char *name; /* module path, register set name; "" when none */
    uint64_t addr, len;
    size_t first_edge, nedges; /* into root_edges */
};

struct mvz_snapshot {
    struct mvz_snap_info info;
    struct mvz_snap_block *blocks; /* by address */
    size_t nblocks;
    size_t *first_edge; /* nblocks + 1: block i's edges are edges[first_edge[i] ..] */
    struct mvz_snap_edge *edges;
    size_t nedges;
    struct mvz_snap_root *roots;
    size_t nroots;
    struct mvz_snap_edge *root_edges;
    size_t nroot_edges;
};

/* The snapshots of the trace at path, in file order. Returns 0, or -1 with
 * a one-line reason in err. Free with mvz_snap_infos_free. */
int mvz_snap_list(const char *path, struct mvz_snap_info **out, size_t *n, char *err,
                  size_t errlen);
void mvz_snap_infos_free(struct mvz_snap_info *v, size_t n);
/* Loads snapshot id (from the list) whole. Returns 0, or -1 with a reason. */
int mvz_snap_load(const char *path, uint32_t id, struct mvz_snapshot *s, char *err, size_t errlen);
void mvz_snap_free(struct mvz_snapshot *s);
/* The bytes of block `block` (of `size` bytes) of snapshot id, as
 * --snapshot-contents stored them, into buf; known[k] becomes 1 for each
 * byte found. Returns how many were found (0: none stored), or -1 with a
 * reason in err. One pass over the trace. */
long long mvz_snap_contents(const char *path, uint32_t id, uint32_t block, uint64_t size,
                            uint8_t *buf, uint8_t *known, char *err, size_t errlen);
/* snapcheck.c: how many of s's blocks are not live, with its size and
 * stack, in the trace replayed to the snapshot's moment (0 when the two
 * agree). 0, or -1 with a reason in err. */
int mvz_snap_verify(const char *path, const struct mvz_snapshot *s, uint64_t *not_live, char *err,
                    size_t errlen);
/* "api", "signal", "every", "command", "exit". */
const char *mvz_snap_trigger_name(uint32_t trigger);

#endif
