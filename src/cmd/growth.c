/*
 * growth.c - `memviz growth FILE`: the live bytes and blocks of each
 * allocation site (or function, or module) at every heap snapshot of a
 * run, steady growers first: what grows and never shrinks is the leak that
 * is still reachable (a cache that never drops an entry).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/growth.h"
#include "analysis/replay.h"
#include "analysis/symbols.h"
#include "analysis/dominators.h"
#include "cmd/cmd.h"
#include "cmd/snapshots.h"
#include "util/fmt.h"
#include "util/json.h"
#include "util/sort.h"
#include "util/strtab.h"

#define MAX_FRAMES 512

enum by { BY_STACK, BY_FUNCTION, BY_MODULE };

/* A row: a stack, or the stacks of one function or module summed. */
struct row {
    uint32_t key;   /* the stack id, or the interned name's id */
    uint32_t stack; /* a stack of it, for its frames */
    uint64_t *bytes, *blocks;
    int steady;     /* grew from each snapshot to the next */
    int monotonic;  /* never shrank, and grew */
    int64_t growth; /* bytes at the last snapshot less at the first */
    /* at the last snapshot: the node (a block of another row, a root, the
     * virtual root: several roots; MVZ_DOM_NONE: lost) that dominates most
     * of the row's bytes, and how many */
    uint32_t holder;
    uint64_t held_bytes, held_blocks;
};

/* A block of a shown row and the node that holds it. */
struct held {
    uint32_t row, node;
    uint64_t bytes;
};

struct growth_cmd {
    int json;
    size_t top;
    enum by by;
    struct mvz_growth g;
    struct snap_ctx sc; /* the last snapshot, with the trace's stacks and symbols */
    struct snap_retention ret;
    struct mvz_symbols *sym; /* sc's */
    struct mvz_strtab names;
    struct row *rows;
    size_t nrows;
    uint64_t *cells; /* the rows' series */
    struct mvz_frame frames[MAX_FRAMES];
};

static const char usage_text[] =
    "usage: memviz growth [--json] [--top N] [--by stack|function|module] [--debug-dir DIR]\n"
    "                     FILE\n"
    "The live bytes and blocks of each allocation site at every heap snapshot of the\n"
    "run (taken periodically, by signal, by memviz snapshot or by the API): the\n"
    "ones that grew at every snapshot first, then those that never shrank, each by\n"
    "how much it grew from the first snapshot to the last.\n";

static int parse_options(struct growth_cmd *x, int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"top", required_argument, NULL, 't'},
        {"by", required_argument, NULL, 'b'},
        {"debug-dir", required_argument, NULL, MVZ_OPT_DEBUG_DIR},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    long v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            x->json = 1;
            break;
        case 't':
            if ((v = mvz_parse_count(optarg, 1 << 30)) < 0)
                return mvz_usage_error("growth", "--top needs a number, got '%s'", optarg);
            x->top = (size_t)v;
            break;
        case 'b':
            if (!strcmp(optarg, "stack"))
                x->by = BY_STACK;
            else if (!strcmp(optarg, "function"))
                x->by = BY_FUNCTION;
            else if (!strcmp(optarg, "module"))
                x->by = BY_MODULE;
            else
                return mvz_usage_error("growth", "--by takes stack, function or module, got '%s'",
                                       optarg);
            break;
        case 'h':
            fputs(usage_text, stdout);
            return -1;
        default: {
            int rc = mvz_cmd_shared_option("growth", c, argv);
            if (rc)
                return rc;
            break;
        }
        }
    }
    if (optind != argc - 1)
        return mvz_usage_error("growth", "expects exactly one trace file");
    return 0;
}

/* The row key of a stack: itself, or its innermost frame's function or
 * module, interned. 0 when out of memory. */
