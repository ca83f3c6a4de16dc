/*
 * report.c - `memviz report`: loads a trace (or a window of it), selects
 * the sites the views show (--filter, --exclude, suppressions), groups them
 * (--by) or builds a call tree (--tree), and hands the result to the text
 * or JSON printer. Every number printed is defined in docs/METRICS.md.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cmd.h"
#include "analysis/snapshot.h"
#include "cmd/report.h"
#include "util/fmt.h"
#include "util/sort.h"

static const char usage_text[] =
    "usage: memviz report [options] FILE\n"
    "       memviz report [--json] DIR      the process trees of the traces in DIR\n"
    "  --json                 one JSON object instead of text\n"
    "  --top N                sites per list (default 10); in JSON, the sites of those lists\n"
    "  --all-sites            JSON: every site, not only the top ones\n"
    "  --children             the whole process tree: a table of every traced child and\n"
    "                         exec'd image, then one report of all their sites, each\n"
    "                         stack under its program's name\n"
    "  --by stack|function|file|module\n"
    "                         group sites by the allocating frame's function, file or module\n"
    "  --sort peak|leaked|allocations|bytes|temporary\n"
    "                         one list (or tree) ranked by this cost\n"
    "  --tree top-down|bottom-up\n"
    "                         a call tree with inclusive and self costs\n"
    "  --depth N              tree depth limit\n"
    "  --min-percent P        hide tree nodes under P% of the total (default 1)\n"
    "  --from S, --to S       analyze only the part of the run between S and S seconds\n"
    "  --phase NAME           analyze only phase NAME (memviz_phase), to the next phase\n"
    "  --at S|peak            what was live at S seconds, or at the peak\n"
    "  --filter GLOB          only sites with a frame whose function, file or module matches\n"
    "  --exclude GLOB         drop sites with a frame that matches\n"
    "  --suppressions FILE    leak suppressions, LeakSanitizer syntax (leak:PATTERN)\n"
    "  --no-default-suppressions\n"
    "                         do not apply the built-in list for glibc and libstdc++\n"
    "  --histogram            allocation sizes by power of two\n"
    "  --threads              per-thread breakdown\n"
    "  --debug-dir DIR        also look for separate debug files in DIR (DIR/.build-id/...)\n";

enum mvz_cost report_list_cost(const struct report *r)
{
    if (r->o.sort >= 0)
        return (enum mvz_cost)r->o.sort;
    if (r->o.at == AT_TIME)
        return MVZ_COST_LEAKED; /* the window ends at the moment: live then */
    return MVZ_COST_PEAK;
}

uint64_t report_site_cost(const struct report_site *rs, enum mvz_cost c)
{
    if (c == MVZ_COST_LEAKED && rs->supp)
        return 0;
    return mvz_site_cost(rs->s, c);
}

/* ---- options ---- */
static int parse_tree(const char *v)
{
    if (!strcmp(v, "top-down"))
        return TREE_TOP_DOWN;
    if (!strcmp(v, "bottom-up"))
        return TREE_BOTTOM_UP;
    return -1;
}

enum {
    O_FROM = 256,
    O_TO,
    O_AT,
    O_FILTER,
    O_EXCLUDE,
    O_SUPP,
    O_NO_DEFSUPP,
    O_HIST,
    O_THREADS,
    O_ALL_SITES,
    O_CHILDREN,
    O_MINPCT,
    O_PHASE
};

