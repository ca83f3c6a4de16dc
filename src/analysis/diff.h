/*
 * diff.h - matches what two runs allocated, by symbolized call stack (the
 * chain of function names and modules, not addresses or line numbers,
 * which change between builds and with ASLR) or by allocating function,
 * and keeps each side's costs.
 */
#ifndef MVZ_ANALYSIS_DIFF_H
#define MVZ_ANALYSIS_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/profile.h"
#include "analysis/symbols.h"
#include "util/strtab.h"

enum { MVZ_DIFF_BASE, MVZ_DIFF_NEW };

struct mvz_diff_entry {
    uint32_t key;                     /* id in mvz_diff.keys */
    uint32_t stack[2];                /* an example stack id on each side, 0 = absent */
    uint64_t cost[2][MVZ_COST_COUNT]; /* [side][cost] */
};

struct mvz_diff {
    struct mvz_strtab keys;
    struct mvz_diff_entry *e; /* e[key - 1] */
    size_t n;
};

/* Adds cost to the entry for key on side. 0, or -1 when out of memory. */
int mvz_diff_add(struct mvz_diff *d, const char *key, int side, uint32_t stack,
                 const uint64_t cost[MVZ_COST_COUNT]);
int64_t mvz_diff_delta(const struct mvz_diff_entry *e, enum mvz_cost c);
/* Orders entries by the change of cost c: the largest growth first, the
 * largest shrink last. Keys stay valid; e[] no longer follows key order. */
void mvz_diff_sort(struct mvz_diff *d, enum mvz_cost c);
void mvz_diff_free(struct mvz_diff *d);
/* Adds every site of p that allocated to side: to sites under its stack
 * ("function  [module]" per frame, innermost first, a line each), to
 * funcs under its allocating function. 0, or -1 when out of memory. */
int mvz_diff_add_profile(struct mvz_diff *sites, struct mvz_diff *funcs, int side,
                         const struct mvz_profile *p, struct mvz_symbols *sym);

#endif
