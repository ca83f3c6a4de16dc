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
#include "analysis/leaks.h"
#include "analysis/profile.h"
#include "analysis/select.h"
#include "analysis/symbols.h"

#define REPORT_MAX_FRAMES 2048

enum report_at { AT_NONE, AT_PEAK, AT_TIME };
enum report_tree { TREE_NONE, TREE_TOP_DOWN, TREE_BOTTOM_UP };

struct report_options {
    int json, histogram, threads;
    int all_sites; /* JSON lists every site, not the lists' top ones */
    int children;  /* the process tree first (report_tree.c) */
    size_t top;
    enum mvz_by by;
    int sort; /* an enum mvz_cost, or -1: the default lists */
    enum report_tree tree;
    size_t tree_depth;  /* 0 = unlimited */
    double min_percent; /* tree nodes below this share of the root are hidden */
    enum report_at at;
    uint64_t at_ns, from_ns, to_ns; /* to_ns = UINT64_MAX: the end */
    int windowed;                   /* --from or --to given */
    const char *phase;              /* --phase NAME: its span is the window */
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
    struct mvz_site shown;        /* sums over the sites that pass the filters */
    struct mvz_site suppressed;   /* leaked_* of suppressed sites */
    struct mvz_grouping groups;   /* when o.by != MVZ_BY_STACK */
    struct mvz_calltree tree;     /* when o.tree != TREE_NONE */
    struct supp_memo *supp_memo;  /* suppression bits by address (report.c) */
    struct proc_tree *ptree;      /* --children: the tree, whose images p merges */
    int have_leaks;               /* the trace's exit snapshot was read: */
    struct mvz_leak_totals leaks; /* its leak kinds (memviz leaks for the records) */
    struct mvz_frame frames[REPORT_MAX_FRAMES];
};

/* What a list or tree ranks by, and how its title reads. */
enum mvz_cost report_list_cost(const struct report *r);
uint64_t report_site_cost(const struct report_site *rs, enum mvz_cost c);
/* The (at most) top sites with a nonzero cost c, largest first, in a new
 * array (free it); *n is how many. A full sort of a large program's
 * 100,000 sites for each list took longer than printing the report. NULL
 * when out of memory. */
struct report_site *report_top_sites(struct report *r, enum mvz_cost c, size_t top, size_t *n);
/* Whether a stack has as many frames as the trace's depth cap (--depth):
 * any outer frames it had were not recorded. */
int report_stack_at_cap(const struct report *r, uint32_t stack);

/* The command line, each argument as a shell reads it back. */
void report_put_command(FILE *out, const struct mvz_trace *t);
/* How the process ended, in words ("exited with status 0 (via return)"). */
const char *report_exit_text(const struct mvz_trace *t, char *buf, size_t cap);
/* --children (report_tree.c): reads the process tree the trace at path
 * heads (each trace once) and merges its images' sites into *p, with the
 * symbols of the merged stacks in *sym (analysis/merge.h). Returns the
 * tree, or NULL after printing an error. */
struct proc_tree;
struct proc_tree *proc_tree_load(const char *path, struct mvz_profile *p, struct mvz_symbols **sym);
void proc_tree_free(struct proc_tree *t);
/* How many images were read (and merged). */
size_t proc_tree_count(const struct proc_tree *t);
/* The i-th readable image's trace and wall-clock start; 0 past the last. */
size_t proc_tree_image(const struct proc_tree *t, size_t i, const char **path, uint64_t *start_ns);
/* The tree's table, as text on out, or into j when it is not NULL. */
struct mvz_json;
void report_print_tree(const struct proc_tree *t, FILE *out, struct mvz_json *j);
/* `memviz report DIR`: the process trees of the traces in DIR, each
 * trace whose parent is not in DIR a root. Returns the exit status. */
int report_print_dir(const char *dir, int json, FILE *out);
void report_print_text(struct report *r, FILE *out);
void report_print_json(struct report *r, FILE *out);
/* report_user.c: the instruments, phases and log of the program. */
void report_user_text(const struct report *r, FILE *out);
struct mvz_json;
void report_user_json(const struct report *r, struct mvz_json *j);
/* --phase NAME: sets the window; 0, or -1 after printing why not. */
int report_phase_window(struct report *r, const char *path);

#endif
