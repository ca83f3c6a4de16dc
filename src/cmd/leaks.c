/*
 * leaks.c - `memviz leaks FILE`: the blocks a heap snapshot found lost, in
 * memcheck's kinds (definitely, indirectly, possibly lost; still
 * reachable), as loss records grouped by allocation stack, largest first,
 * and the totals. By default the snapshot taken at exit.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/leaks.h"
#include "analysis/replay.h"
#include "analysis/select.h"
#include "analysis/snapshot.h"
#include "analysis/symbols.h"
#include "cmd/cmd.h"
#include "cmd/snapshots.h"
#include "util/fmt.h"
#include "util/json.h"
#include "util/sort.h"

#define MAX_FRAMES 512

/* One loss record: the blocks of one kind allocated at one stack. */
struct loss {
    int kind;
    uint32_t stack;
    uint64_t bytes, indirect_bytes, blocks;
    struct mvz_suppression *supp;
};

struct leaks {
    int json, kinds; /* kinds: bit per enum mvz_leak_kind shown as records */
    int verify;      /* --verify: the snapshot against the trace's events */
    uint64_t not_live;
    size_t top;
    const char *want;
    struct mvz_select sel;
    struct snap_ctx sc;
    struct mvz_leaks l;
    struct loss *v;
    size_t n;
    struct mvz_leak_totals shown, suppressed;
    struct mvz_frame frames[MAX_FRAMES];
};

static const char usage_text[] =
    "usage: memviz leaks [--json] [--snapshot NAME] [--kinds LIST] [--top N]\n"
    "                    [--suppressions FILE] [--no-default-suppressions] [--debug-dir DIR]\n"
    "                    FILE\n"
    "The blocks a heap snapshot found lost, in Valgrind memcheck's kinds: definitely\n"
    "lost (no pointer to it anywhere), indirectly lost (pointed to only by lost\n"
    "blocks), possibly lost (only an interior pointer reaches it), still reachable.\n"
    "  --snapshot NAME  which snapshot (default: the one taken at exit, else the last)\n"
    "  --kinds LIST     loss records of these kinds: definite,indirect,possible,\n"
    "                   reachable or all (default definite,possible)\n"
    "  --top N          records per kind (default 20; 0: the summary alone)\n"
    "  --suppressions FILE, --no-default-suppressions\n"
    "                   as for memviz report (LeakSanitizer syntax)\n"
    "  --verify         check the snapshot against the trace: every block of it live,\n"
    "                   with its size and stack, in the events up to its moment\n";

static int parse_kinds(const char *s)
{
    if (!strcmp(s, "all"))
        return (1 << MVZ_LEAK_KINDS) - 1;
    int mask = 0;
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", s);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int k = 0;
        while (k < MVZ_LEAK_KINDS && strcmp(tok, mvz_leak_kind_name(k)))
            k++;
        if (k == MVZ_LEAK_KINDS)
            return -1;
        mask |= 1 << k;
    }
    return mask;
}

enum { O_SNAPSHOT = 256, O_KINDS, O_SUPP, O_NO_DEFSUPP, O_VERIFY };

static int parse_options(struct leaks *x, int argc, char **argv, int *no_default)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"snapshot", required_argument, NULL, O_SNAPSHOT},
        {"kinds", required_argument, NULL, O_KINDS},
        {"top", required_argument, NULL, 't'},
        {"suppressions", required_argument, NULL, O_SUPP},
        {"no-default-suppressions", no_argument, NULL, O_NO_DEFSUPP},
        {"verify", no_argument, NULL, O_VERIFY},
        {"debug-dir", required_argument, NULL, MVZ_OPT_DEBUG_DIR},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char err[512];
    int c;
    long v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            x->json = 1;
            break;
        case O_SNAPSHOT:
            x->want = optarg;
            break;
        case O_KINDS:
            if ((x->kinds = parse_kinds(optarg)) < 0)
                return mvz_usage_error("leaks",
                                       "--kinds takes definite, indirect, possible, "
                                       "reachable or all, got '%s'",
                                       optarg);
            break;
        case 't':
            if ((v = mvz_parse_count(optarg, 1 << 30)) < 0)
                return mvz_usage_error("leaks", "--top needs a number, got '%s'", optarg);
            x->top = (size_t)v;
            break;
        case O_SUPP:
            if (mvz_select_load_suppressions(&x->sel, optarg, err, sizeof(err)) < 0) {
                mvz_error("%s", err);
                return 1;
            }
            break;
        case O_NO_DEFSUPP:
            *no_default = 1;
            break;
        case O_VERIFY:
            x->verify = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return -1;
        default: {
            int rc = mvz_cmd_shared_option("leaks", c, argv);
            if (rc)
                return rc;
            break;
        }
        }
    }
    if (optind != argc - 1)
        return mvz_usage_error("leaks", "expects exactly one trace file");
    return 0;
}