static uint32_t key_of(struct growth_cmd *x, uint32_t stack)
{
    if (x->by == BY_STACK)
        return stack + 1;
    size_t n = mvz_symbols_stack(x->sym, stack, x->frames, MAX_FRAMES);
    const struct mvz_frame *f = n ? &x->frames[0] : NULL;
    char key[1024];
    if (x->by == BY_FUNCTION)
        snprintf(key, sizeof(key), "%s\n%s", f ? f->function : "?",
                 f && f->module ? f->module : "");
    else
        snprintf(key, sizeof(key), "%s", f && f->module ? f->module : "?");
    return mvz_strtab_intern(&x->names, key);
}

static int build_rows(struct growth_cmd *x)
{
    size_t ns = x->g.nsnaps;
    uint32_t *row_of = calloc(x->g.nstacks + 1, sizeof(*row_of)); /* key -> row + 1 */
    size_t row_of_cap = x->g.nstacks + 1;
    x->rows = calloc(x->g.nstacks + 1, sizeof(*x->rows));
    x->cells = calloc(2 * ns * (x->g.nstacks + 1) + 1, sizeof(*x->cells));
    if (!row_of || !x->rows || !x->cells) {
        free(row_of);
        return -1;
    }
    for (uint32_t st = 0; st < x->g.nstacks; st++) {
        int any = 0;
        for (size_t k = 0; k < ns; k++)
            any |= x->g.blocks[(size_t)st * ns + k] != 0;
        if (!any)
            continue;
        uint32_t key = key_of(x, st);
        if (!key || key >= row_of_cap) { /* names are fewer than stacks */
            free(row_of);
            return -1;
        }
        if (!row_of[key]) {
            struct row *r = &x->rows[x->nrows];
            r->key = key;
            r->stack = st;
            r->bytes = x->cells + 2 * ns * x->nrows;
            r->blocks = r->bytes + ns;
            row_of[key] = (uint32_t)++x->nrows;
        }
        struct row *r = &x->rows[row_of[key] - 1];
        for (size_t k = 0; k < ns; k++) {
            r->bytes[k] += x->g.bytes[(size_t)st * ns + k];
            r->blocks[k] += x->g.blocks[(size_t)st * ns + k];
        }
    }
    free(row_of);
    for (size_t i = 0; i < x->nrows; i++) {
        struct row *r = &x->rows[i];
        r->steady = r->monotonic = ns > 1 && r->bytes[ns - 1] > r->bytes[0];
        for (size_t k = 1; k < ns; k++) {
            if (r->bytes[k] <= r->bytes[k - 1])
                r->steady = 0;
            if (r->bytes[k] < r->bytes[k - 1])
                r->monotonic = 0;
        }
        r->growth = (int64_t)r->bytes[ns - 1] - (int64_t)r->bytes[0];
    }
    return 0;
}

static int by_growth(const void *a, const void *b)
{
    const struct row *p = a, *q = b;
    if (p->steady != q->steady)
        return p->steady ? -1 : 1;
    if (p->monotonic != q->monotonic)
        return p->monotonic ? -1 : 1;
    if (p->growth != q->growth)
        return p->growth > q->growth ? -1 : 1;
    return p->key < q->key ? -1 : p->key > q->key;
}

/* ---- what holds each row, at the last snapshot ---- */
static int by_row_node(const void *a, const void *b)
{
    const struct held *p = a, *q = b;
    if (p->row != q->row)
        return p->row < q->row ? -1 : 1;
    return p->node < q->node ? -1 : p->node > q->node;
}