static int parse_options(struct report *r, int argc, char **argv, int *no_default_supp)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"top", required_argument, NULL, 'n'},
        {"by", required_argument, NULL, 'b'},
        {"sort", required_argument, NULL, 's'},
        {"tree", required_argument, NULL, 't'},
        {"depth", required_argument, NULL, 'd'},
        {"min-percent", required_argument, NULL, O_MINPCT},
        {"from", required_argument, NULL, O_FROM},
        {"phase", required_argument, NULL, O_PHASE},
        {"to", required_argument, NULL, O_TO},
        {"at", required_argument, NULL, O_AT},
        {"filter", required_argument, NULL, O_FILTER},
        {"exclude", required_argument, NULL, O_EXCLUDE},
        {"suppressions", required_argument, NULL, O_SUPP},
        {"no-default-suppressions", no_argument, NULL, O_NO_DEFSUPP},
        {"histogram", no_argument, NULL, O_HIST},
        {"threads", no_argument, NULL, O_THREADS},
        {"all-sites", no_argument, NULL, O_ALL_SITES},
        {"children", no_argument, NULL, O_CHILDREN},
        {"debug-dir", required_argument, NULL, MVZ_OPT_DEBUG_DIR},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct report_options *o = &r->o;
    char err[512];
    long v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jn:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            o->json = 1;
            break;
        case 'n':
            if ((v = mvz_parse_count(optarg, 1000000)) < 0)
                return mvz_usage_error("report", "--top needs a number, got '%s'", optarg);
            o->top = (size_t)v;
            break;
        case 'b':
            if ((v = mvz_by_parse(optarg)) < 0)
                return mvz_usage_error("report",
                                       "--by takes stack, function, file or module, "
                                       "got '%s'",
                                       optarg);
            o->by = (enum mvz_by)v;
            break;
        case 's':
            if ((o->sort = mvz_cost_parse(optarg)) < 0)
                return mvz_usage_error("report", "unknown cost '%s' for --sort", optarg);
            break;
        case 't':
            if ((v = parse_tree(optarg)) < 0)
                return mvz_usage_error("report", "--tree takes top-down or bottom-up, got '%s'",
                                       optarg);
            o->tree = (enum report_tree)v;
            break;
        case 'd':
            if ((v = mvz_parse_count(optarg, 100000)) < 1)
                return mvz_usage_error("report", "--depth needs a positive number, got '%s'",
                                       optarg);
            o->tree_depth = (size_t)v;
            break;
        case O_MINPCT:
            if (mvz_parse_percent(optarg, &o->min_percent) < 0)
                return mvz_usage_error("report", "--min-percent needs 0..100, got '%s'", optarg);
            break;
        case O_FROM:
        case O_TO:
            if (mvz_parse_seconds(optarg, c == O_FROM ? &o->from_ns : &o->to_ns) < 0)
                return mvz_usage_error("report", "--%s needs seconds, got '%s'",
                                       c == O_FROM ? "from" : "to", optarg);
            o->windowed = 1;
            break;
        case O_PHASE:
            o->phase = optarg;
            break;
        case O_AT:
            if (!strcmp(optarg, "peak"))
                o->at = AT_PEAK;
            else if (mvz_parse_seconds(optarg, &o->at_ns) == 0)
                o->at = AT_TIME;
            else
                return mvz_usage_error("report", "--at needs seconds or 'peak', got '%s'", optarg);
            break;
        case O_FILTER:
        case O_EXCLUDE:
            if (mvz_select_add_filter(&r->sel, optarg, c == O_EXCLUDE) < 0)
                return mvz_usage_error("report", "out of memory");
            break;
        case O_SUPP:
            if (mvz_select_load_suppressions(&r->sel, optarg, err, sizeof(err)) < 0)
                return mvz_usage_error("report", "%s", err);
            break;
        case O_NO_DEFSUPP:
            *no_default_supp = 1;
            break;
        case O_HIST:
            o->histogram = 1;
            break;
        case O_THREADS:
            o->threads = 1;
            break;
        case O_ALL_SITES:
            o->all_sites = 1;
            break;
        case O_CHILDREN:
            o->children = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return -1;
        default: {
            int rc = mvz_cmd_shared_option("report", c, argv);
            if (rc)
                return rc;
            break;
        }
        }
    }
    if (optind != argc - 1)
        return mvz_usage_error("report", "expects exactly one trace file");
    if (o->to_ns < o->from_ns)
        return mvz_usage_error("report", "--to is before --from");
    if (o->phase && (o->windowed || o->at == AT_TIME || o->children))
        return mvz_usage_error("report", "--phase is the window: no --from, --to, --at TIME "
                                         "or --children with it");
    if (o->at == AT_TIME && o->windowed)
        return mvz_usage_error("report", "--at TIME cannot be combined with --from/--to");
    if (o->children && (o->windowed || o->at == AT_TIME))
        return mvz_usage_error("report", "--children merges whole runs: no --from, --to or --at "
                                         "TIME (each image has its own clock)");
    return 0;
}

/* ---- building the views ---- */
static int site_present(const struct mvz_site *s)
{
    return s->allocations || s->at_peak_bytes || s->live_bytes;
}

static int add_to_views(struct report *r, struct report_site *rs, const struct mvz_frame *f,
                        size_t n)
{
    if (r->o.by != MVZ_BY_STACK && mvz_group_add(&r->groups, f, n, rs->s) < 0)
        return -1;
    if (r->o.tree != TREE_NONE) {
        uint64_t cost[MVZ_COST_COUNT];
        for (int c = 0; c < MVZ_COST_COUNT; c++)
            cost[c] = report_site_cost(rs, (enum mvz_cost)c);
        if (mvz_calltree_add(&r->tree, f, n, cost) < 0)
            return -1;
    }
    return 0;
}

