/*
 * diff.c - `memviz diff BASE NEW`: what grew and what shrank between two
 * runs, in total, per allocating function and per call stack, growth
 * (regressions) first. Stacks and functions are matched by name, so the
 * two runs may come from different builds.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diff.h"
#include "analysis/profile.h"
#include "analysis/symbols.h"
#include "cmd/cmd.h"
#include "cmd/snapshots.h"
#include "util/fmt.h"
#include "util/json.h"

struct side {
    struct mvz_profile p;
    struct mvz_symbols *sym;
};

struct diff {
    struct side s[2];
    struct mvz_diff sites, funcs;
    enum mvz_cost cost;
    size_t top;
};

static int add_side(struct diff *d, int side)
{
    return mvz_diff_add_profile(&d->sites, &d->funcs, side, &d->s[side].p, d->s[side].sym);
}

/* ---- text ---- */
static const char *fmt_signed(int64_t v, int bytes, char *buf, size_t cap)
{
    char tmp[40];
    uint64_t mag = v < 0 ? (uint64_t)-v : (uint64_t)v;
    if (bytes)
        mvz_fmt_bytes(mag, tmp, sizeof(tmp));
    else
        mvz_fmt_count(mag, tmp, sizeof(tmp));
    snprintf(buf, cap, "%s%s", v < 0 ? "-" : v > 0 ? "+" : "", tmp);
    return buf;
}

static void print_total(FILE *out, const char *what, uint64_t base, uint64_t new_, int bytes)
{
    char a[48], b[48], c[48], pct[32] = "";
    if (base)
        snprintf(pct, sizeof(pct), " (%+.1f%%)",
                 100.0 * ((double)new_ - (double)base) / (double)base);
    fprintf(out, "  %-18s %14s %14s %14s%s\n", what,
            bytes ? mvz_fmt_bytes(base, a, 48) : mvz_fmt_count(base, a, 48),
            bytes ? mvz_fmt_bytes(new_, b, 48) : mvz_fmt_count(new_, b, 48),
            fmt_signed((int64_t)(new_ - base), bytes, c, 48), pct);
}

static void print_totals(struct diff *d, FILE *out)
{
    const struct mvz_summary *b = &d->s[0].p.sum, *n = &d->s[1].p.sum;
    fprintf(out, "memviz diff: %s -> %s\n\n", d->s[0].p.trace.path, d->s[1].p.trace.path);
    fprintf(out, "  %-18s %14s %14s %14s\n", "", "base", "new", "change");
    print_total(out, "peak heap", b->peak_bytes, n->peak_bytes, 1);
    print_total(out, "not freed at end", b->leaked_bytes, n->leaked_bytes, 1);
    print_total(out, "allocation calls", b->allocations, n->allocations, 0);
    print_total(out, "bytes allocated", b->allocated_bytes, n->allocated_bytes, 1);
    print_total(out, "temporary", b->temporary, n->temporary, 0);
    print_total(out, "peak RSS", d->s[0].p.trace.peak_rss, d->s[1].p.trace.peak_rss, 1);
}

static void print_entry(struct diff *d, FILE *out, const struct mvz_diff *m,
                        const struct mvz_diff_entry *e, size_t rank, int show_stack)
{
    char a[48], b[48], c[48], x[48], y[48], z[48], w[48];
    const uint64_t *B = e->cost[MVZ_DIFF_BASE], *N = e->cost[MVZ_DIFF_NEW];
    fprintf(out, "  #%zu  %s  (at peak %s -> %s, not freed %s -> %s, calls %s -> %s)%s\n", rank,
            fmt_signed(mvz_diff_delta(e, d->cost), mvz_cost_is_bytes(d->cost), a, 48),
            mvz_fmt_bytes(B[MVZ_COST_PEAK], b, 48), mvz_fmt_bytes(N[MVZ_COST_PEAK], c, 48),
            mvz_fmt_bytes(B[MVZ_COST_LEAKED], x, 48), mvz_fmt_bytes(N[MVZ_COST_LEAKED], y, 48),
            mvz_fmt_count(B[MVZ_COST_ALLOCATIONS], z, 48),
            mvz_fmt_count(N[MVZ_COST_ALLOCATIONS], w, 48),
            !e->stack[MVZ_DIFF_BASE]  ? "  [new]"
            : !e->stack[MVZ_DIFF_NEW] ? "  [gone]"
                                      : "");
    const char *key = mvz_strtab_get(&m->keys, e->key);
    if (!show_stack) {
        fprintf(out, "      %s\n", key);
        return;
    }
    for (const char *l = key; *l;) {
        const char *nl = strchr(l, '\n');
        int len = nl ? (int)(nl - l) : (int)strlen(l);
        fprintf(out, "      %.*s\n", len, l);
        l += len + (nl ? 1 : 0);
    }
}

