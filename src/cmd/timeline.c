/*
 * timeline.c - `memviz timeline FILE`: the heap (and RSS) over time with the
 * live bytes of the top sites, as a terminal chart (in the manner of
 * ms_print) or as CSV / JSON for plotting elsewhere.
 *
 * Two replays: the first finds the sites that held the most at the peak,
 * the second samples them with the totals (src/analysis/timeline.c).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "analysis/snapshot.h"
#include "analysis/symbols.h"
#include "analysis/timeline.h"
#include "cmd/cmd.h"
#include "util/fmt.h"
#include "util/json.h"
#include "util/sort.h"

enum tl_format { TL_CHART, TL_CSV, TL_JSON };

/* A moment the timeline marks: a phase's start, a log line, a snapshot. */
struct mark {
    uint64_t t_ns;
    char kind; /* 'P', 'L', 'S' */
    const char *text;
};

struct tl_cmd {
    enum tl_format format;
    size_t points, top, height;
    uint64_t from_ns, to_ns;
    struct mvz_profile first, second;
    struct mvz_symbols *sym;
    struct mvz_timeline tl;
    uint32_t *top_stacks; /* series k is stack top_stacks[k] */
    uint32_t *group_of;
    size_t ngroup_of;
    char **names;
    struct mark *marks; /* phases, log lines, snapshots in the window, by time */
    size_t nmarks;
    struct mvz_snap_info *snaps; /* the snapshots' names the marks point into */
    size_t nsnaps;
};