/* Shown row (sorted index) of each block's stack, UINT32_MAX for others. */
static uint32_t *shown_row_of_stack(struct growth_cmd *x, uint32_t nstacks)
{
    uint32_t nkeys = (uint32_t)x->names.n + x->g.nstacks + 2;
    uint32_t *rank = malloc((size_t)nkeys * sizeof(*rank));
    uint32_t *of = malloc(((size_t)nstacks + 1) * sizeof(*of));
    if (!rank || !of) {
        free(rank);
        free(of);
        return NULL;
    }
    memset(rank, 0xff, (size_t)nkeys * sizeof(*rank));
    for (size_t i = 0; i < x->nrows && i < x->top; i++)
        if (x->rows[i].key < nkeys)
            rank[x->rows[i].key] = (uint32_t)i;
    for (uint32_t st = 0; st < nstacks; st++) {
        uint32_t key = key_of(x, st);
        of[st] = key && key < nkeys ? rank[key] : UINT32_MAX;
    }
    free(rank);
    return of;
}

/* up[v]: the first node above block v in the dominator tree that is not a
 * block of v's row; a run of one row (a list's nodes) is climbed once. */
static void climb(const struct growth_cmd *x, const uint32_t *row_of, uint32_t *up)
{
    const struct mvz_retain *r = &x->ret.r;
    const struct mvz_snap_block *b = x->sc.snap.blocks;
    for (uint32_t v = 0; v < r->nblocks; v++)
        up[v] = MVZ_DOM_NONE;
    for (uint32_t i = 0; i < r->nreached; i++) {
        uint32_t v = r->order[i], d = r->idom[v];
        if (v >= r->nblocks)
            continue;
        int same = d < r->nblocks && row_of[b[d].stack] == row_of[b[v].stack];
        up[v] = same ? up[d] : d;
    }
}

static int find_holders(struct growth_cmd *x)
{
    const struct mvz_snapshot *s = &x->sc.snap;
    uint32_t nstacks = 0;
    for (size_t b = 0; b < s->nblocks; b++)
        nstacks = s->blocks[b].stack + 1 > nstacks ? s->blocks[b].stack + 1 : nstacks;
    uint32_t *row_of = shown_row_of_stack(x, nstacks);
    uint32_t *up = malloc((s->nblocks ? s->nblocks : 1) * sizeof(*up));
    struct held *h = malloc((s->nblocks ? s->nblocks : 1) * sizeof(*h));
    int rc = -1;
    if (!row_of || !up || !h)
        goto out;
    climb(x, row_of, up);
    size_t n = 0;
    for (uint32_t b = 0; b < s->nblocks; b++)
        if (row_of[s->blocks[b].stack] != UINT32_MAX)
            h[n++] = (struct held){row_of[s->blocks[b].stack], up[b], s->blocks[b].size};
    mvz_sort(h, n, sizeof(*h), by_row_node);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint64_t bytes = 0;
        for (; j < n && h[j].row == h[i].row && h[j].node == h[i].node; j++)
            bytes += h[j].bytes;
        struct row *r = &x->rows[h[i].row];
        if (bytes > r->held_bytes) {
            r->holder = h[i].node;
            r->held_bytes = bytes;
            r->held_blocks = j - i;
        }
        i = j;
    }
    rc = 0;
out:
    free(row_of);
    free(up);
    free(h);
    return rc;
}

/* ---- output ---- */
static void print_frames(struct growth_cmd *x, FILE *out, uint32_t stack)
{
    size_t n = mvz_symbols_stack(x->sym, stack, x->frames, MAX_FRAMES);
    if (x->by != BY_STACK)
        n = n ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        const struct mvz_frame *f = &x->frames[i];
        if (x->by == BY_MODULE) {
            fprintf(out, "      %s\n", f->module ? f->module : "?");
            continue;
        }
        fprintf(out, "      %s%s", f->inlined ? "(inlined) " : "", f->function);
        if (f->file)
            fprintf(out, "  %s:%u", f->file, f->line);
        if (f->module)
            fprintf(out, "  [%s]", mvz_base_name(f->module));
        fputc('\n', out);
    }
}