static void print_changes(struct diff *d, FILE *out, struct mvz_diff *m, const char *what,
                          int show_stack)
{
    static const char *const title[MVZ_COST_COUNT] = {"contribution to the peak", "bytes not freed",
                                                      "allocation calls", "bytes allocated",
                                                      "temporary allocations"};
    mvz_diff_sort(m, d->cost);
    size_t shown = 0;
    fprintf(out, "\n%s that grew, by %s:\n", what, title[d->cost]);
    for (size_t i = 0; i < m->n && shown < d->top && mvz_diff_delta(&m->e[i], d->cost) > 0; i++)
        print_entry(d, out, m, &m->e[i], ++shown, show_stack);
    if (!shown)
        fprintf(out, "  (none)\n");
    shown = 0;
    fprintf(out, "\n%s that shrank, by %s:\n", what, title[d->cost]);
    for (size_t i = m->n; i-- > 0 && shown < d->top && mvz_diff_delta(&m->e[i], d->cost) < 0;)
        print_entry(d, out, m, &m->e[i], ++shown, show_stack);
    if (!shown)
        fprintf(out, "  (none)\n");
}

/* ---- JSON ---- */
static void json_pair(struct mvz_json *j, const char *k, uint64_t base, uint64_t new_)
{
    mvz_json_key(j, k);
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "base", base);
    mvz_json_put_uint(j, "new", new_);
    mvz_json_key(j, "delta");
    mvz_json_int(j, (int64_t)(new_ - base));
    mvz_json_end_object(j);
}

static int entry_changed(const struct mvz_diff_entry *e)
{
    for (int c = 0; c < MVZ_COST_COUNT; c++)
        if (mvz_diff_delta(e, (enum mvz_cost)c))
            return 1;
    return 0;
}