/* ---- choosing the series ---- */
static const struct mvz_site *rank_sites;
static int by_at_peak(const void *a, const void *b)
{
    const struct mvz_site *x = &rank_sites[*(const uint32_t *)a];
    const struct mvz_site *y = &rank_sites[*(const uint32_t *)b];
    if (x->at_peak_bytes != y->at_peak_bytes)
        return x->at_peak_bytes > y->at_peak_bytes ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static char *series_name(struct mvz_symbols *sym, uint32_t stack)
{
    struct mvz_frame f[64];
    size_t n = mvz_symbols_stack(sym, stack, f, 64);
    char buf[1024];
    if (n && f[0].file)
        snprintf(buf, sizeof(buf), "%s (%s:%u)", f[0].function, f[0].file, f[0].line);
    else
        snprintf(buf, sizeof(buf), "%s", n ? f[0].function : "??");
    return strdup(buf);
}

static int choose_series(struct tl_cmd *c)
{
    struct mvz_profile *p = &c->first;
    uint32_t *order = malloc((p->sites_cap ? p->sites_cap : 1) * sizeof(*order));
    size_t n = 0;
    if (!order)
        return -1;
    for (size_t i = 0; i < p->sites_cap; i++)
        if (p->sites[i].at_peak_bytes)
            order[n++] = (uint32_t)i;
    rank_sites = p->sites;
    mvz_sort(order, n, sizeof(*order), by_at_peak);
    if (n > c->top)
        n = c->top;
    c->top_stacks = order;
    c->ngroup_of = p->sites_cap;
    c->group_of = calloc(c->ngroup_of ? c->ngroup_of : 1, sizeof(*c->group_of));
    c->names = calloc(n ? n : 1, sizeof(*c->names));
    if (!c->group_of || !c->names)
        return -1;
    for (size_t k = 0; k < n; k++) {
        c->group_of[order[k]] = (uint32_t)k + 1;
        c->names[k] = series_name(c->sym, order[k]);
    }
    c->tl.nseries = n;
    return 0;
}

/* ---- chart ---- */
/* Under the time axis: P for a phase, L a log line, S a snapshot (* for
 * several in one column), then each with its time. */
static void print_marks(struct tl_cmd *c, FILE *out)
{
    const struct mvz_timeline *tl = &c->tl;
    if (!c->nmarks || !tl->npoints)
        return;
    char *line = malloc(tl->npoints + 1);
    if (!line)
        return;
    memset(line, ' ', tl->npoints);
    line[tl->npoints] = 0;
    uint64_t span = tl->to_ns > tl->from_ns ? tl->to_ns - tl->from_ns : 1;
    for (size_t i = 0; i < c->nmarks; i++) {
        size_t col = (size_t)((double)(c->marks[i].t_ns - tl->from_ns) / (double)span *
                              (double)(tl->npoints - 1));
        col = col < tl->npoints ? col : tl->npoints - 1;
        line[col] = line[col] == ' ' || line[col] == c->marks[i].kind ? c->marks[i].kind : '*';
    }
    fprintf(out, "%12s%s\n", "", line);
    free(line);
    char a[48];
    fprintf(out, "marks (P phase, L log line, S snapshot):\n");
    for (size_t i = 0; i < c->nmarks && i < 30; i++)
        fprintf(out, "  %c %10s  %s\n", c->marks[i].kind,
                mvz_fmt_duration(c->marks[i].t_ns, a, sizeof(a)), c->marks[i].text);
    if (c->nmarks > 30)
        fprintf(out, "  ... %zu more (--json has them all)\n", c->nmarks - 30);
}

static void print_chart(struct tl_cmd *c, FILE *out)
{
    const struct mvz_timeline *tl = &c->tl;
    uint64_t top = 1;
    for (size_t i = 0; i < tl->npoints; i++) {
        if (tl->heap_max[i] > top)
            top = tl->heap_max[i];
        if (tl->rss[i] > top)
            top = tl->rss[i];
    }
    char a[48], b[48], d[48];
    fprintf(out, "memviz timeline: %s\n", c->second.trace.path);
    fprintf(out, "heap ('#', highest in each column) and RSS ('.'), %s to %s, %s per column\n\n",
            mvz_fmt_duration(tl->from_ns, a, sizeof(a)), mvz_fmt_duration(tl->to_ns, b, sizeof(b)),
            mvz_fmt_duration(tl->step_ns, d, sizeof(d)));
    for (size_t row = c->height; row >= 1; row--) {
        uint64_t level = top * row / c->height, below = top * (row - 1) / c->height;
        if (row == c->height || row == c->height / 2)
            fprintf(out, "%10s ^", mvz_fmt_bytes(level, a, sizeof(a)));
        else
            fprintf(out, "%10s |", "");
        for (size_t i = 0; i < tl->npoints; i++) {
            int heap = tl->heap_max[i] > below;
            int rss = tl->rss[i] > below && tl->rss[i] <= level;
            fputc(heap ? '#' : rss ? '.' : ' ', out);
        }
        fputc('\n', out);
    }
    fprintf(out, "%10s +", "0 B");
    for (size_t i = 0; i < tl->npoints; i++)
        fputc('-', out);
    fprintf(out, "> time\n%12s%-*s%s\n", "", (int)(tl->npoints > 10 ? tl->npoints - 10 : 0),
            mvz_fmt_duration(tl->from_ns, a, sizeof(a)), mvz_fmt_duration(tl->to_ns, b, sizeof(b)));
    print_marks(c, out);
    fprintf(out, "\npeak heap %s at %s; peak RSS %s\n",
            mvz_fmt_bytes(c->second.sum.peak_bytes, a, sizeof(a)),
            mvz_fmt_duration(c->second.sum.peak_time_ns, b, sizeof(b)),
            mvz_fmt_bytes(c->second.trace.peak_rss, d, sizeof(d)));
    fprintf(out, "\nTop sites at the peak (their series are in --csv and --json):\n");
    for (size_t k = 0; k < tl->nseries; k++)
        fprintf(out, "  #%zu  %s at peak  %s\n", k + 1,
                mvz_fmt_bytes(c->first.sites[c->top_stacks[k]].at_peak_bytes, a, sizeof(a)),
                c->names[k]);
    if (!tl->nseries)
        fprintf(out, "  (none)\n");
}

/* ---- CSV and JSON ---- */
static void csv_quoted(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void print_csv(struct tl_cmd *c, FILE *out)
{
    const struct mvz_timeline *tl = &c->tl;
    fprintf(out, "time_s,heap_bytes,heap_max_bytes,rss_bytes");
    for (size_t k = 0; k < tl->nseries; k++) {
        fputc(',', out);
        csv_quoted(out, c->names[k]);
    }
    fputc('\n', out);
    for (size_t i = 0; i < tl->npoints; i++) {
        fprintf(out, "%.6f,%" PRIu64 ",%" PRIu64 ",%" PRIu64, (double)tl->t[i] / 1e9, tl->heap[i],
                tl->heap_max[i], tl->rss[i]);
        for (size_t k = 0; k < tl->nseries; k++)
            fprintf(out, ",%" PRIu64, tl->series[i * tl->nseries + k]);
        fputc('\n', out);
    }
}

static void print_json(struct tl_cmd *c, FILE *out)
{
    const struct mvz_timeline *tl = &c->tl;
    struct mvz_json j;
    mvz_json_init(&j, out);
    mvz_json_begin_object(&j);
    mvz_json_put_uint(&j, "memviz_timeline", 1);
    mvz_json_put_string(&j, "trace", c->second.trace.path);
    mvz_json_put_uint(&j, "from_ns", tl->from_ns);
    mvz_json_put_uint(&j, "to_ns", tl->to_ns);
    mvz_json_put_uint(&j, "step_ns", tl->step_ns);
    mvz_json_put_uint(&j, "peak_bytes", c->second.sum.peak_bytes);
    mvz_json_put_uint(&j, "peak_time_ns", c->second.sum.peak_time_ns);
    mvz_json_key(&j, "series");
    mvz_json_begin_array(&j);
    for (size_t k = 0; k < tl->nseries; k++) {
        mvz_json_begin_object(&j);
        mvz_json_put_uint(&j, "stack_id", c->top_stacks[k]);
        mvz_json_put_string(&j, "name", c->names[k]);
        mvz_json_put_uint(&j, "at_peak_bytes", c->first.sites[c->top_stacks[k]].at_peak_bytes);
        mvz_json_end_object(&j);
    }
    mvz_json_end_array(&j);
    mvz_json_key(&j, "points");
    mvz_json_begin_array(&j);
    for (size_t i = 0; i < tl->npoints; i++) {
        mvz_json_begin_object(&j);
        mvz_json_put_uint(&j, "t_ns", tl->t[i]);
        mvz_json_put_uint(&j, "heap_bytes", tl->heap[i]);
        mvz_json_put_uint(&j, "heap_max_bytes", tl->heap_max[i]);
        mvz_json_put_uint(&j, "rss_bytes", tl->rss[i]);
        mvz_json_key(&j, "series");
        mvz_json_begin_array(&j);
        for (size_t k = 0; k < tl->nseries; k++)
            mvz_json_uint(&j, tl->series[i * tl->nseries + k]);
        mvz_json_end_array(&j);
        mvz_json_end_object(&j);
    }
    mvz_json_end_array(&j);
    mvz_json_key(&j, "marks");
    mvz_json_begin_array(&j);
    for (size_t i = 0; i < c->nmarks; i++) {
        mvz_json_begin_object(&j);
        mvz_json_key(&j, "kind");
        mvz_json_string(&j, c->marks[i].kind == 'P'   ? "phase"
                            : c->marks[i].kind == 'L' ? "log"
                                                      : "snapshot");
        mvz_json_put_string(&j, "text", c->marks[i].text);
        mvz_json_put_uint(&j, "t_ns", c->marks[i].t_ns);
        mvz_json_end_object(&j);
    }
    mvz_json_end_array(&j);
    mvz_json_end_object(&j);
}

/* ---- the command ---- */
static void collect_marks(struct tl_cmd *c, const char *path);

static int build(struct tl_cmd *c, const char *path)
{
    char err[512];
    struct mvz_profile_options opt = {.from_ns = c->from_ns, .to_ns = c->to_ns, .symbolize = 1};
    if (mvz_profile_load_window(&c->first, path, &opt, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return -1;
    }
    c->sym = mvz_symbols_new(&c->first.trace);
    if (!c->sym || choose_series(c) < 0) {
        mvz_error("out of memory");
        return -1;
    }
    uint64_t to = c->to_ns;
    if (to == UINT64_MAX)
        to = c->first.sum.duration_ns;
    if (mvz_timeline_build(&c->tl, &c->second, path, c->from_ns, to, c->points, c->group_of,
                           c->ngroup_of, c->tl.nseries, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return -1;
    }
    collect_marks(c, path);
    return 0;
}

static int by_time(const void *a, const void *b)
{
    const struct mark *p = a, *q = b;
    return p->t_ns < q->t_ns ? -1 : p->t_ns > q->t_ns;
}

static void add_mark(struct tl_cmd *c, size_t cap, uint64_t t, char kind, const char *text)
{
    uint64_t to = c->tl.to_ns;
    if (c->nmarks < cap && t >= c->tl.from_ns && t <= to)
        c->marks[c->nmarks++] = (struct mark){t, kind, text};
}

/* The program's phases and log (memviz.h) and the snapshots taken. */
static void collect_marks(struct tl_cmd *c, const char *path)
{
    char err[512];
    const struct mvz_user *u = &c->second.trace.user;
    if (mvz_snap_list(path, &c->snaps, &c->nsnaps, err, sizeof(err)) < 0)
        c->nsnaps = 0;
    const struct mvz_snap_info *snaps = c->snaps;
    size_t nsnaps = c->nsnaps;
    size_t cap = u->nphases + u->nlogs + nsnaps;
    c->marks = malloc((cap ? cap : 1) * sizeof(*c->marks));
    if (!c->marks)
        return;
    for (size_t i = 0; i < u->nphases; i++)
        add_mark(c, cap, u->phases[i].ts, 'P', u->phases[i].text);
    for (size_t i = 0; i < u->nlogs; i++)
        add_mark(c, cap, u->logs[i].ts, 'L', u->logs[i].text);
    for (size_t i = 0; i < nsnaps; i++)
        add_mark(c, cap, snaps[i].ts, 'S', snaps[i].name);
    mvz_sort(c->marks, c->nmarks, sizeof(*c->marks), by_time);
}

static void cleanup(struct tl_cmd *c)
{
    free(c->marks);
    mvz_snap_infos_free(c->snaps, c->nsnaps);
    size_t nseries = c->tl.nseries;
    mvz_timeline_free(&c->tl);
    for (size_t k = 0; c->names && k < nseries; k++)
        free(c->names[k]);
    free(c->names);
    free(c->group_of);
    free(c->top_stacks);
    if (c->sym)
        mvz_symbols_free(c->sym);
    mvz_profile_free(&c->first);
    mvz_profile_free(&c->second);
}

int cmd_timeline(int argc, char **argv)
{
    static const struct option opts[] = {
        {"csv", no_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"points", required_argument, NULL, 'p'},
        {"top", required_argument, NULL, 'n'},
        {"height", required_argument, NULL, 'H'},
        {"from", required_argument, NULL, 'F'},
        {"to", required_argument, NULL, 'T'},
        {"debug-dir", required_argument, NULL, MVZ_OPT_DEBUG_DIR},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static struct tl_cmd c;
    memset(&c, 0, sizeof(c));
    c.points = 0;
    c.top = 5;
    c.height = 20;
    c.to_ns = UINT64_MAX;
    long v;
    int o;
    optind = 1;
    opterr = 0;
    while ((o = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
        switch (o) {
        case 'c':
        case 'j':
            c.format = o == 'c' ? TL_CSV : TL_JSON;
            break;
        case 'p':
        case 'n':
        case 'H':
            if ((v = mvz_parse_count(optarg, 100000)) < 1)
                return mvz_usage_error("timeline", "--%s needs a positive number, got '%s'",
                                       o == 'p'   ? "points"
                                       : o == 'n' ? "top"
                                                  : "height",
                                       optarg);
            *(o == 'p' ? &c.points : o == 'n' ? &c.top : &c.height) = (size_t)v;
            break;
        case 'F':
        case 'T':
            if (mvz_parse_seconds(optarg, o == 'F' ? &c.from_ns : &c.to_ns) < 0)
                return mvz_usage_error("timeline", "--%s needs seconds, got '%s'",
                                       o == 'F' ? "from" : "to", optarg);
            break;
        case 'h':
            printf("usage: memviz timeline [--csv|--json] [--points N] [--top K] [--height H]\n"
                   "                       [--from S] [--to S] [--debug-dir DIR] FILE\n");
            return 0;
        default: {
            int rc = mvz_cmd_shared_option("timeline", o, argv);
            if (rc)
                return rc;
            break;
        }
        }
    }
    if (optind != argc - 1)
        return mvz_usage_error("timeline", "expects exactly one trace file");
    if (c.to_ns < c.from_ns)
        return mvz_usage_error("timeline", "--to is before --from");
    if (!c.points)
        c.points = c.format == TL_CHART ? 72 : 200;
    unsetenv("DEBUGINFOD_URLS"); /* symbolization must not wait on the network */
    int rc = 1;
    if (build(&c, argv[optind]) == 0) {
        if (c.format == TL_CSV)
            print_csv(&c, stdout);
        else if (c.format == TL_JSON)
            print_json(&c, stdout);
        else
            print_chart(&c, stdout);
        rc = fflush(stdout) == 0 ? 0 : 1;
    }
    cleanup(&c);
    return rc;
}
