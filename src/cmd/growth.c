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
#include "cmd/cmd.h"
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
};

struct growth_cmd {
    int json;
    size_t top;
    enum by by;
    struct mvz_growth g;
    struct mvz_trace t;
    struct mvz_symbols *sym;
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
        case MVZ_OPT_DEBUG_DIR: {
            int rc = mvz_cmd_debug_dir("growth", optarg);
            if (rc)
                return rc;
            break;
        }
        case 'h':
            fputs(usage_text, stdout);
            return -1;
        default:
            return mvz_usage_error("growth", "unknown option '%s'", argv[optind - 1]);
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
        mvz_json_key(j, "function");
        mvz_json_string(j, x->by == BY_MODULE ? NULL : x->frames[i].function);
        mvz_json_key(j, "file");
        mvz_json_string(j, x->by == BY_MODULE ? NULL : x->frames[i].file);
        mvz_json_key(j, "line");
        mvz_json_uint(j, x->by == BY_MODULE ? 0 : x->frames[i].line);
        mvz_json_key(j, "module");
        mvz_json_string(j, x->frames[i].module);
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

static void print_json(struct growth_cmd *x, FILE *out, const char *path)
{
    size_t ns = x->g.nsnaps;
    struct mvz_json j;
    mvz_json_init(&j, out);
    mvz_json_begin_object(&j);
    mvz_json_key(&j, "memviz_growth");
    mvz_json_uint(&j, 1);
    mvz_json_key(&j, "trace");
    mvz_json_string(&j, path);
    mvz_json_key(&j, "by");
    mvz_json_string(&j, x->by == BY_STACK ? "stack" : x->by == BY_FUNCTION ? "function" : "module");
    mvz_json_key(&j, "snapshots");
    mvz_json_begin_array(&j);
    for (size_t k = 0; k < ns; k++) {
        mvz_json_begin_object(&j);
        mvz_json_key(&j, "name");
        mvz_json_string(&j, x->g.snaps[k].name);
        mvz_json_key(&j, "trigger");
        mvz_json_string(&j, mvz_snap_trigger_name(x->g.snaps[k].trigger));
        mvz_json_key(&j, "time_ns");
        mvz_json_uint(&j, x->g.snaps[k].ts);
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
    struct mvz_replay_ops ops = {.warm_symbols = 1};
    rc = 1;
    if (mvz_growth_load(path, &x.g, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
    } else if (!x.g.nsnaps) {
        mvz_error("%s has no complete heap snapshot (memviz run --snapshot-every D|S, "
                  "--snapshot-on SIGNAL, memviz snapshot PID, or memviz_snapshot)",
                  path);
        rc = 1;
    } else if (mvz_replay(path, &x.t, &ops, NULL, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
    } else if (!(x.sym = mvz_symbols_new(&x.t)) || build_rows(&x) < 0) {
        mvz_error("out of memory");
    } else {
        mvz_sort(x.rows, x.nrows, sizeof(*x.rows), by_growth);
        if (x.json)
            print_json(&x, stdout, path);
        else
            print_text(&x, stdout, path);
        rc = fflush(stdout) == 0 ? 0 : 1;
    }
    mvz_symbols_free(x.sym);
    mvz_trace_free(&x.t);
    mvz_strtab_free(&x.names);
    free(x.rows);
    free(x.cells);
    mvz_growth_free(&x.g);
    return rc;
}
