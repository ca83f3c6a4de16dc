/*
 * inspect.c - `memviz inspect --block ADDR FILE`: one block of a heap
 * snapshot. Its size, allocation stack, leak kind and retained size; its
 * bytes (when `memviz run --snapshot-contents` stored them); the pointers
 * in it and the words that point to it, each to or from which block; the
 * shortest path from a root; and, where DWARF can tell its type, the
 * block printed as that type (analysis/types.h).
 */
#include <ctype.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/leaks.h"
#include "analysis/types.h"
#include "cmd/cmd.h"
#include "cmd/snapshots.h"
#include "trace/format.h"
#include "util/fmt.h"
#include "util/json.h"

#define DEFAULT_SHOWN 256

struct inspect_cmd {
    int json;
    const char *want, *block_arg;
    uint64_t max_bytes; /* bytes shown; 0: all */
    struct snap_ctx sc;
    struct snap_retention ret;
    struct mvz_leaks leaks;
    uint32_t b;
    uint8_t *bytes, *known;
    long long nknown; /* bytes stored; -1: none */
    struct mvz_typed typed;
};

static const char usage_text[] =
    "usage: memviz inspect --block ADDR [--snapshot NAME] [--json] [--bytes N] [--debug-dir DIR]\n"
    "                      FILE\n"
    "One block of a heap snapshot: its allocation stack, leak kind and retained size,\n"
    "its bytes (stored by memviz run --snapshot-contents), the pointers in it and to it,\n"
    "the shortest path from a root, and its type where DWARF tells it.\n"
    "  --block ADDR     the block at (or containing) ADDR\n"
    "  --snapshot NAME  which snapshot (default: the one taken at exit, else the last)\n"
    "  --bytes N        bytes shown (default 256; 0: all)\n";

static int load_bytes(struct inspect_cmd *x)
{
    uint64_t size = x->sc.snap.blocks[x->b].size;
    char err[512];
    x->nknown = -1;
    if (!x->sc.snap.info.has_contents)
        return 0;
    x->bytes = malloc(size ? size : 1);
    x->known = malloc(size ? size : 1);
    if (!x->bytes || !x->known) {
        mvz_error("out of memory for a block of %" PRIu64 " bytes", size);
        return -1;
    }
    x->nknown = mvz_snap_contents(x->sc.path, x->sc.snap.info.id, x->b, size, x->bytes, x->known,
                                  err, sizeof(err));
    if (x->nknown < 0) {
        mvz_error("%s", err);
        return -1;
    }
    return 0;
}

/* ---- text ---- */
static void hex_line(struct inspect_cmd *x, FILE *out, uint64_t at, uint64_t end)
{
    fprintf(out, "  %06" PRIx64 "  ", at);
    for (uint64_t k = at; k < at + 16; k++) {
        if (k < end && x->known[k])
            fprintf(out, "%02x ", x->bytes[k]);
        else
            fprintf(out, k < end ? "?? " : "   ");
        if (k == at + 7)
            fputc(' ', out);
    }
    fputs(" |", out);
    for (uint64_t k = at; k < at + 16 && k < end; k++)
        fputc(x->known[k] && isprint(x->bytes[k]) ? x->bytes[k] : '.', out);
    fputs("|\n", out);
}

static void print_bytes(struct inspect_cmd *x, FILE *out)
{
    uint64_t size = x->sc.snap.blocks[x->b].size;
    if (x->nknown < 0) {
        fprintf(out, "\nbytes: not stored (memviz run --snapshot-contents stores them)\n");
        return;
    }
    uint64_t end = x->max_bytes && x->max_bytes < size ? x->max_bytes : size;
    fprintf(out, "\nbytes (%lld of %" PRIu64 " stored", x->nknown, size);
    if (end < size)
        fprintf(out, "; the first %" PRIu64 " shown, --bytes 0 for all", end);
    fprintf(out, "):\n");
    for (uint64_t at = 0; at < end; at += 16)
        hex_line(x, out, at, end);
}

static const char *edge_kind(int kind)
{
    if (kind == MVZ_EDGE_START)
        return "start";
    if (kind == MVZ_EDGE_INTERIOR)
        return "interior";
    return snap_heuristic_names[kind - MVZ_EDGE_STDSTRING];
}

