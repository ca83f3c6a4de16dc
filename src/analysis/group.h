/*
 * group.h - sites grouped by what allocated them (`report --by`): the
 * innermost frame's function, source file or module. Groups sum their
 * sites' counts; a site's own peak (max live bytes) does not sum and is
 * not kept.
 */
#ifndef MVZ_ANALYSIS_GROUP_H
#define MVZ_ANALYSIS_GROUP_H

#include <stddef.h>

#include "analysis/profile.h"
#include "analysis/symbolize.h"
#include "util/strtab.h"

enum mvz_by { MVZ_BY_STACK, MVZ_BY_FUNCTION, MVZ_BY_FILE, MVZ_BY_MODULE };

struct mvz_group {
    uint32_t key;      /* id in mvz_grouping.keys */
    struct mvz_site s; /* sums; s.stack = the first site's stack (an example) */
    size_t nsites;
};

struct mvz_grouping {
    enum mvz_by by;
    struct mvz_strtab keys;
    struct mvz_group *groups; /* groups[key - 1] */
    size_t n;
};

/* "stack", "function", "file", "module"; -1 when unknown. */
int mvz_by_parse(const char *name);
const char *mvz_by_name(enum mvz_by by);
/* Adds site s, whose frames are f[0..n) innermost first. Returns 0 or -1
 * (out of memory). */
int mvz_group_add(struct mvz_grouping *g, const struct mvz_frame *f, size_t n,
                  const struct mvz_site *s);
/* The group's name for people: "function [module]", a file, a module. */
const char *mvz_group_name(const struct mvz_grouping *g, const struct mvz_group *grp);
void mvz_grouping_free(struct mvz_grouping *g);

#endif