/* Whether every site's frames are needed (filters, groups, trees), or only
 * those of leaking sites (for suppressions): symbolizing tens of thousands
 * of stacks nobody will see was most of a large report's time. */
static int needs_all_frames(const struct report *r)
{
    return r->sel.nfilters || r->sel.nexcludes || r->o.by != MVZ_BY_STACK || r->o.tree != TREE_NONE;
}

/* Suppression bits by (generation, return address). A default report
 * only needs the frames of leaking sites, for the suppressions; cc1plus
 * leaves 14,000 of them, mostly sharing their outer frames, and
 * symbolizing and matching each address once instead of once per site
 * took a tenth off the report. */
struct supp_entry {
    uint64_t pc;
    uint32_t gen, used;
    struct mvz_supp_bits bits;
};

struct supp_memo {
    struct supp_entry *v;
    size_t cap, used;
    struct mvz_supp_bits stack[MVZ_STACK_MAX_FRAMES];
};

static size_t supp_slot(uint64_t pc, uint32_t gen, size_t cap)
{
    return (size_t)((pc ^ (uint64_t)gen << 48) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

static int supp_grow(struct supp_memo *m)
{
    size_t cap = m->cap ? m->cap * 2 : 4096;
    struct supp_entry *v = calloc(cap, sizeof(*v));
    if (!v)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->v[i].used)
            continue;
        size_t j = supp_slot(m->v[i].pc, m->v[i].gen, cap);
        while (v[j].used)
            j = (j + 1) & (cap - 1);
        v[j] = m->v[i];
    }
    free(m->v);
    m->v = v;
    m->cap = cap;
    return 0;
}

/* The bits of one address, computed on first sight; NULL when out of
 * memory or with more rules than bits. */
static const struct mvz_supp_bits *supp_bits(struct report *r, uint32_t gen, uint64_t pc)
{
    struct supp_memo *m = r->supp_memo;
    if (2 * (m->used + 1) > m->cap && supp_grow(m) < 0)
        return NULL;
    size_t j = supp_slot(pc, gen, m->cap);
    while (m->v[j].used && (m->v[j].pc != pc || m->v[j].gen != gen))
        j = (j + 1) & (m->cap - 1);
    struct supp_entry *e = &m->v[j];
    if (!e->used) {
        size_t n = mvz_symbols_address(r->sym, gen, pc, r->frames, REPORT_MAX_FRAMES);
        if (mvz_select_supp_bits(&r->sel, r->frames, n, &e->bits) < 0)
            return NULL;
        e->pc = pc;
        e->gen = gen;
        e->used = 1;
        m->used++;
    }
    return &e->bits;
}

/* The rule that suppresses a leaking site's leaks, or NULL: as
 * mvz_select_suppression on its frames, which it falls back on for
 * stacks that are not plain addresses (pseudo-frames) or whose frames
 * would not all fit. */
static struct mvz_suppression *site_suppression(struct report *r, uint32_t stack)
{
    const struct mvz_stack *st = mvz_trace_stack(&r->p.trace, stack);
    if (!r->supp_memo && !(r->supp_memo = calloc(1, sizeof(*r->supp_memo))))
        st = NULL;
    if (st && st->depth && st->depth <= MVZ_STACK_MAX_FRAMES) {
        struct mvz_supp_bits *b = r->supp_memo->stack;
        size_t frames = 0, i = 0;
        for (; i < st->depth; i++) {
            const struct mvz_supp_bits *e = supp_bits(r, st->gen, st->frames[i]);
            if (!e)
                break;
            b[i] = *e;
            frames += e->nframes;
        }
        if (i == st->depth && frames && frames <= REPORT_MAX_FRAMES)
            return mvz_select_suppression_bits(&r->sel, b, i);
    }
    size_t n = mvz_symbols_stack(r->sym, stack, r->frames, REPORT_MAX_FRAMES);
    return mvz_select_suppression(&r->sel, r->frames, n);
}

/* Symbolizes each site once: filters, suppressions, groups and the tree
 * all look at the same frames. */