static void print_pointers(struct inspect_cmd *x, FILE *out)
{
    const struct mvz_snapshot *s = &x->sc.snap;
    size_t n = s->first_edge[x->b + 1] - s->first_edge[x->b];
    fprintf(out, "\npointers in it (%zu):\n", n);
    for (size_t e = s->first_edge[x->b]; e < s->first_edge[x->b + 1]; e++) {
        const struct mvz_snap_edge *ed = &s->edges[e];
        const struct mvz_snap_block *t = &s->blocks[ed->target];
        fprintf(out, "  +%-6" PRIu64 " -> 0x%" PRIx64 " (%s, %" PRIu64 " bytes, %s)\n", ed->offset,
                t->addr, edge_kind(ed->kind), t->size, snap_site_name(&x->sc, ed->target));
    }
}

/* The words that point to the block: from other blocks, and from roots. */
static void print_referrers(struct inspect_cmd *x, FILE *out)
{
    const struct mvz_snapshot *s = &x->sc.snap;
    size_t shown = 0;
    fprintf(out, "\npointed to by:\n");
    for (uint32_t b = 0; b < s->nblocks; b++)
        for (size_t e = s->first_edge[b]; e < s->first_edge[b + 1]; e++)
            if (s->edges[e].target == x->b && shown++ < 20)
                fprintf(out, "  block 0x%" PRIx64 " +%" PRIu64 " (%s, %s)\n", s->blocks[b].addr,
                        s->edges[e].offset, snap_site_name(&x->sc, b), edge_kind(s->edges[e].kind));
    for (size_t r = 0; r < s->nroots; r++)
        for (size_t k = 0; k < s->roots[r].nedges; k++) {
            const struct mvz_snap_edge *ed = &s->root_edges[s->roots[r].first_edge + k];
            if (ed->target != x->b || shown++ >= 20)
                continue;
            fprintf(out, "  root word 0x%" PRIx64 " (", s->roots[r].addr + ed->offset);
            snap_print_root(&x->ret, out, x->ret.g.group[s->roots[r].first_edge + k]);
            fprintf(out, ", %s)\n", edge_kind(ed->kind));
        }
    if (!shown)
        fprintf(out, "  nothing\n");
    else if (shown > 20)
        fprintf(out, "  ... and %zu more\n", shown - 20);
}

static void print_text(struct inspect_cmd *x, FILE *out)
{
    const struct mvz_snap_block *bl = &x->sc.snap.blocks[x->b];
    char a[32], c[32];
    snap_print_header(&x->sc, out, "memviz inspect");
    fprintf(out,
            "\nBlock 0x%" PRIx64 ": %" PRIu64 " bytes, thread %u's allocation #%" PRIu64
            "; %s; retains %s in %s block(s)\n",
            bl->addr, bl->size, bl->tid, bl->serial, mvz_leak_kind_name(x->leaks.kind[x->b]),
            mvz_fmt_bytes(x->ret.r.retained[x->b], a, sizeof(a)),
            mvz_fmt_count(x->ret.r.retained_n[x->b], c, sizeof(c)));
    snap_print_stack(&x->sc, out, bl->stack, "      ");
    snap_print_path(&x->sc, &x->ret, out, x->b, "      ");
    if (x->typed.type)
        mvz_typed_print(&x->typed, out, x->nknown >= 0 ? x->bytes : NULL, x->known);
    print_bytes(x, out);
    print_pointers(x, out);
    print_referrers(x, out);
}

/* ---- JSON ---- */
static void kv_u(struct mvz_json *j, const char *k, uint64_t v)
{
    mvz_json_key(j, k);
    mvz_json_uint(j, v);
}

static void json_bytes(struct inspect_cmd *x, struct mvz_json *j)
{
    uint64_t size = x->sc.snap.blocks[x->b].size;
    uint64_t end = x->max_bytes && x->max_bytes < size ? x->max_bytes : size;
    mvz_json_key(j, "bytes");
    if (x->nknown < 0) {
        mvz_json_null(j);
        return;
    }
    /* hex, two digits a byte, "??" for a byte not stored */
    char *hex = malloc(2 * end + 1);
    if (!hex) {
        mvz_json_null(j);
        return;
    }
    for (uint64_t k = 0; k < end; k++)
        if (x->known[k])
            snprintf(hex + 2 * k, 3, "%02x", x->bytes[k]);
        else
            memcpy(hex + 2 * k, "??", 3);
    hex[2 * end] = 0;
    mvz_json_string(j, hex);
    free(hex);
    kv_u(j, "stored_bytes", (uint64_t)x->nknown);
}

