/*
 * report.h - the model behind `memviz report`, shared by the option
 * parsing and selection (report.c) and the output (report_text.c,
 * report_json.c).
 */
#ifndef MVZ_CMD_REPORT_H
#define MVZ_CMD_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/calltree.h"
#include "analysis/group.h"
#include "analysis/profile.h"
#include "analysis/select.h"
#include "analysis/symbols.h"

#define REPORT_MAX_FRAMES 2048

enum report_at { AT_NONE, AT_PEAK, AT_TIME };
enum report_tree { TREE_NONE, TREE_TOP_DOWN, TREE_BOTTOM_UP };

struct report_options {
    int json, histogram, threads;
    size_t top;
    enum mvz_by by;
    int sort; /* an enum mvz_cost, or -1: the default lists */
    enum report_tree tree;
    size_t tree_depth;  /* 0 = unlimited */
    double min_percent; /* tree nodes below this share of the root are hidden */
    enum report_at at;
    uint64_t at_ns, from_ns, to_ns; /* to_ns = UINT64_MAX: the end */
    int windowed;                   /* --from or --to given */
};

/* One site as the views see it. */
struct report_site {
    struct mvz_site *s;
    struct mvz_suppression *supp; /* the rule that suppresses its leaks, or NULL */
};

struct report {
    struct report_options o;
    struct mvz_profile p;
    struct mvz_symbols *sym;
    struct mvz_select sel;
    struct report_site *sites; /* sites that pass the filters */
    size_t nsites, nsites_all;
    struct mvz_site shown;       /* sums over the sites that pass the filters */
    struct mvz_site suppressed;  /* leaked_* of suppressed sites */
    struct mvz_grouping groups;  /* when o.by != MVZ_BY_STACK */
    struct mvz_calltree tree;    /* when o.tree != TREE_NONE */
    struct supp_memo *supp_memo; /* suppression bits by address (report.c) */
    struct mvz_frame frames[REPORT_MAX_FRAMES];
};

/* What a list or tree ranks by, and how its title reads. */
enum mvz_cost report_list_cost(const struct report *r);
uint64_t report_site_cost(const struct report_site *rs, enum mvz_cost c);

void report_print_text(struct report *r, FILE *out);
void report_print_json(struct report *r, FILE *out);

#endif