static void json_entries(struct diff *d, struct mvz_json *j, const char *k, struct mvz_diff *m,
                         int as_frames)
{
    mvz_diff_sort(m, d->cost);
    mvz_json_key(j, k);
    mvz_json_begin_array(j);
    for (size_t i = 0; i < m->n; i++) {
        const struct mvz_diff_entry *e = &m->e[i];
        if (!entry_changed(e))
            continue;
        mvz_json_begin_object(j);
        const char *key = mvz_strtab_get(&m->keys, e->key);
        if (as_frames) {
            mvz_json_key(j, "frames");
            mvz_json_begin_array(j);
            char line[8192];
            for (const char *l = key; *l;) {
                const char *nl = strchr(l, '\n');
                size_t len = nl ? (size_t)(nl - l) : strlen(l);
                snprintf(line, sizeof(line), "%.*s", (int)len, l);
                mvz_json_string(j, line);
                l += len + (nl ? 1 : 0);
            }
            mvz_json_end_array(j);
        } else {
            mvz_json_put_string(j, "function", key);
        }
        for (int c = 0; c < MVZ_COST_COUNT; c++)
            json_pair(j, mvz_cost_name((enum mvz_cost)c), e->cost[0][c], e->cost[1][c]);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void print_json(struct diff *d, FILE *out)
{
    struct mvz_json j;
    const struct mvz_summary *b = &d->s[0].p.sum, *n = &d->s[1].p.sum;
    mvz_json_init(&j, out);
    mvz_json_begin_object(&j);
    mvz_json_put_uint(&j, "memviz_diff", 1);
    mvz_json_put_string(&j, "base", d->s[0].p.trace.path);
    mvz_json_put_string(&j, "new", d->s[1].p.trace.path);
    mvz_json_put_string(&j, "sorted_by", mvz_cost_name(d->cost));
    mvz_json_key(&j, "summary");
    mvz_json_begin_object(&j);
    json_pair(&j, "peak_bytes", b->peak_bytes, n->peak_bytes);
    json_pair(&j, "leaked_bytes", b->leaked_bytes, n->leaked_bytes);
    json_pair(&j, "allocations", b->allocations, n->allocations);
    json_pair(&j, "allocated_bytes", b->allocated_bytes, n->allocated_bytes);
    json_pair(&j, "temporary", b->temporary, n->temporary);
    json_pair(&j, "peak_rss_bytes", d->s[0].p.trace.peak_rss, d->s[1].p.trace.peak_rss);
    mvz_json_end_object(&j);
    json_entries(d, &j, "functions", &d->funcs, 0);
    json_entries(d, &j, "sites", &d->sites, 1);
    mvz_json_end_object(&j);
}

static int load_side(struct diff *d, int side, const char *path)
{
    char err[512];
    struct mvz_profile_options opt = {.to_ns = UINT64_MAX, .symbolize = 1};
    if (mvz_profile_load_window(&d->s[side].p, path, &opt, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return -1;
    }
    d->s[side].sym = mvz_symbols_new(&d->s[side].p.trace);
    if (!d->s[side].sym || add_side(d, side) < 0) {
        mvz_error("out of memory comparing %s", path);
        return -1;
    }
    return 0;
}

static void diff_free(struct diff *d)
{
    for (int i = 0; i < 2; i++) {
        if (d->s[i].sym)
            mvz_symbols_free(d->s[i].sym);
        mvz_profile_free(&d->s[i].p);
    }
    mvz_diff_free(&d->sites);
    mvz_diff_free(&d->funcs);
}

static const char usage_text[] =
    "usage: memviz diff [--json] [--top N] [--sort COST] [--debug-dir DIR] BASE NEW\n"
    "       memviz diff --snapshots [--base-snapshot NAME] [--new-snapshot NAME] [--json]\n"
    "                   [--top N] FILE [NEW]\n"
    "What grew and what shrank between two runs; with --snapshots, between two heap\n"
    "snapshots (of one run: FILE's last two, or the ones named; of two runs: each\n"
    "one's exit snapshot, or the ones named): live bytes per site, new and freed\n"
    "blocks (one run only), and the change of retained size per root and site.\n";

static int diff_snapshots(struct snapdiff_opts *so, int json, size_t top, int sorted, int argc,
                          char **argv)
{
    if (sorted)
        return mvz_usage_error("diff", "--sort is for runs; snapshots rank by live bytes");
    if (optind != argc - 1 && optind != argc - 2)
        return mvz_usage_error("diff", "--snapshots expects one trace file or two");
    so->json = json;
    so->top = top;
    unsetenv("DEBUGINFOD_URLS"); /* symbolization must not wait on the network */
    return snap_diff(so, argv[optind], optind == argc - 2 ? argv[optind + 1] : NULL);
}

int cmd_diff(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"top", required_argument, NULL, 'n'},
        {"sort", required_argument, NULL, 's'},
        {"debug-dir", required_argument, NULL, MVZ_OPT_DEBUG_DIR},
        {"snapshots", no_argument, NULL, 'S'},
        {"base-snapshot", required_argument, NULL, 'B'},
        {"new-snapshot", required_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static struct diff d;
    struct snapdiff_opts so = {0};
    int snapshots = 0, sorted = 0;
    memset(&d, 0, sizeof(d));
    d.top = 10;
    d.cost = MVZ_COST_PEAK;
    int json = 0, c, v;
    long top;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jn:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = 1;
            break;
        case 'n':
            if ((top = mvz_parse_count(optarg, 1000000)) < 0)
                return mvz_usage_error("diff", "--top needs a number, got '%s'", optarg);
            d.top = (size_t)top;
            break;
        case 's':
            if ((v = mvz_cost_parse(optarg)) < 0)
                return mvz_usage_error("diff", "unknown cost '%s' for --sort", optarg);
            d.cost = (enum mvz_cost)v;
            sorted = 1;
            break;
        case 'S':
            snapshots = 1;
            break;
        case 'B':
            so.base_name = optarg;
            snapshots = 1;
            break;
        case 'N':
            so.new_name = optarg;
            snapshots = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default: {
            int rc = mvz_cmd_shared_option("diff", c, argv);
            if (rc)
                return rc;
            break;
        }
        }
    }
    if (snapshots)
        return diff_snapshots(&so, json, d.top, sorted, argc, argv);
    if (optind != argc - 2)
        return mvz_usage_error("diff", "expects two trace files: BASE NEW");
    unsetenv("DEBUGINFOD_URLS"); /* symbolization must not wait on the network */
    int rc = 1;
    if (load_side(&d, MVZ_DIFF_BASE, argv[optind]) == 0 &&
        load_side(&d, MVZ_DIFF_NEW, argv[optind + 1]) == 0) {
        if (json) {
            print_json(&d, stdout);
        } else {
            print_totals(&d, stdout);
            print_changes(&d, stdout, &d.funcs, "Functions", 0);
            print_changes(&d, stdout, &d.sites, "Call stacks", 1);
        }
        rc = fflush(stdout) == 0 ? 0 : 1;
    }
    diff_free(&d);
    return rc;
}
