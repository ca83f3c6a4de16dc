/*
 * retain.c - `memviz retain FILE`: what keeps memory alive in a heap
 * snapshot. The roots (a global variable, a thread's stack, registers,
 * thread-local storage, a mapping) by the memory they retain (what freeing
 * them would free: analysis/retain.h), what each retains by allocation
 * site, and the allocation sites by retained size, each with the shortest
 * path from a root to its largest block. --site and --block look at one.
 */
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dominators.h"
#include "analysis/retain.h"
#include "analysis/roots.h"
#include "cmd/cmd.h"
#include "cmd/snapshots.h"
#include "trace/format.h"
#include "trace/heap_codec.h"
#include "util/fmt.h"
#include "util/json.h"
#include "util/sort.h"
#include "util/strtab.h"

struct site_info {
    uint32_t stack;
    uint64_t shallow, shallow_n, retained, retained_n, suspects;
    uint32_t biggest; /* its block that retains most */
};

struct retain_cmd {
    int json;
    size_t top;
    const char *want, *site_glob, *block_arg;
    struct snap_ctx sc;
    struct snap_retention ret;
    struct site_info *sites;
    uint32_t nstacks;
};

static const char usage_text[] =
    "usage: memviz retain [--json] [--snapshot NAME] [--top N] [--site GLOB | --block ADDR]\n"
    "                     [--debug-dir DIR] FILE\n"
    "What keeps memory alive in a heap snapshot: the roots by the memory they retain\n"
    "(what freeing them would free), the allocation sites by retained size, and the\n"
    "shortest path from a root to each.\n"
    "  --snapshot NAME  which snapshot (default: the one taken at exit, else the last)\n"
    "  --site GLOB      the sites with a frame whose function, file or module matches\n"
    "  --block ADDR     the block at (or containing) address ADDR\n"
    "  --top N          roots and sites listed (default 10)\n";

/* ---- sites ---- */
static int build_sites(struct retain_cmd *x)
{
    const struct mvz_snapshot *s = &x->sc.snap;
    uint32_t n = 0;
    for (size_t b = 0; b < s->nblocks; b++)
        n = s->blocks[b].stack + 1 > n ? s->blocks[b].stack + 1 : n;
    x->nstacks = n;
    uint64_t *rb = calloc(n ? n : 1, sizeof(*rb)), *rn = calloc(n ? n : 1, sizeof(*rn));
    x->sites = calloc(n ? n : 1, sizeof(*x->sites));
    if (!rb || !rn || !x->sites || mvz_retain_by_stack(&x->ret.r, rb, rn, n) < 0) {
        free(rb);
        free(rn);
        return -1;
    }
    for (uint32_t st = 0; st < n; st++)
        x->sites[st] = (struct site_info){st, 0, 0, rb[st], rn[st], 0, UINT32_MAX};
    for (uint32_t b = 0; b < (uint32_t)s->nblocks; b++) {
        struct site_info *si = &x->sites[s->blocks[b].stack];
        si->shallow += s->blocks[b].size;
        si->shallow_n++;
        si->suspects += x->ret.r.suspect[b];
        if (si->biggest == UINT32_MAX || x->ret.r.retained[b] > x->ret.r.retained[si->biggest])
            si->biggest = b;
    }
    free(rb);
    free(rn);
    return 0;
}

static int by_retained_site(const void *a, const void *b)
{
    const struct site_info *p = a, *q = b;
    if (p->retained != q->retained)
        return p->retained > q->retained ? -1 : 1;
    return p->stack < q->stack ? -1 : p->stack > q->stack;
}

/* Whether a frame of the stack matches the glob (function, file or module). */
static int site_matches(struct retain_cmd *x, uint32_t stack, const char *glob)
{
    size_t n = mvz_symbols_stack(x->sc.sym, stack, x->sc.frames, SNAP_MAX_FRAMES);
    for (size_t i = 0; i < n; i++) {
        const struct mvz_frame *f = &x->sc.frames[i];
        if (!fnmatch(glob, f->function, 0) || (f->file && !fnmatch(glob, f->file, 0)) ||
            (f->module && !fnmatch(glob, f->module, 0)) ||
            (f->module && !fnmatch(glob, mvz_base_name(f->module), 0)))
            return 1;
    }
    return 0;
}