static int select_sites(struct report *r)
{
    struct mvz_profile *p = &r->p;
    r->sites = calloc(p->sites_cap ? p->sites_cap : 1, sizeof(*r->sites));
    if (!r->sites)
        return -1;
    int all = needs_all_frames(r);
    r->groups.by = r->o.by;
    if (r->o.tree != TREE_NONE && mvz_calltree_init(&r->tree, r->o.tree == TREE_TOP_DOWN) < 0)
        return -1;
    for (size_t i = 0; i < p->sites_cap; i++) {
        struct mvz_site *s = &p->sites[i];
        if (!site_present(s))
            continue;
        r->nsites_all++;
        size_t n = 0;
        if (all)
            n = mvz_symbols_stack(r->sym, s->stack, r->frames, REPORT_MAX_FRAMES);
        if (all && !mvz_select_keep(&r->sel, r->frames, n))
            continue;
        struct report_site *rs = &r->sites[r->nsites++];
        rs->s = s;
        if (s->leaked_bytes && r->sel.nsupp)
            rs->supp =
                all ? mvz_select_suppression(&r->sel, r->frames, n) : site_suppression(r, s->stack);
        if (rs->supp) {
            rs->supp->bytes += s->leaked_bytes;
            rs->supp->blocks += s->leaked_blocks;
            rs->supp->sites++;
            r->suppressed.leaked_bytes += s->leaked_bytes;
            r->suppressed.leaked_blocks += s->leaked_blocks;
        }
        mvz_site_add(&r->shown, s);
        if (add_to_views(r, rs, r->frames, n) < 0)
            return -1;
    }
    if (r->o.tree != TREE_NONE)
        mvz_calltree_sort(&r->tree, report_list_cost(r));
    return 0;
}

static enum mvz_cost sort_cost;
static int site_desc(const void *a, const void *b)
{
    const struct report_site *x = a, *y = b;
    uint64_t kx = report_site_cost(x, sort_cost), ky = report_site_cost(y, sort_cost);
    if (kx != ky)
        return kx > ky ? -1 : 1;
    return x->s->stack < y->s->stack ? -1 : x->s->stack > y->s->stack;
}

