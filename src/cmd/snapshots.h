/*
 * snapshots.h - what the snapshot commands (leaks, and the ones after it)
 * share: opening a trace's snapshot by name, with the trace's stacks and
 * symbols, and printing its header and a block's allocation stack.
 */
#ifndef MVZ_CMD_SNAPSHOTS_H
#define MVZ_CMD_SNAPSHOTS_H

#include <stdio.h>

#include "analysis/replay.h"
#include "analysis/retain.h"
#include "analysis/roots.h"
#include "analysis/snapshot.h"
#include "analysis/symbols.h"

#define SNAP_MAX_FRAMES 512

struct mvz_json;

struct snap_ctx {
    const char *path;
    struct mvz_trace t; /* stacks and modules */
    struct mvz_symbols *sym;
    struct mvz_snap_info *list;
    size_t nlist;
    struct mvz_snapshot snap; /* the chosen one */
    struct mvz_frame frames[SNAP_MAX_FRAMES];
};

/* Reads path's stacks and the snapshot named want (NULL: the one taken at
 * exit, else the last complete one). 0, or -1 after printing an error. */
int snap_open(struct snap_ctx *c, const char *path, const char *want);
void snap_close(struct snap_ctx *c);
/* The complete snapshot named want (the last of that name), or with want
 * NULL the one taken at exit, else the last complete one; NULL if none. */
const struct mvz_snap_info *snap_choose(const struct mvz_snap_info *list, size_t n,
                                        const char *want);
void snap_print_header(struct snap_ctx *c, FILE *out, const char *title);
void snap_print_stack(struct snap_ctx *c, FILE *out, uint32_t stack, const char *indent);
void snap_json_header(struct snap_ctx *c, struct mvz_json *j);
void snap_json_stack(struct snap_ctx *c, struct mvz_json *j, uint32_t stack);
/* The block at or containing addr (its index), or -1. */
long snap_block_at(const struct mvz_snapshot *s, uint64_t addr);
/* A snapshot's roots and dominator tree (analysis/roots.h, retain.h). */
struct snap_retention {
    struct mvz_root_groups g;
    struct mvz_retain r;
};
/* 0, or -1 when out of memory. */
int snap_retention_build(struct snap_ctx *c, struct snap_retention *x);
void snap_retention_free(struct snap_retention *x);
/* The innermost function of block b's allocation stack, for paths. */
const char *snap_site_name(struct snap_ctx *c, uint32_t block);
void snap_print_root(const struct snap_retention *x, FILE *out, uint32_t root);
/* The shortest path from a root to graph node v (a block or a root), every
 * step named: "path: global g_table [prog] (word 0x...) -> f 0x... +16 ->
 * g 0x...", or "no path from a root (lost)"; in JSON, "path": [...]. */
void snap_print_path(struct snap_ctx *c, const struct snap_retention *x, FILE *out, uint32_t v,
                     const char *indent);
void snap_json_path(struct snap_ctx *c, const struct snap_retention *x, struct mvz_json *j,
                    uint32_t v);
/* A leaks object: the four kinds, and reachable_via_heuristic. */
struct mvz_leak_totals;
void snap_json_leak_totals(struct mvz_json *j, const char *key, const struct mvz_leak_totals *t);
extern const char *const snap_heuristic_names[4];

/* snapdiff.c: `memviz diff --snapshots`. */
struct snapdiff_opts {
    int json;
    size_t top;
    const char *base_name, *new_name; /* NULL: the default */
};
/* Compares snapshot base_name of base with new_name of new_path (NULL: of
 * base too). Exit status. */
int snap_diff(const struct snapdiff_opts *o, const char *base,
              const char *new_path); /* by mvz_edge_kind - MVZ_EDGE_STDSTRING */

#endif
