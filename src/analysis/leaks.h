/*
 * leaks.h - memcheck's leak kinds on a snapshot's graph: every live block
 * is still reachable, possibly lost, indirectly lost or definitely lost,
 * as Valgrind's memcheck decides them (docs/SNAPSHOTS.md).
 */
#ifndef MVZ_ANALYSIS_LEAKS_H
#define MVZ_ANALYSIS_LEAKS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/snapshot.h"

enum mvz_leak_kind {
    MVZ_LEAK_REACHABLE = 0, /* a chain of start pointers (or heuristics) from a root */
    MVZ_LEAK_POSSIBLE = 1,  /* reached from a root, but through an interior pointer */
    MVZ_LEAK_INDIRECT = 2,  /* not reached from a root; pointed to by a lost block */
    MVZ_LEAK_DEFINITE = 3,  /* not reached from a root, nor from another lost block */
    MVZ_LEAK_KINDS = 4,
};

struct mvz_leak_totals {
    uint64_t bytes[MVZ_LEAK_KINDS], blocks[MVZ_LEAK_KINDS];
    /* still reachable only through an interior pointer a heuristic accepted
     * (enum mvz_edge_kind - MVZ_EDGE_STDSTRING) */
    uint64_t heuristic_bytes[4], heuristic_blocks[4];
};

struct mvz_leaks {
    uint8_t *kind;    /* per block: enum mvz_leak_kind */
    uint8_t *via;     /* per reachable block: 0, or the mvz_edge_kind of the heuristic */
    uint32_t *leader; /* per indirectly lost block: the definitely lost one whose loss
                         loses it (memcheck's clique) */
    uint64_t *indirect_bytes, *indirect_blocks; /* per definitely lost block: what it loses */
    struct mvz_leak_totals t;
};

/* Classifies every block of s. Returns 0, or -1 when out of memory. */
int mvz_leaks_classify(const struct mvz_snapshot *s, struct mvz_leaks *out);
void mvz_leaks_free(struct mvz_leaks *l);
/* "definite", "indirect", "possible", "reachable". */
const char *mvz_leak_kind_name(int kind);

#endif