static void print_holder(struct growth_cmd *x, FILE *out, const struct row *r)
{
    char a[32], b[32];
    if (!r->held_blocks)
        return;
    fprintf(out, "      held most by, at \"%s\": %s in %s block(s): ", x->sc.snap.info.name,
            mvz_fmt_bytes(r->held_bytes, a, sizeof(a)),
            mvz_fmt_count(r->held_blocks, b, sizeof(b)));
    if (r->holder == MVZ_DOM_NONE)
        fprintf(out, "nothing (not reachable from a root: lost)\n");
    else if (r->holder == x->ret.r.vroot)
        fprintf(out, "more than one root (each reaches them, none alone)\n");
    else
        snap_print_path(&x->sc, &x->ret, out, r->holder, "");
}

static void print_text(struct growth_cmd *x, FILE *out, const char *path)
{
    size_t ns = x->g.nsnaps;
    char a[32], b[32];
    fprintf(out, "memviz growth: %s\n%zu snapshot(s):", path, ns);
    for (size_t k = 0; k < ns; k++)
        fprintf(out, "%s \"%s\" (%s)", k ? "," : "", x->g.snaps[k].name,
                mvz_fmt_duration(x->g.snaps[k].ts, a, sizeof(a)));
    fprintf(out, "\n\n%s by growth, those that grew at every snapshot first:\n",
            x->by == BY_STACK      ? "Allocation sites"
            : x->by == BY_FUNCTION ? "Allocating functions"
                                   : "Modules");
    for (size_t i = 0; i < x->nrows && i < x->top; i++) {
        const struct row *r = &x->rows[i];
        fprintf(out, "  #%zu  %s%s (%s)\n", i + 1, r->growth >= 0 ? "+" : "-",
                mvz_fmt_bytes((uint64_t)(r->growth >= 0 ? r->growth : -r->growth), a, sizeof(a)),
                r->steady      ? "grew at every snapshot"
                : r->monotonic ? "never shrank"
                               : "not steadily");
        fprintf(out, "      live bytes:  ");
        for (size_t k = 0; k < ns; k++)
            fprintf(out, "%s%s", k ? ", " : "", mvz_fmt_bytes(r->bytes[k], b, sizeof(b)));
        fprintf(out, "\n      live blocks: ");
        for (size_t k = 0; k < ns; k++)
            fprintf(out, "%s%s", k ? ", " : "", mvz_fmt_count(r->blocks[k], b, sizeof(b)));
        fputc('\n', out);
        print_frames(x, out, r->stack);
        print_holder(x, out, r);
    }
    if (!x->nrows)
        fprintf(out, "  (none)\n");
}

static void json_frames(struct growth_cmd *x, struct mvz_json *j, uint32_t stack)
{
    size_t n = mvz_symbols_stack(x->sym, stack, x->frames, MAX_FRAMES);
    if (x->by != BY_STACK)
        n = n ? 1 : 0;
    mvz_json_key(j, "frames");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "function", x->by == BY_MODULE ? NULL : x->frames[i].function);
        mvz_json_put_string(j, "file", x->by == BY_MODULE ? NULL : x->frames[i].file);
        mvz_json_put_uint(j, "line", x->by == BY_MODULE ? 0 : x->frames[i].line);
        mvz_json_put_string(j, "module", x->frames[i].module);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void json_series(struct mvz_json *j, const char *key, const uint64_t *v, size_t n)
{
    mvz_json_key(j, key);
    mvz_json_begin_array(j);
    for (size_t k = 0; k < n; k++)
        mvz_json_uint(j, v[k]);
    mvz_json_end_array(j);
}

static void json_holder(struct growth_cmd *x, struct mvz_json *j, const struct row *r)
{
    if (!r->held_blocks)
        return;
    mvz_json_key(j, "held_by");
    mvz_json_begin_object(j);
    mvz_json_put_string(j, "snapshot", x->sc.snap.info.name);
    mvz_json_put_uint(j, "bytes", r->held_bytes);
    mvz_json_put_uint(j, "blocks", r->held_blocks);
    mvz_json_key(j, "holder");
    mvz_json_string(j, r->holder == MVZ_DOM_NONE       ? "lost"
                       : r->holder == x->ret.r.vroot   ? "several roots"
                       : r->holder >= x->ret.r.nblocks ? "root"
                                                       : "block");
    if (r->holder != MVZ_DOM_NONE && r->holder != x->ret.r.vroot)
        snap_json_path(&x->sc, &x->ret, j, r->holder);
    mvz_json_end_object(j);
}

