/*
 * export.c - `memviz export --format F FILE`: writes a trace (or a window
 * of it) in a format another tool reads. The writers live in src/export/.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/leaks.h"
#include "analysis/profile.h"
#include "analysis/retain.h"
#include "analysis/roots.h"
#include "analysis/symbols.h"
#include "cmd/cmd.h"
#include "cmd/report.h"
#include "cmd/snapshots.h"
#include "export/export.h"

struct format {
    const char *name;
    int (*write)(struct mvz_export *x);
    int binary; /* never written to a terminal */
    const char *what;
};

static const struct format formats[] = {
    {"collapsed", mvz_export_collapsed, 0, "folded stacks (flamegraph.pl, inferno, speedscope)"},
    {"pprof", mvz_export_pprof, 1, "gzipped profile.proto (go tool pprof)"},
    {"massif", mvz_export_massif, 0, "Valgrind Massif output (ms_print, massif-visualizer)"},
    {"callgrind", mvz_export_callgrind, 0, "callgrind format (callgrind_annotate, KCachegrind)"},
    {"speedscope", mvz_export_speedscope, 0, "speedscope's JSON file format"},
    {"dot", mvz_export_callgraph_dot, 0, "a call graph trace's graph, for graphviz"},
    {"chrome", mvz_export_chrome, 0, "Chrome trace event JSON (Perfetto UI, chrome://tracing)"},
};
#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

static void usage(FILE *out)
{
    fprintf(out, "usage: memviz export --format F [--cost C] [--from S] [--to S] [-o OUT]\n"
                 "                     [--depth N] [--fold-recursion] [--min-percent P]\n"
                 "                     [--children] [--snapshot NAME] [--debug-dir DIR] FILE\n"
                 "formats:\n");
    for (size_t i = 0; i < NFORMATS; i++)
        fprintf(out, "  %-11s %s\n", formats[i].name, formats[i].what);
    fprintf(out, "costs (collapsed, speedscope; --min-percent of pprof, callgrind): peak\n"
                 "(default), leaked, allocations, bytes, temporary\n"
                 "trimming (every format but chrome): --depth N keeps the N innermost frames of\n"
                 "each stack; --fold-recursion makes a run of frames of one function one frame;\n"
                 "--min-percent P puts the sites under P%% of the cost's total into one\n"
                 "--children: the whole process tree FILE heads, merged, each stack under its\n"
                 "program's name; massif and chrome sum the images' heaps on one clock\n"
                 "--cost retained (collapsed, speedscope): a heap snapshot's dominator tree, each\n"
                 "block under the root and the blocks that keep it alive, named by site; a\n"
                 "frame's width is what freeing it would free (--depth: dominators shown)\n"
                 "--snapshot NAME: the heap snapshot for --cost retained, and whose leak kinds\n"
                 "pprof adds as sample types (default: the one at exit, else the last)\n");
}

static const struct format *find_format(const char *name)
{
    for (size_t i = 0; i < NFORMATS; i++)
        if (!strcmp(formats[i].name, name))
            return &formats[i];
    return NULL;
}

static void sum_costs(struct mvz_export *x)
{
    for (size_t i = 0; i < x->p->sites_cap; i++)
        for (int k = 0; k < MVZ_COST_COUNT; k++)
            x->total[k] += mvz_site_cost(&x->p->sites[i], (enum mvz_cost)k);
}

/* pprof of a whole run: the leak kinds of its heap snapshot, per stack.
 * A trace without one (--no-leak-scan) gets none, unless --snapshot asked. */
