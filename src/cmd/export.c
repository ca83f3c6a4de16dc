/*
 * export.c - `memviz export --format F FILE`: writes a trace (or a window
 * of it) in a format another tool reads. The writers live in src/export/.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/profile.h"
#include "analysis/symbols.h"
#include "cmd/cmd.h"
#include "cmd/report.h"
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
    {"chrome", mvz_export_chrome, 0, "Chrome trace event JSON (Perfetto UI, chrome://tracing)"},
};
#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

static void usage(FILE *out)
{
    fprintf(out, "usage: memviz export --format F [--cost C] [--from S] [--to S] [-o OUT]\n"
                 "                     [--depth N] [--fold-recursion] [--min-percent P]\n"
                 "                     [--children] [--debug-dir DIR] FILE\n"
                 "formats:\n");
    for (size_t i = 0; i < NFORMATS; i++)
        fprintf(out, "  %-11s %s\n", formats[i].name, formats[i].what);
    fprintf(out, "costs (collapsed, speedscope; --min-percent of pprof, callgrind): peak\n"
                 "(default), leaked, allocations, bytes, temporary\n"
                 "trimming (every format but chrome): --depth N keeps the N innermost frames of\n"
                 "each stack; --fold-recursion makes a run of frames of one function one frame;\n"
                 "--min-percent P puts the sites under P%% of the cost's total into one\n"
                 "--children: the whole process tree FILE heads, merged, each stack under its\n"
                 "program's name; massif and chrome sum the images' heaps on one clock\n");
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

static int export_trace(struct mvz_export *x, const struct format *fmt)
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
    int rc = 1;
    if (!x->sym) {
        mvz_error("out of memory");
    } else {
        sum_costs(x);
        rc = fmt->write(x) < 0 ? 1 : 0;
    }
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
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const struct format *fmt = NULL;
    const char *outpath = NULL;
    struct mvz_export x = {.cost = MVZ_COST_PEAK, .to_ns = UINT64_MAX};
    int c, cost, children = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "f:c:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (!(fmt = find_format(optarg)))
                return mvz_usage_error("export", "unknown format '%s'", optarg);
            break;
        case 'c':
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
        case MVZ_OPT_DEBUG_DIR: {
            int rc = mvz_cmd_debug_dir("export", optarg);
            if (rc)
                return rc;
            break;
        }
        case 'C':
            children = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return mvz_usage_error("export", "unknown option '%s'", argv[optind - 1]);
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
    int rc = children ? export_tree(&x, fmt) : export_trace(&x, fmt);
    if (fflush(x.out) != 0 || (x.out != stdout && fclose(x.out) != 0)) {
        mvz_error("cannot write %s: %m", outpath ? outpath : "standard output");
        rc = 1;
    }
    return rc;
}