static void print_json(struct growth_cmd *x, FILE *out, const char *path)
{
    size_t ns = x->g.nsnaps;
    struct mvz_json j;
    mvz_json_init(&j, out);
    mvz_json_begin_object(&j);
    mvz_json_put_uint(&j, "memviz_growth", 1);
    mvz_json_put_string(&j, "trace", path);
    mvz_json_put_string(&j, "by",
                        x->by == BY_STACK      ? "stack"
                        : x->by == BY_FUNCTION ? "function"
                                               : "module");
    mvz_json_key(&j, "snapshots");
    mvz_json_begin_array(&j);
    for (size_t k = 0; k < ns; k++) {
        mvz_json_begin_object(&j);
        mvz_json_put_string(&j, "name", x->g.snaps[k].name);
        mvz_json_put_string(&j, "trigger", mvz_snap_trigger_name(x->g.snaps[k].trigger));
        mvz_json_put_uint(&j, "time_ns", x->g.snaps[k].ts);
        mvz_json_end_object(&j);
    }
    mvz_json_end_array(&j);
    mvz_json_key(&j, "sites");
    mvz_json_begin_array(&j);
    for (size_t i = 0; i < x->nrows && i < x->top; i++) {
        const struct row *r = &x->rows[i];
        mvz_json_begin_object(&j);
        json_series(&j, "live_bytes", r->bytes, ns);
        json_series(&j, "live_blocks", r->blocks, ns);
        mvz_json_key(&j, "steady");
        mvz_json_bool(&j, r->steady);
        mvz_json_key(&j, "monotonic");
        mvz_json_bool(&j, r->monotonic);
        mvz_json_key(&j, "growth_bytes");
        mvz_json_int(&j, r->growth);
        json_frames(x, &j, r->stack);
        json_holder(x, &j, r);
        mvz_json_end_object(&j);
    }
    mvz_json_end_array(&j);
    mvz_json_end_object(&j);
    fputc('\n', out);
}

int cmd_growth(int argc, char **argv)
{
    static struct growth_cmd x;
    memset(&x, 0, sizeof(x));
    x.top = 10;
    int rc = parse_options(&x, argc, argv);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    const char *path = argv[optind];
    char err[512];
    rc = 1;
    if (mvz_growth_load(path, &x.g, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
    } else if (!x.g.nsnaps) {
        mvz_error("%s has no complete heap snapshot (memviz run --snapshot-every D|S, "
                  "--snapshot-on SIGNAL, memviz snapshot PID, or memviz_snapshot)",
                  path);
        rc = 1;
    } else if (snap_open(&x.sc, path, x.g.snaps[x.g.nsnaps - 1].name) < 0 ||
               snap_retention_build(&x.sc, &x.ret) < 0) {
        /* said */
    } else if (!(x.sym = x.sc.sym) || build_rows(&x) < 0 ||
               (mvz_sort(x.rows, x.nrows, sizeof(*x.rows), by_growth), find_holders(&x)) < 0) {
        mvz_error("out of memory");
    } else {
        if (x.json)
            print_json(&x, stdout, path);
        else
            print_text(&x, stdout, path);
        rc = fflush(stdout) == 0 ? 0 : 1;
    }
    snap_retention_free(&x.ret);
    snap_close(&x.sc);
    mvz_strtab_free(&x.names);
    free(x.rows);
    free(x.cells);
    mvz_growth_free(&x.g);
    return rc;
}