/* Max-heap in site_desc order: the root is the last of the ones kept. */
static void worst_down(struct report_site *h, size_t n, size_t i)
{
    for (;;) {
        size_t m = i, l = 2 * i + 1, rr = l + 1;
        if (l < n && site_desc(&h[l], &h[m]) > 0)
            m = l;
        if (rr < n && site_desc(&h[rr], &h[m]) > 0)
            m = rr;
        if (m == i)
            return;
        struct report_site t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* See report.h. A full sort of a large program's
 * 100,000 sites for each list took longer than printing the report. */
struct report_site *report_top_sites(struct report *r, enum mvz_cost c, size_t top, size_t *n)
{
    sort_cost = c;
    size_t k = top < r->nsites ? top : r->nsites;
    struct report_site *h = malloc((k ? k : 1) * sizeof(*h));
    *n = 0;
    if (!h)
        return NULL;
    for (size_t i = 0; i < r->nsites && k; i++) {
        if (!report_site_cost(&r->sites[i], sort_cost))
            continue;
        if (*n < k) {
            h[(*n)++] = r->sites[i];
            for (size_t j = *n - 1; j > 0 && site_desc(&h[(j - 1) / 2], &h[j]) < 0;
                 j = (j - 1) / 2) {
                struct report_site t = h[j];
                h[j] = h[(j - 1) / 2];
                h[(j - 1) / 2] = t;
            }
        } else if (site_desc(&r->sites[i], &h[0]) < 0) {
            h[0] = r->sites[i];
            worst_down(h, *n, 0);
        }
    }
    mvz_sort(h, *n, sizeof(*h), site_desc);
    return h;
}

const char *report_exit_text(const struct mvz_trace *t, char *buf, size_t cap)
{
    if (t->have_exit && t->exit_signal)
        snprintf(buf, cap, "killed by signal %d (%s)", t->exit_signal, strsignal(t->exit_signal));
    else if (t->have_exit) {
        int how = t->have_agent_exit ? t->agent_exit_how : t->exit_how;
        int plain = how == MVZ_EXIT_STATUS || how == MVZ_EXIT_UNKNOWN;
        snprintf(buf, cap, "exited with status %d%s%s%s", t->exit_status, plain ? "" : " (via ",
                 plain ? "" : mvz_exit_how_name(how), plain ? "" : ")");
    } else if (t->have_exec)
        snprintf(buf, cap, "replaced itself with exec(%s)", t->exec_path ? t->exec_path : "?");
    else
        snprintf(buf, cap,
                 "unknown: the trace ends without an exit record (killed by SIGKILL, "
                 "or still running)");
    return buf;
}

void report_put_command(FILE *out, const struct mvz_trace *t)
{
    for (size_t i = 0; i < t->argc; i++) {
        if (i)
            fputc(' ', out);
        mvz_put_shell_word(out, t->argv[i]);
    }
}

int report_stack_at_cap(const struct report *r, uint32_t stack)
{
    const struct mvz_trace *t = &r->p.trace;
    return t->depth > 0 && stack < t->stacks_cap && t->stacks[stack].frames &&
           t->stacks[stack].depth >= (uint32_t)t->depth;
}

/* The leak kinds of the snapshot taken at exit, when there is one. */
static void load_leaks(struct report *r, const char *path)
{
    struct mvz_snapshot s;
    struct mvz_leaks l;
    char err[512];
    if (!r->p.trace.exit_snapshot ||
        mvz_snap_load(path, r->p.trace.exit_snapshot, &s, err, sizeof(err)) < 0)
        return;
    if (mvz_leaks_classify(&s, &l) == 0) {
        r->leaks = l.t;
        r->have_leaks = 1;
        mvz_leaks_free(&l);
    }
    mvz_snap_free(&s);
}

static int load(struct report *r, const char *path)
{
    if (r->o.children) {
        if (!(r->ptree = proc_tree_load(path, &r->p, &r->sym)))
            return -1;
        if (select_sites(r) < 0) {
            mvz_error("out of memory building the report");
            return -1;
        }
        return 0;
    }
    if (r->o.phase && report_phase_window(r, path) < 0)
        return -1;
    struct mvz_profile_options popt = {
        .from_ns = r->o.from_ns, .to_ns = r->o.to_ns, .symbolize = 1};
    if (r->o.at == AT_TIME)
        popt.to_ns = r->o.at_ns;
    char err[512];
    if (mvz_profile_load_window(&r->p, path, &popt, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return -1;
    }
    if (r->o.at == AT_TIME && r->o.at_ns > r->p.sum.duration_ns) {
        mvz_error("--at %.3f s is after the end of the run (%.3f s)", (double)r->o.at_ns / 1e9,
                  (double)r->p.sum.duration_ns / 1e9);
        return -1;
    }
    r->sym = mvz_symbols_new(&r->p.trace);
    if (!r->sym || select_sites(r) < 0) {
        mvz_error("out of memory building the report");
        return -1;
    }
    if (!r->o.windowed && r->o.at != AT_TIME)
        load_leaks(r, path);
    return 0;
}

static void report_free(struct report *r)
{
    if (r->sym)
        mvz_symbols_free(r->sym);
    proc_tree_free(r->ptree);
    mvz_select_free(&r->sel);
    if (r->supp_memo)
        free(r->supp_memo->v);
    free(r->supp_memo);
    mvz_grouping_free(&r->groups);
    if (r->o.tree != TREE_NONE)
        mvz_calltree_free(&r->tree);
    free(r->sites);
    mvz_profile_free(&r->p);
}

int cmd_report(int argc, char **argv)
{
    static struct report r;
    memset(&r, 0, sizeof(r));
    r.o.top = 10;
    r.o.sort = -1;
    r.o.min_percent = 1.0;
    r.o.to_ns = UINT64_MAX;
    int no_default_supp = 0;
    int rc = parse_options(&r, argc, argv, &no_default_supp);
    if (rc != 0) {
        mvz_select_free(&r.sel);
        return rc < 0 ? 0 : rc;
    }
    if (!no_default_supp && mvz_select_add_builtin_suppressions(&r.sel) < 0) {
        mvz_error("out of memory");
        return 1;
    }
    /* Symbolization must not wait on the network. */
    unsetenv("DEBUGINFOD_URLS");
    struct stat st;
    if (stat(argv[optind], &st) == 0 && S_ISDIR(st.st_mode)) {
        mvz_select_free(&r.sel);
        int drc = report_print_dir(argv[optind], r.o.json, stdout);
        return fflush(stdout) == 0 ? drc : 1;
    }
    if (load(&r, argv[optind]) < 0) {
        report_free(&r);
        return 1;
    }
    if (r.o.json)
        report_print_json(&r, stdout);
    else
        report_print_text(&r, stdout);
    report_free(&r);
    return fflush(stdout) == 0 ? 0 : 1;
}