/* ---- loss records ---- */
static int by_kind_stack(const void *a, const void *b)
{
    const struct loss *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind > y->kind ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int by_size(const void *a, const void *b)
{
    const struct loss *x = a, *y = b;
    uint64_t sx = x->bytes + x->indirect_bytes, sy = y->bytes + y->indirect_bytes;
    if (x->kind != y->kind)
        return x->kind > y->kind ? -1 : 1;
    if (sx != sy)
        return sx > sy ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* One record per (kind, stack): definitely lost ones carry what their
 * blocks lose indirectly. */
static int build_records(struct leaks *x)
{
    const struct mvz_snapshot *s = &x->sc.snap;
    struct loss *all = calloc(s->nblocks ? s->nblocks : 1, sizeof(*all));
    if (!all)
        return -1;
    for (size_t i = 0; i < s->nblocks; i++) {
        int k = x->l.kind[i];
        all[i] = (struct loss){k,
                               s->blocks[i].stack,
                               s->blocks[i].size,
                               k == MVZ_LEAK_DEFINITE ? x->l.indirect_bytes[i] : 0,
                               1,
                               NULL};
    }
    mvz_sort(all, s->nblocks, sizeof(*all), by_kind_stack);
    size_t n = 0;
    for (size_t i = 0; i < s->nblocks; i++) {
        if (n && all[n - 1].kind == all[i].kind && all[n - 1].stack == all[i].stack) {
            all[n - 1].bytes += all[i].bytes;
            all[n - 1].indirect_bytes += all[i].indirect_bytes;
            all[n - 1].blocks++;
        } else {
            all[n++] = all[i];
        }
    }
    x->v = all;
    x->n = n;
    return 0;
}

/* Suppressed records leave the totals shown for the suppressed ones. */
static void apply_suppressions(struct leaks *x)
{
    x->shown = x->l.t;
    for (size_t i = 0; i < x->n; i++) {
        struct loss *r = &x->v[i];
        if (!x->sel.nsupp)
            break;
        size_t nf = mvz_symbols_stack(x->sc.sym, r->stack, x->frames, MAX_FRAMES);
        if (!(r->supp = mvz_select_suppression(&x->sel, x->frames, nf)))
            continue;
        r->supp->bytes += r->bytes;
        r->supp->blocks += r->blocks;
        r->supp->sites++;
        x->shown.bytes[r->kind] -= r->bytes;
        x->shown.blocks[r->kind] -= r->blocks;
        x->suppressed.bytes[r->kind] += r->bytes;
        x->suppressed.blocks[r->kind] += r->blocks;
    }
    mvz_sort(x->v, x->n, sizeof(*x->v), by_size);
}

/* ---- text ---- */
static const char *const kind_words[MVZ_LEAK_KINDS] = {"still reachable", "possibly lost",
                                                       "indirectly lost", "definitely lost"};

static void print_totals(FILE *out, const struct mvz_leak_totals *t, const char *indent)
{
    char a[32], b[32];
    for (int k = MVZ_LEAK_KINDS; k-- > 0;) {
        fprintf(out, "%s%-16s %s in %s block(s)\n", indent, kind_words[k],
                mvz_fmt_bytes(t->bytes[k], a, sizeof(a)),
                mvz_fmt_count(t->blocks[k], b, sizeof(b)));
        if (k == MVZ_LEAK_REACHABLE)
            for (int h = 0; h < 4; h++)
                if (t->heuristic_blocks[h])
                    fprintf(out, "%s  of which reachable via heuristic %s: %s in %s block(s)\n",
                            indent, snap_heuristic_names[h],
                            mvz_fmt_bytes(t->heuristic_bytes[h], a, sizeof(a)),
                            mvz_fmt_count(t->heuristic_blocks[h], b, sizeof(b)));
    }
}

static void print_record(struct leaks *x, FILE *out, const struct loss *r, size_t rank)
{
    char a[32], b[32], c[32], d[32];
    if (r->kind == MVZ_LEAK_DEFINITE)
        fprintf(out, "  #%zu  %s (%s direct, %s indirect) in %s block(s) %s\n", rank,
                mvz_fmt_bytes(r->bytes + r->indirect_bytes, a, sizeof(a)),
                mvz_fmt_bytes(r->bytes, b, sizeof(b)),
                mvz_fmt_bytes(r->indirect_bytes, c, sizeof(c)),
                mvz_fmt_count(r->blocks, d, sizeof(d)), kind_words[r->kind]);
    else
        fprintf(out, "  #%zu  %s in %s block(s) %s\n", rank, mvz_fmt_bytes(r->bytes, a, sizeof(a)),
                mvz_fmt_count(r->blocks, b, sizeof(b)), kind_words[r->kind]);
    snap_print_stack(&x->sc, out, r->stack, "      ");
}

static void print_text(struct leaks *x, FILE *out)
{
    snap_print_header(&x->sc, out, "memviz leaks");
    if (x->verify)
        fprintf(out,
                "verify:           %" PRIu64 " of %zu block(s) not live in the trace at "
                "the snapshot's moment\n",
                x->not_live, x->sc.snap.nblocks);
    fprintf(out, "\nLeak summary:\n");
    print_totals(out, &x->shown, "  ");
    int any = 0;
    for (int k = 0; k < MVZ_LEAK_KINDS; k++)
        any |= x->suppressed.blocks[k] != 0;
    if (any) {
        fprintf(out, "  suppressed (not in the numbers above):\n");
        print_totals(out, &x->suppressed, "    ");
    }
    for (int k = MVZ_LEAK_KINDS; k-- > 0 && x->top;) {
        if (!(x->kinds & 1 << k))
            continue;
        size_t shown = 0;
        for (size_t i = 0; i < x->n && shown < x->top; i++)
            if (x->v[i].kind == k && !x->v[i].supp) {
                if (!shown)
                    fprintf(out, "\n%c%s, by allocation stack:\n", kind_words[k][0] - 32,
                            kind_words[k] + 1);
                print_record(x, out, &x->v[i], ++shown);
            }
    }
}

/* ---- JSON ---- */
static void print_json(struct leaks *x, FILE *out)
{
    struct mvz_json j;
    mvz_json_init(&j, out);
    mvz_json_begin_object(&j);
    mvz_json_put_uint(&j, "memviz_leaks", 1);
    snap_json_header(&x->sc, &j);
    if (x->verify) {
        mvz_json_key(&j, "verify");
        mvz_json_begin_object(&j);
        mvz_json_put_uint(&j, "blocks", x->sc.snap.nblocks);
        mvz_json_put_uint(&j, "not_live_in_trace", x->not_live);
        mvz_json_end_object(&j);
    }
    snap_json_leak_totals(&j, "leaks", &x->shown);
    snap_json_leak_totals(&j, "suppressed", &x->suppressed);
    mvz_json_key(&j, "records");
    mvz_json_begin_array(&j);
    size_t shown[MVZ_LEAK_KINDS] = {0};
    for (size_t i = 0; i < x->n; i++) {
        const struct loss *r = &x->v[i];
        if (!(x->kinds & 1 << r->kind) || r->supp || shown[r->kind] >= x->top)
            continue;
        shown[r->kind]++;
        mvz_json_begin_object(&j);
        mvz_json_put_string(&j, "kind", mvz_leak_kind_name(r->kind));
        mvz_json_put_uint(&j, "bytes", r->bytes);
        mvz_json_put_uint(&j, "indirect_bytes", r->indirect_bytes);
        mvz_json_put_uint(&j, "blocks", r->blocks);
        snap_json_stack(&x->sc, &j, r->stack);
        mvz_json_end_object(&j);
    }
    mvz_json_end_array(&j);
    mvz_json_end_object(&j);
    fputc('\n', out);
}

int cmd_leaks(int argc, char **argv)
{
    static struct leaks x;
    memset(&x, 0, sizeof(x));
    x.kinds = 1 << MVZ_LEAK_DEFINITE | 1 << MVZ_LEAK_POSSIBLE;
    x.top = 20;
    int no_default = 0;
    int rc = parse_options(&x, argc, argv, &no_default);
    if (rc != 0) {
        mvz_select_free(&x.sel);
        return rc < 0 ? 0 : rc;
    }
    if (!no_default && mvz_select_add_builtin_suppressions(&x.sel) < 0) {
        mvz_error("out of memory");
        return 1;
    }
    rc = 1;
    char err[512];
    if (snap_open(&x.sc, argv[optind], x.want) == 0) {
        if (mvz_leaks_classify(&x.sc.snap, &x.l) < 0 || build_records(&x) < 0) {
            mvz_error("out of memory classifying the snapshot's blocks");
        } else if (x.verify &&
                   mvz_snap_verify(argv[optind], &x.sc.snap, &x.not_live, err, sizeof(err)) < 0) {
            mvz_error("%s", err);
        } else {
            apply_suppressions(&x);
            if (x.json)
                print_json(&x, stdout);
            else
                print_text(&x, stdout);
            rc = fflush(stdout) == 0 ? 0 : 1;
        }
    }
    free(x.v);
    mvz_leaks_free(&x.l);
    snap_close(&x.sc);
    mvz_select_free(&x.sel);
    return rc;
}
