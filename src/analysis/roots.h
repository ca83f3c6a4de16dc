/*
 * roots.h - a heap snapshot's root words grouped into the roots a user
 * names: a global variable (by ELF data symbol), a thread's stack and
 * registers together (what the thread holds), a thread's TLS, a mapping,
 * a registered region. `retain`, the retained-size flame graph and the
 * snapshot comparison all speak of these roots.
 */
#ifndef MVZ_ANALYSIS_ROOTS_H
#define MVZ_ANALYSIS_ROOTS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/replay.h"
#include "analysis/snapshot.h"
#include "analysis/symbols.h"
#include "util/strtab.h"

struct mvz_root_info {
    int kind; /* enum mvz_root_kind; a thread's registers count as its stack */
    uint32_t tid;
    char *name;         /* the variable, the mapping's name, or "" */
    const char *module; /* the module (globals), or NULL */
    uint64_t addr;      /* the region, or the variable's first word seen */
    uint32_t key;       /* id in keys: the same root in another snapshot has the same key */
};

struct mvz_root_groups {
    struct mvz_root_info *roots;
    uint32_t n;
    uint32_t *group; /* per root edge of the snapshot: its root (0 .. n-1) */
    uint8_t *weak;   /* per root: a stack (a stale word can hide a leak) */
    struct mvz_strtab keys;
};

/* Groups the root words of s; t and sym name the globals. 0, or -1 when
 * out of memory. */
int mvz_root_groups_build(const struct mvz_snapshot *s, const struct mvz_trace *t,
                          struct mvz_symbols *sym, struct mvz_root_groups *g);
void mvz_root_groups_free(struct mvz_root_groups *g);
/* "global", "tls", "stack", "register", "mapping", "registered". */
const char *mvz_root_kind_name(int kind);
/* A root in one line: "global table [prog]", "stack of thread 7 (and its
 * registers)", "mapping [anon] at 0x7f00...". */
void mvz_root_label(const struct mvz_root_info *ri, char *buf, size_t cap);

#endif