/* ---- text ---- */
static int by_retained_root(const void *a, const void *b, void *ctx)
{
    const struct retain_cmd *x = ctx;
    uint32_t p = *(const uint32_t *)a, q = *(const uint32_t *)b;
    uint64_t rp = x->ret.r.retained[x->ret.r.nblocks + p],
             rq = x->ret.r.retained[x->ret.r.nblocks + q];
    if (rp != rq)
        return rp > rq ? -1 : 1;
    return p < q ? -1 : p > q;
}

/* The roots, largest retained first (indexes into x->roots). */
static uint32_t *sorted_roots(struct retain_cmd *x)
{
    uint32_t *v = malloc((x->ret.g.n ? x->ret.g.n : 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (uint32_t i = 0; i < x->ret.g.n; i++)
        v[i] = i;
    qsort_r(v, x->ret.g.n, sizeof(*v), by_retained_root, x);
    return v;
}

/* What root g retains, by the stack of the blocks it immediately
 * dominates: the top three. */
static void print_retained_by(struct retain_cmd *x, FILE *out, uint32_t g)
{
    uint32_t node = x->ret.r.nblocks + g, top[3] = {0};
    uint64_t best[3] = {0};
    for (uint32_t b = 0; b < x->ret.r.nblocks; b++) {
        if (x->ret.r.idom[b] != node)
            continue;
        uint64_t v = x->ret.r.retained[b];
        for (int k = 0; k < 3; k++)
            if (v > best[k]) {
                for (int j = 2; j > k; j--) {
                    best[j] = best[j - 1];
                    top[j] = top[j - 1];
                }
                best[k] = v;
                top[k] = b;
                break;
            }
    }
    char a[32];
    for (int k = 0; k < 3 && best[k]; k++)
        fprintf(out, "        %s through 0x%" PRIx64 " (%s)\n",
                mvz_fmt_bytes(best[k], a, sizeof(a)), x->sc.snap.blocks[top[k]].addr,
                snap_site_name(&x->sc, top[k]));
}

static void print_roots(struct retain_cmd *x, FILE *out)
{
    uint32_t *v = sorted_roots(x);
    char a[32], b[32], c[32];
    fprintf(out, "\nRoots by memory retained (what freeing the root would free):\n");
    for (uint32_t i = 0; v && i < x->ret.g.n && i < x->top; i++) {
        uint32_t g = v[i], node = x->ret.r.nblocks + g;
        uint64_t reach = 0, reach_n = 0;
        mvz_retain_reachable(&x->ret.r, node, &reach, &reach_n);
        fprintf(out, "  #%u  %s in %s block(s) retained, %s reachable  ", i + 1,
                mvz_fmt_bytes(x->ret.r.retained[node], a, sizeof(a)),
                mvz_fmt_count(x->ret.r.retained_n[node], b, sizeof(b)),
                mvz_fmt_bytes(reach, c, sizeof(c)));
        snap_print_root(&x->ret, out, g);
        fputc('\n', out);
        print_retained_by(x, out, g);
    }
    uint64_t shared = x->ret.r.retained[x->ret.r.vroot];
    for (uint32_t g = 0; g < x->ret.g.n; g++)
        shared -= x->ret.r.retained[x->ret.r.nblocks + g];
    fprintf(out, "  held by more than one root (retained by none): %s\n",
            mvz_fmt_bytes(shared, a, sizeof(a)));
    free(v);
}

static void print_site(struct retain_cmd *x, FILE *out, const struct site_info *si, size_t rank)
{
    char a[32], b[32], c[32], d[32];
    fprintf(out, "  #%zu  %s in %s block(s) retained; shallow %s in %s block(s)", rank,
            mvz_fmt_bytes(si->retained, a, sizeof(a)), mvz_fmt_count(si->retained_n, b, sizeof(b)),
            mvz_fmt_bytes(si->shallow, c, sizeof(c)), mvz_fmt_count(si->shallow_n, d, sizeof(d)));
    if (si->suspects)
        fprintf(out, "; %" PRIu64 " held only by a stack or register word", si->suspects);
    fputc('\n', out);
    snap_print_stack(&x->sc, out, si->stack, "      ");
    if (si->biggest != UINT32_MAX)
        snap_print_path(&x->sc, &x->ret, out, si->biggest, "      ");
}

static void print_sites(struct retain_cmd *x, FILE *out)
{
    struct site_info *v = malloc((x->nstacks ? x->nstacks : 1) * sizeof(*v));
    if (!v)
        return;
    memcpy(v, x->sites, x->nstacks * sizeof(*v));
    mvz_sort(v, x->nstacks, sizeof(*v), by_retained_site);
    fprintf(out, "\nAllocation sites by memory retained%s:\n",
            x->site_glob ? " (matching --site)" : "");
    size_t shown = 0;
    for (uint32_t i = 0; i < x->nstacks && shown < x->top; i++) {
        if (!v[i].shallow_n || (x->site_glob && !site_matches(x, v[i].stack, x->site_glob)))
            continue;
        print_site(x, out, &v[i], ++shown);
    }
    if (!shown)
        fprintf(out, "  (none)\n");
    free(v);
}

static void print_suspects(struct retain_cmd *x, FILE *out)
{
    uint64_t bytes = 0, n = 0;
    for (uint32_t b = 0; b < x->ret.r.nblocks; b++)
        if (x->ret.r.suspect[b]) {
            bytes += x->sc.snap.blocks[b].size;
            n++;
        }
    char a[32], c[32];
    fprintf(out,
            "held only by stack or register words (a stale word can hide a leak): %s in "
            "%s block(s)\n",
            mvz_fmt_bytes(bytes, a, sizeof(a)), mvz_fmt_count(n, c, sizeof(c)));
}

static int print_block(struct retain_cmd *x, FILE *out)
{
    char *end;
    uint64_t addr = strtoull(x->block_arg, &end, 0);
    long b = *x->block_arg && !*end ? snap_block_at(&x->sc.snap, addr) : -1;
    if (b < 0) {
        mvz_error("no live block at %s in snapshot \"%s\"", x->block_arg, x->sc.snap.info.name);
        return 1;
    }
    const struct mvz_snap_block *bl = &x->sc.snap.blocks[b];
    char a[32], c[32];
    fprintf(out,
            "\nBlock 0x%" PRIx64 ": %" PRIu64 " bytes, thread %u's allocation #%" PRIu64
            "; retains %s in %s block(s)%s\n",
            bl->addr, bl->size, bl->tid, bl->serial,
            mvz_fmt_bytes(x->ret.r.retained[b], a, sizeof(a)),
            mvz_fmt_count(x->ret.r.retained_n[b], c, sizeof(c)),
            x->ret.r.suspect[b] ? "; held only by a stack or register word" : "");
    snap_print_stack(&x->sc, out, bl->stack, "      ");
    snap_print_path(&x->sc, &x->ret, out, (uint32_t)b, "      ");
    return 0;
}

/* ---- tags (memviz_tag_mark): the marked blocks' deep size ---- */
struct tag_row {
    uint32_t tag;
    uint64_t blocks, bytes, deep_bytes, deep_blocks;
};

static int by_name(const void *a, const void *b)
{
    uint64_t p = *(const uint64_t *)a, q = *(const uint64_t *)b;
    return p < q ? -1 : p > q;
}

/* Per tag the trace has: its blocks in the snapshot and their deep size.
 * Returns how many rows (at most max), or -1. */
static int tag_rows(struct retain_cmd *x, struct tag_row *rows, int max)
{
    const struct mvz_user *u = &x->sc.t.user;
    const struct mvz_snapshot *s = &x->sc.snap;
    if (!u->nmarks)
        return 0;
    uint64_t *marks = malloc(u->nmarks * 2 * sizeof(*marks)); /* (name, tag) pairs, by name */
    uint8_t *from = calloc(s->nblocks ? s->nblocks : 1, 1);
    int n = 0;
    if (!marks || !from) {
        free(marks);
        free(from);
        return -1;
    }
    for (size_t i = 0; i < u->nmarks; i++) {
        marks[2 * i] = u->marks[i].name;
        marks[2 * i + 1] = u->marks[i].tag;
    }
    qsort(marks, u->nmarks, 2 * sizeof(*marks), by_name);
    for (uint32_t tag = 0; tag < u->nins && n < max; tag++) {
        if (u->ins[tag].kind != MVZ_USER_TAG_KIND)
            continue;
        struct tag_row r = {tag, 0, 0, 0, 0};
        memset(from, 0, s->nblocks ? s->nblocks : 1);
        for (uint32_t b = 0; b < s->nblocks; b++) {
            uint64_t key[2] = {mvz_heap_block(s->blocks[b].tid, s->blocks[b].serial), 0};
            const uint64_t *m = bsearch(key, marks, u->nmarks, 2 * sizeof(*marks), by_name);
            if (m && m[1] == tag) {
                from[b] = 1;
                r.blocks++;
                r.bytes += s->blocks[b].size;
            }
        }
        if (mvz_snap_deep_size(s, from, &r.deep_bytes, &r.deep_blocks) < 0)
            break;
        rows[n++] = r;
    }
    free(marks);
    free(from);
    return n;
}

static void print_tags(struct retain_cmd *x, FILE *out)
{
    struct tag_row rows[64];
    int n = tag_rows(x, rows, 64);
    if (n <= 0)
        return;
    char a[32], b[32], c[32], d[32];
    fprintf(out, "\nTags (deep size: every block their blocks reach, each once):\n");
    for (int i = 0; i < n; i++)
        fprintf(out, "  %-24s %s in %s block(s); deep size %s in %s block(s)\n",
                x->sc.t.user.ins[rows[i].tag].name, mvz_fmt_bytes(rows[i].bytes, a, sizeof(a)),
                mvz_fmt_count(rows[i].blocks, b, sizeof(b)),
                mvz_fmt_bytes(rows[i].deep_bytes, c, sizeof(c)),
                mvz_fmt_count(rows[i].deep_blocks, d, sizeof(d)));
}

/* ---- JSON ---- */
static void kv_u(struct mvz_json *j, const char *k, uint64_t v)
{
    mvz_json_key(j, k);
    mvz_json_uint(j, v);
}

static void json_roots(struct retain_cmd *x, struct mvz_json *j)
{
    uint32_t *v = sorted_roots(x);
    mvz_json_key(j, "roots");
    mvz_json_begin_array(j);
    for (uint32_t i = 0; v && i < x->ret.g.n && i < x->top; i++) {
        const struct mvz_root_info *ri = &x->ret.g.roots[v[i]];
        uint32_t node = x->ret.r.nblocks + v[i];
        uint64_t reach = 0, reach_n = 0;
        mvz_retain_reachable(&x->ret.r, node, &reach, &reach_n);
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "kind", mvz_root_kind_name(ri->kind));
        mvz_json_put_string(j, "name", ri->name);
        mvz_json_put_string(j, "module", ri->module);
        kv_u(j, "thread", ri->tid);
        kv_u(j, "address", ri->addr);
        kv_u(j, "retained_bytes", x->ret.r.retained[node]);
        kv_u(j, "retained_blocks", x->ret.r.retained_n[node]);
        kv_u(j, "reachable_bytes", reach);
        kv_u(j, "reachable_blocks", reach_n);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
    free(v);
}

static void json_sites(struct retain_cmd *x, struct mvz_json *j)
{
    struct site_info *v = malloc((x->nstacks ? x->nstacks : 1) * sizeof(*v));
    mvz_json_key(j, "sites");
    mvz_json_begin_array(j);
    if (v) {
        memcpy(v, x->sites, x->nstacks * sizeof(*v));
        mvz_sort(v, x->nstacks, sizeof(*v), by_retained_site);
        size_t shown = 0;
        for (uint32_t i = 0; i < x->nstacks && shown < x->top; i++) {
            if (!v[i].shallow_n || (x->site_glob && !site_matches(x, v[i].stack, x->site_glob)))
                continue;
            shown++;
            mvz_json_begin_object(j);
            kv_u(j, "shallow_bytes", v[i].shallow);
            kv_u(j, "shallow_blocks", v[i].shallow_n);
            kv_u(j, "retained_bytes", v[i].retained);
            kv_u(j, "retained_blocks", v[i].retained_n);
            kv_u(j, "suspect_blocks", v[i].suspects);
            snap_json_stack(&x->sc, j, v[i].stack);
            if (v[i].biggest != UINT32_MAX)
                snap_json_path(&x->sc, &x->ret, j, v[i].biggest);
            mvz_json_end_object(j);
        }
    }
    mvz_json_end_array(j);
    free(v);
}

static void json_tags(struct retain_cmd *x, struct mvz_json *j)
{
    struct tag_row rows[64];
    int n = tag_rows(x, rows, 64);
    mvz_json_key(j, "tags");
    mvz_json_begin_array(j);
    for (int i = 0; i < n; i++) {
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "name", x->sc.t.user.ins[rows[i].tag].name);
        kv_u(j, "blocks", rows[i].blocks);
        kv_u(j, "bytes", rows[i].bytes);
        kv_u(j, "deep_bytes", rows[i].deep_bytes);
        kv_u(j, "deep_blocks", rows[i].deep_blocks);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void print_json(struct retain_cmd *x, FILE *out)
{
    struct mvz_json j;
    mvz_json_init(&j, out);
    mvz_json_begin_object(&j);
    kv_u(&j, "memviz_retain", 1);
    snap_json_header(&x->sc, &j);
    uint64_t sb = 0, sn = 0, shared = x->ret.r.retained[x->ret.r.vroot];
    for (uint32_t b = 0; b < x->ret.r.nblocks; b++)
        if (x->ret.r.suspect[b]) {
            sb += x->sc.snap.blocks[b].size;
            sn++;
        }
    for (uint32_t g = 0; g < x->ret.g.n; g++)
        shared -= x->ret.r.retained[x->ret.r.nblocks + g];
    kv_u(&j, "reachable_bytes", x->ret.r.retained[x->ret.r.vroot]);
    kv_u(&j, "reachable_blocks", x->ret.r.retained_n[x->ret.r.vroot]);
    kv_u(&j, "shared_bytes", shared);
    mvz_json_key(&j, "suspects");
    mvz_json_begin_object(&j);
    kv_u(&j, "bytes", sb);
    kv_u(&j, "blocks", sn);
    mvz_json_end_object(&j);
    json_roots(x, &j);
    json_sites(x, &j);
    json_tags(x, &j);
    mvz_json_end_object(&j);
    fputc('\n', out);
}

/* ---- the command ---- */
enum { O_SNAPSHOT = 256, O_SITE, O_BLOCK };

static int parse_options(struct retain_cmd *x, int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"snapshot", required_argument, NULL, O_SNAPSHOT},
        {"site", required_argument, NULL, O_SITE},
        {"block", required_argument, NULL, O_BLOCK},
        {"top", required_argument, NULL, 't'},
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
        case O_SITE:
            x->site_glob = optarg;
            break;
        case O_BLOCK:
            x->block_arg = optarg;
            break;
        case 't':
            if ((v = mvz_parse_count(optarg, 1 << 30)) < 0)
                return mvz_usage_error("retain", "--top needs a number, got '%s'", optarg);
            x->top = (size_t)v;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return -1;
        default: {
            int rc = mvz_cmd_shared_option("retain", c, argv);
            if (rc)
                return rc;
            break;
        }
        }
    }
    if (optind != argc - 1)
        return mvz_usage_error("retain", "expects exactly one trace file");
    if (x->site_glob && x->block_arg)
        return mvz_usage_error("retain", "--site and --block: one or the other");
    return 0;
}

static void retain_free(struct retain_cmd *x)
{
    snap_retention_free(&x->ret);
    free(x->sites);
    snap_close(&x->sc);
}

int cmd_retain(int argc, char **argv)
{
    static struct retain_cmd x;
    memset(&x, 0, sizeof(x));
    x.top = 10;
    int rc = parse_options(&x, argc, argv);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    rc = 1;
    if (snap_open(&x.sc, argv[optind], x.want) == 0) {
        if (snap_retention_build(&x.sc, &x.ret) < 0 || build_sites(&x) < 0) {
            mvz_error("out of memory building the dominator tree");
        } else if (x.json) {
            print_json(&x, stdout);
            rc = 0;
        } else {
            snap_print_header(&x.sc, stdout, "memviz retain");
            rc = 0;
            if (x.block_arg) {
                rc = print_block(&x, stdout);
            } else {
                print_suspects(&x, stdout);
                if (!x.site_glob)
                    print_roots(&x, stdout);
                print_sites(&x, stdout);
                print_tags(&x, stdout);
            }
        }
    }
    retain_free(&x);
    return fflush(stdout) == 0 ? rc : 1;
}