static int load_leak_kinds(struct mvz_export *x, const char *want, uint64_t (**out)[8])
{
    char err[512];
    struct mvz_snap_info *list = NULL;
    size_t n = 0;
    if (mvz_snap_list(x->trace_path, &list, &n, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return -1;
    }
    const struct mvz_snap_info *si = snap_choose(list, n, want);
    struct mvz_snapshot s = {0};
    struct mvz_leaks l = {0};
    int rc = -1;
    if (!si) {
        if (want)
            mvz_error("%s has no complete snapshot named '%s'", x->trace_path, want);
        rc = want ? -1 : 0;
    } else if (mvz_snap_load(x->trace_path, si->id, &s, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
    } else if (mvz_leaks_classify(&s, &l) < 0) {
        mvz_error("out of memory classifying the leaks");
    } else {
        size_t ns = 0;
        for (size_t b = 0; b < s.nblocks; b++)
            ns = s.blocks[b].stack + 1 > ns ? s.blocks[b].stack + 1 : ns;
        uint64_t(*v)[8] = calloc(ns ? ns : 1, sizeof(*v));
        if (v) {
            for (size_t b = 0; b < s.nblocks; b++) {
                v[s.blocks[b].stack][l.kind[b]] += s.blocks[b].size;
                v[s.blocks[b].stack][4 + l.kind[b]]++;
            }
            *out = v;
            x->leak_by_stack = (const uint64_t(*)[8])v;
            x->leak_nstacks = ns;
            rc = 0;
        } else {
            mvz_error("out of memory");
        }
    }
    mvz_leaks_free(&l);
    mvz_snap_free(&s);
    mvz_snap_infos_free(list, n);
    return rc;
}

/* --cost retained: the snapshot's dominator tree as a flame graph. */
static int export_retained(struct mvz_export *x, const struct format *fmt, const char *want)
{
    static struct snap_ctx sc;
    struct snap_retention ret = {0};
    int rc = 1;
    memset(&sc, 0, sizeof(sc));
    if (snap_open(&sc, x->trace_path, want) == 0 && snap_retention_build(&sc, &ret) == 0) {
        struct mvz_export_retained rx = {&sc.snap, &ret.r, &ret.g};
        x->sym = sc.sym;
        rc = mvz_export_retained(x, &rx, fmt->write == mvz_export_speedscope) < 0 ? 1 : 0;
    }
    snap_retention_free(&ret);
    snap_close(&sc);
    return rc;
}

/* A trace with a call graph, exported whole: dot, callgrind and
 * speedscope write the call graph. 1 when that was done (*rc set). */
static int export_calls(struct mvz_export *x, const struct format *fmt, int *rc)
{
    int (*write)(struct mvz_export *) =
        fmt->write == mvz_export_callgrind       ? mvz_export_callgraph_callgrind
        : fmt->write == mvz_export_speedscope    ? mvz_export_callgraph_speedscope
        : fmt->write == mvz_export_callgraph_dot ? fmt->write
                                                 : NULL;
    int whole = !x->from_ns && x->to_ns == UINT64_MAX;
    *rc = 1;
    if (!write || (!x->p->trace.callgraph && write != mvz_export_callgraph_dot))
        return 0;
    if (!x->p->trace.callgraph) {
        mvz_error("%s has no call graph: record it with memviz run --callgraph, the program "
                  "built with -finstrument-functions",
                  x->trace_path);
        return 1;
    }
    if (!whole) {
        if (write == mvz_export_callgraph_dot)
            mvz_error("the call graph covers the whole run: no --from or --to");
        return write == mvz_export_callgraph_dot;
    }
    static struct mvz_callgraph g;
    static struct mvz_cg_names names;
    if (mvz_callgraph_build(&g, x->p, 0) < 0 || mvz_cg_names_init(&names, &g, x->sym) < 0) {
        mvz_error("out of memory building the call graph");
    } else {
        x->g = &g;
        x->names = &names;
        *rc = write(x) < 0 ? 1 : 0;
    }
    mvz_cg_names_free(&names);
    mvz_callgraph_free(&g);
    return 1;
}

static int export_trace(struct mvz_export *x, const struct format *fmt, const char *want)
{
    static struct mvz_profile p;
    char err[512];
    struct mvz_profile_options popt = {.from_ns = x->from_ns, .to_ns = x->to_ns, .symbolize = 1};
    if (mvz_profile_load_window(&p, x->trace_path, &popt, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return 1;
    }
    x->p = &p;
    x->sym = mvz_symbols_new(&p.trace);
    uint64_t(*leaks)[8] = NULL;
    int whole = !x->from_ns && x->to_ns == UINT64_MAX, rc = 1;
    if (!x->sym) {
        mvz_error("out of memory");
    } else if (export_calls(x, fmt, &rc)) {
        /* written, or said why not */
    } else if (fmt->write != mvz_export_pprof || !whole || load_leak_kinds(x, want, &leaks) == 0) {
        sum_costs(x);
        rc = fmt->write(x) < 0 ? 1 : 0;
    }
    free(leaks);
    mvz_symbols_free(x->sym);
    mvz_profile_free(&p);
    return rc;
}

/* --children: the merged profile of the process tree (analysis/merge.h). */
static int export_tree(struct mvz_export *x, const struct format *fmt)
{
    static struct mvz_profile p;
    struct proc_tree *t = proc_tree_load(x->trace_path, &p, &x->sym);
    if (!t)
        return 1;
    size_t n = proc_tree_count(t);
    const char **paths = calloc(n + 1, sizeof(*paths));
    uint64_t *starts = calloc(n + 1, sizeof(*starts));
    int rc = 1;
    if (!paths || !starts) {
        mvz_error("out of memory");
    } else {
        for (size_t i = 0; i < n; i++)
            proc_tree_image(t, i, &paths[i], &starts[i]);
        x->p = &p;
        x->nimages = n;
        x->image_paths = paths;
        x->image_starts = starts;
        sum_costs(x);
        rc = fmt->write(x) < 0 ? 1 : 0;
    }
    free(paths);
    free(starts);
    mvz_symbols_free(x->sym);
    mvz_profile_free(&p);
    proc_tree_free(t);
    return rc;
}

/* What --cost retained and --snapshot take: usage error code, or 0. */
static int check_snapshot_options(const struct mvz_export *x, const struct format *fmt,
                                  int retained, const char *snapshot, int children)
{
    if (retained && fmt->write != mvz_export_collapsed && fmt->write != mvz_export_speedscope)
        return mvz_usage_error("export", "--cost retained is for collapsed and speedscope");
    if (!retained && fmt->write != mvz_export_pprof)
        return mvz_usage_error("export", "--snapshot is for --cost retained and pprof");
    if (children)
        return mvz_usage_error("export", "--children merges profiles, not heap snapshots");
    if (x->from_ns || x->to_ns != UINT64_MAX)
        return mvz_usage_error("export", "a heap snapshot is one moment: no --from or --to");
    if (retained && (x->min_percent > 0 || x->fold_recursion))
        return mvz_usage_error("export", "--cost retained folds runs of one site itself and "
                                         "takes no --min-percent or --fold-recursion");
    (void)snapshot;
    return 0;
}

int cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"cost", required_argument, NULL, 'c'},
        {"from", required_argument, NULL, 'F'},
        {"to", required_argument, NULL, 'T'},
        {"output", required_argument, NULL, 'o'},
        {"depth", required_argument, NULL, 'd'},
        {"fold-recursion", no_argument, NULL, 'R'},
        {"min-percent", required_argument, NULL, 'P'},
        {"debug-dir", required_argument, NULL, MVZ_OPT_DEBUG_DIR},
        {"children", no_argument, NULL, 'C'},
        {"snapshot", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const struct format *fmt = NULL;
    const char *outpath = NULL, *snapshot = NULL;
    struct mvz_export x = {.cost = MVZ_COST_PEAK, .to_ns = UINT64_MAX};
    int c, cost, children = 0, retained = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "f:c:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (!(fmt = find_format(optarg)))
                return mvz_usage_error("export", "unknown format '%s'", optarg);
            break;
        case 'c':
            if ((retained = !strcmp(optarg, "retained")))
                break;
            if ((cost = mvz_cost_parse(optarg)) < 0)
                return mvz_usage_error("export", "unknown cost '%s'", optarg);
            x.cost = (enum mvz_cost)cost;
            break;
        case 'F':
            if (mvz_parse_seconds(optarg, &x.from_ns) < 0)
                return mvz_usage_error("export", "--from needs seconds, got '%s'", optarg);
            break;
        case 'T':
            if (mvz_parse_seconds(optarg, &x.to_ns) < 0)
                return mvz_usage_error("export", "--to needs seconds, got '%s'", optarg);
            break;
        case 'o':
            outpath = optarg;
            break;
        case 'd': {
            long v = mvz_parse_count(optarg, 1 << 20);
            if (v < 1)
                return mvz_usage_error("export", "--depth needs a number of frames, got '%s'",
                                       optarg);
            x.depth = (unsigned)v;
            break;
        }
        case 'R':
            x.fold_recursion = 1;
            break;
        case 'P':
            if (mvz_parse_percent(optarg, &x.min_percent) < 0)
                return mvz_usage_error("export", "--min-percent needs 0..100, got '%s'", optarg);
            break;
        case 'C':
            children = 1;
            break;
        case 'S':
            snapshot = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default: {
            int rc = mvz_cmd_shared_option("export", c, argv);
            if (rc)
                return rc;
            break;
        }
        }
    }
    if (!fmt)
        return mvz_usage_error("export", "--format is required");
    if (optind != argc - 1)
        return mvz_usage_error("export", "expects exactly one trace file");
    if (x.to_ns < x.from_ns)
        return mvz_usage_error("export", "--to is before --from");
    if (children && (x.from_ns || x.to_ns != UINT64_MAX))
        return mvz_usage_error("export", "--children merges whole runs: no --from or --to "
                                         "(each image has its own clock)");
    if (retained || snapshot) {
        int rc = check_snapshot_options(&x, fmt, retained, snapshot, children);
        if (rc)
            return rc;
    }
    if (!outpath || !strcmp(outpath, "-")) {
        if (fmt->binary && isatty(1))
            return mvz_usage_error("export", "%s is binary: give -o FILE", fmt->name);
        x.out = stdout;
    } else if (!(x.out = fopen(outpath, "w"))) {
        mvz_error("cannot write %s: %m", outpath);
        return 1;
    }
    unsetenv("DEBUGINFOD_URLS"); /* symbolization must not wait on the network */
    x.trace_path = argv[optind];
    int rc = retained   ? export_retained(&x, fmt, snapshot)
             : children ? export_tree(&x, fmt)
                        : export_trace(&x, fmt, snapshot);
    if (fflush(x.out) != 0 || (x.out != stdout && fclose(x.out) != 0)) {
        mvz_error("cannot write %s: %m", outpath ? outpath : "standard output");
        rc = 1;
    }
    return rc;
}