static void json_pointers(struct inspect_cmd *x, struct mvz_json *j)
{
    const struct mvz_snapshot *s = &x->sc.snap;
    mvz_json_key(j, "pointers");
    mvz_json_begin_array(j);
    for (size_t e = s->first_edge[x->b]; e < s->first_edge[x->b + 1]; e++) {
        mvz_json_begin_object(j);
        kv_u(j, "offset", s->edges[e].offset);
        kv_u(j, "target", s->blocks[s->edges[e].target].addr);
        mvz_json_put_string(j, "kind", edge_kind(s->edges[e].kind));
        mvz_json_put_string(j, "site", snap_site_name(&x->sc, s->edges[e].target));
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void print_json(struct inspect_cmd *x, FILE *out)
{
    const struct mvz_snap_block *bl = &x->sc.snap.blocks[x->b];
    struct mvz_json j;
    mvz_json_init(&j, out);
    mvz_json_begin_object(&j);
    kv_u(&j, "memviz_inspect", 1);
    snap_json_header(&x->sc, &j);
    mvz_json_key(&j, "block");
    mvz_json_begin_object(&j);
    kv_u(&j, "address", bl->addr);
    kv_u(&j, "size", bl->size);
    kv_u(&j, "thread", bl->tid);
    kv_u(&j, "serial", bl->serial);
    mvz_json_put_string(&j, "kind", mvz_leak_kind_name(x->leaks.kind[x->b]));
    kv_u(&j, "retained_bytes", x->ret.r.retained[x->b]);
    kv_u(&j, "retained_blocks", x->ret.r.retained_n[x->b]);
    snap_json_stack(&x->sc, &j, bl->stack);
    mvz_json_end_object(&j);
    snap_json_path(&x->sc, &x->ret, &j, x->b);
    json_bytes(x, &j);
    json_pointers(x, &j);
    if (x->typed.type)
        mvz_typed_json(&x->typed, &j, x->nknown >= 0 ? x->bytes : NULL, x->known);
    mvz_json_end_object(&j);
    fputc('\n', out);
}

/* ---- the command ---- */
enum { O_SNAPSHOT = 256, O_BLOCK, O_BYTES };

static int parse_options(struct inspect_cmd *x, int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"snapshot", required_argument, NULL, O_SNAPSHOT},
        {"block", required_argument, NULL, O_BLOCK},
        {"bytes", required_argument, NULL, O_BYTES},
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
        case O_SNAPSHOT:
            x->want = optarg;
            break;
        case O_BLOCK:
            x->block_arg = optarg;
            break;
        case O_BYTES:
            if ((v = mvz_parse_count(optarg, 1L << 40)) < 0)
                return mvz_usage_error("inspect", "--bytes needs a number, got '%s'", optarg);
            x->max_bytes = (uint64_t)v;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return -1;
        default: {
            int rc = mvz_cmd_shared_option("inspect", c, argv);
            if (rc)
                return rc;
            break;
        }
        }
    }
    if (optind != argc - 1)
        return mvz_usage_error("inspect", "expects exactly one trace file");
    if (!x->block_arg)
        return mvz_usage_error("inspect", "--block ADDR is required");
    return 0;
}

static int find_block(struct inspect_cmd *x)
{
    char *end;
    uint64_t addr = strtoull(x->block_arg, &end, 0);
    long b = *x->block_arg && !*end ? snap_block_at(&x->sc.snap, addr) : -1;
    if (b < 0) {
        mvz_error("no live block at %s in snapshot \"%s\"", x->block_arg, x->sc.snap.info.name);
        return -1;
    }
    x->b = (uint32_t)b;
    return 0;
}

int cmd_inspect(int argc, char **argv)
{
    static struct inspect_cmd x;
    memset(&x, 0, sizeof(x));
    x.max_bytes = DEFAULT_SHOWN;
    int rc = parse_options(&x, argc, argv);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    rc = 1;
    unsetenv("DEBUGINFOD_URLS"); /* symbolization must not wait on the network */
    if (snap_open(&x.sc, argv[optind], x.want) == 0 && find_block(&x) == 0 &&
        snap_retention_build(&x.sc, &x.ret) == 0 && load_bytes(&x) == 0) {
        if (mvz_leaks_classify(&x.sc.snap, &x.leaks) < 0) {
            mvz_error("out of memory classifying the leaks");
        } else {
            int stored = x.nknown > 0;
            mvz_typed_find(&x.typed, &x.sc.t, x.sc.sym, &x.ret.r, x.b, stored ? x.bytes : NULL,
                           stored ? x.known : NULL);
            if (x.json)
                print_json(&x, stdout);
            else
                print_text(&x, stdout);
            rc = fflush(stdout) == 0 ? 0 : 1;
        }
    }
    mvz_typed_free(&x.typed);
    mvz_leaks_free(&x.leaks);
    free(x.bytes);
    free(x.known);
    snap_retention_free(&x.ret);
    snap_close(&x.sc);
    return rc;
}
