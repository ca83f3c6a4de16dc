/*
 * snapshots.c - see snapshots.h.
 */
#include "cmd/snapshots.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dominators.h"
#include "analysis/leaks.h"
#include "cmd/cmd.h"
#include "trace/format.h"
#include "util/fmt.h"
#include "util/json.h"

const struct mvz_snap_info *snap_choose(const struct mvz_snap_info *list, size_t n,
                                        const char *want)
{
    const struct mvz_snap_info *exit_snap = NULL, *last = NULL, *named = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct mvz_snap_info *s = &list[i];
        if (!s->complete)
            continue;
        last = s;
        if (s->trigger == MVZ_SNAP_EXIT)
            exit_snap = s;
        if (want && !strcmp(s->name, want))
            named = s;
    }
    return want ? named : exit_snap ? exit_snap : last;
}

static void say_missing(struct snap_ctx *c, const char *want)
{
    if (!c->nlist) {
        /* an image that exec'd has no exit: its program's trace does */
        char err[512];
        struct mvz_replay_ops ops = {0};
        if (mvz_replay(c->path, &c->t, &ops, NULL, err, sizeof(err)) == 0 && c->t.have_exec &&
            !c->t.have_exit) {
            mvz_error("%s replaced itself with exec(%s): the snapshot at exit is in that "
                      "program's trace (memviz report --children %s lists it)",
                      c->path, c->t.exec_path ? c->t.exec_path : "?", c->path);
            return;
        }
        mvz_error("%s has no heap snapshot (memviz run takes one at exit unless "
                  "--no-leak-scan; the program may also have ended by _exit or a signal)",
                  c->path);
        return;
    }
    char names[512] = "";
    size_t len = 0;
    for (size_t i = 0; i < c->nlist && len + 2 < sizeof(names); i++)
        len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s%s", i ? ", " : "",
                                c->list[i].name, c->list[i].complete ? "" : " (incomplete)");
    if (want)
        mvz_error("%s has no complete snapshot named '%s' (it has: %s)", c->path, want, names);
    else
        mvz_error("%s has no complete snapshot (it has: %s)", c->path, names);
}

int snap_open(struct snap_ctx *c, const char *path, const char *want)
{
    char err[512];
    c->path = path;
    if (mvz_snap_list(path, &c->list, &c->nlist, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return -1;
    }
    const struct mvz_snap_info *s = snap_choose(c->list, c->nlist, want);
    if (!s) {
        say_missing(c, want);
        return -1;
    }
    struct mvz_replay_ops ops = {.warm_symbols = 1};
    if (mvz_replay(path, &c->t, &ops, NULL, err, sizeof(err)) < 0 ||
        mvz_snap_load(path, s->id, &c->snap, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return -1;
    }
    c->snap.info.complete = s->complete && c->snap.info.complete;
    c->snap.info.has_contents = s->has_contents;
    if (!(c->sym = mvz_symbols_new(&c->t))) {
        mvz_error("out of memory");
        return -1;
    }
    return 0;
}

void snap_close(struct snap_ctx *c)
{
    mvz_symbols_free(c->sym);
    mvz_snap_free(&c->snap);
    mvz_snap_infos_free(c->list, c->nlist);
    mvz_trace_free(&c->t);
    memset(c, 0, sizeof(*c));
}

void snap_print_header(struct snap_ctx *c, FILE *out, const char *title)
{
    const struct mvz_snap_info *i = &c->snap.info;
    char a[32], b[32], d[32];
    fprintf(out, "%s: %s\n", title, c->path);
    fprintf(out, "snapshot:         \"%s\" (%s), at %s, %s live block(s)\n", i->name,
            mvz_snap_trigger_name(i->trigger), mvz_fmt_duration(i->ts, a, sizeof(a)),
            mvz_fmt_count(c->snap.nblocks, b, sizeof(b)));
    fprintf(out, "pause:            %s; scan %s, %s read",
            mvz_fmt_duration(i->pause_ns, a, sizeof(a)), mvz_fmt_duration(i->scan_ns, d, sizeof(d)),
            mvz_fmt_bytes(i->scanned, b, sizeof(b)));
    if (i->unreadable)
        fprintf(out, ", %s unreadable (skipped)", mvz_fmt_bytes(i->unreadable, a, sizeof(a)));
    if (i->too_large)
        fprintf(out, ", %s in mappings over 64 GiB not scanned (sanitizer shadow?)",
                mvz_fmt_bytes(i->too_large, a, sizeof(a)));
    fputc('\n', out);
    if (i->threads_running)
        fprintf(out,
                "warning: %u other thread(s) ran on while the snapshot was taken: their "
                "registers are not roots, and their stacks were scanned whole\n",
                i->threads_running);
}

void snap_print_stack(struct snap_ctx *c, FILE *out, uint32_t stack, const char *indent)
{
    size_t n = mvz_symbols_stack(c->sym, stack, c->frames, SNAP_MAX_FRAMES);
    for (size_t i = 0; i < n; i++) {
        const struct mvz_frame *f = &c->frames[i];
        fprintf(out, "%s%s%s", indent, f->inlined ? "(inlined) " : "", f->function);
        if (f->file)
            fprintf(out, "  %s:%u", f->file, f->line);
        if (f->module)
            fprintf(out, "  [%s]", mvz_base_name(f->module));
        fputc('\n', out);
    }
}

static void kv_u(struct mvz_json *j, const char *k, uint64_t v)
{
    mvz_json_key(j, k);
    mvz_json_uint(j, v);
}

void snap_json_header(struct snap_ctx *c, struct mvz_json *j)
{
    const struct mvz_snap_info *i = &c->snap.info;
    mvz_json_put_string(j, "trace", c->path);
    mvz_json_key(j, "snapshot");
    mvz_json_begin_object(j);
    mvz_json_put_string(j, "name", i->name);
    mvz_json_put_string(j, "trigger", mvz_snap_trigger_name(i->trigger));
    kv_u(j, "time_ns", i->ts);
    kv_u(j, "events_before", i->events);
    kv_u(j, "blocks", c->snap.nblocks);
    kv_u(j, "edges", c->snap.nedges);
    kv_u(j, "root_edges", c->snap.nroot_edges);
    kv_u(j, "pause_ns", i->pause_ns);
    kv_u(j, "scan_ns", i->scan_ns);
    kv_u(j, "scanned_bytes", i->scanned);
    kv_u(j, "unreadable_bytes", i->unreadable);
    kv_u(j, "too_large_bytes", i->too_large);
    kv_u(j, "threads_running", i->threads_running);
    mvz_json_key(j, "complete");
    mvz_json_bool(j, i->complete);
    mvz_json_end_object(j);
}

void snap_json_stack(struct snap_ctx *c, struct mvz_json *j, uint32_t stack)
{
    size_t n = mvz_symbols_stack(c->sym, stack, c->frames, SNAP_MAX_FRAMES);
    mvz_json_key(j, "frames");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        const struct mvz_frame *f = &c->frames[i];
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "function", f->function);
        mvz_json_put_string(j, "file", f->file);
        kv_u(j, "line", f->line);
        mvz_json_put_string(j, "module", f->module);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

const char *const snap_heuristic_names[4] = {"stdstring", "length64", "newarray",
                                             "multipleinheritance"};

static void json_bytes_blocks(struct mvz_json *j, const char *key, uint64_t bytes, uint64_t blocks)
{
    mvz_json_key(j, key);
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "bytes", bytes);
    mvz_json_put_uint(j, "blocks", blocks);
    mvz_json_end_object(j);
}

void snap_json_leak_totals(struct mvz_json *j, const char *key, const struct mvz_leak_totals *t)
{
    mvz_json_key(j, key);
    mvz_json_begin_object(j);
    for (int k = MVZ_LEAK_KINDS; k-- > 0;)
        json_bytes_blocks(j, mvz_leak_kind_name(k), t->bytes[k], t->blocks[k]);
    mvz_json_key(j, "reachable_via_heuristic");
    mvz_json_begin_object(j);
    for (int h = 0; h < 4; h++)
        json_bytes_blocks(j, snap_heuristic_names[h], t->heuristic_bytes[h],
                          t->heuristic_blocks[h]);
    mvz_json_end_object(j);
    mvz_json_end_object(j);
}

/* ---- what keeps a block alive ---- */
int snap_retention_build(struct snap_ctx *c, struct snap_retention *x)
{
    if (mvz_root_groups_build(&c->snap, &c->t, c->sym, &x->g) < 0 ||
        mvz_retain_build(&c->snap, x->g.group, x->g.n, x->g.weak, &x->r) < 0) {
        mvz_error("out of memory building the dominator tree");
        return -1;
    }
    return 0;
}

void snap_retention_free(struct snap_retention *x)
{
    mvz_retain_free(&x->r);
    mvz_root_groups_free(&x->g);
}

const char *snap_site_name(struct snap_ctx *c, uint32_t block)
{
    size_t n = mvz_symbols_stack(c->sym, c->snap.blocks[block].stack, c->frames, SNAP_MAX_FRAMES);
    return n ? c->frames[0].function : "?";
}

#define PATH_MAX_STEPS 64

/* The shortest path to node v, root first: nodes into p (count returned). */
static size_t path_to(const struct snap_retention *x, uint32_t v, uint32_t *p)
{
    size_t n = 0;
    for (uint32_t at = v; at != MVZ_DOM_NONE && at != x->r.vroot && n < PATH_MAX_STEPS;
         at = x->r.bfs_parent[at])
        p[n++] = at;
    for (size_t i = 0; i < n / 2; i++) {
        uint32_t t = p[i];
        p[i] = p[n - 1 - i];
        p[n - 1 - i] = t;
    }
    return n;
}

/* The address of root edge re's word. */
static uint64_t root_word(const struct mvz_snapshot *s, size_t re)
{
    for (size_t i = 0; i < s->nroots; i++)
        if (re >= s->roots[i].first_edge && re < s->roots[i].first_edge + s->roots[i].nedges)
            return s->roots[i].addr + s->root_edges[re].offset;
    return 0;
}

/* The stack frame root edge re lies in, "function (file:line)", or NULL:
 * the agent names each frame's region of a stack by its pc. */
static const char *root_frame(struct snap_ctx *c, size_t re, char *buf, size_t cap)
{
    const struct mvz_snapshot *s = &c->snap;
    for (size_t i = 0; i < s->nroots; i++) {
        const struct mvz_snap_root *rt = &s->roots[i];
        if (re < rt->first_edge || re >= rt->first_edge + rt->nedges)
            continue;
        if (rt->kind != MVZ_ROOT_STACK || !rt->name || strncmp(rt->name, "0x", 2) != 0)
            return NULL;
        uint32_t gen = 0;
        for (size_t k = 0; k < c->t.nmodules; k++)
            gen = c->t.modules[k].gen_loaded > gen ? c->t.modules[k].gen_loaded : gen;
        uint64_t pc = strtoull(rt->name, NULL, 16);
        size_t n = mvz_symbols_address(c->sym, gen, pc, c->frames, SNAP_MAX_FRAMES);
        if (!n)
            return NULL;
        const struct mvz_frame *f = &c->frames[0];
        if (f->file)
            snprintf(buf, cap, "%s (%s:%u)", f->function, mvz_base_name(f->file), f->line);
        else
            snprintf(buf, cap, "%s", f->function);
        return buf;
    }
    return NULL;
}

void snap_print_root(const struct snap_retention *x, FILE *out, uint32_t root)
{
    char label[600];
    mvz_root_label(&x->g.roots[root], label, sizeof(label));
    fputs(label, out);
}

void snap_print_path(struct snap_ctx *c, const struct snap_retention *x, FILE *out, uint32_t v,
                     const char *indent)
{
    uint32_t p[PATH_MAX_STEPS];
    size_t n = path_to(x, v, p);
    if (!n || p[0] < x->r.nblocks) {
        fprintf(out, "%sno path from a root (lost)\n", indent);
        return;
    }
    fprintf(out, "%spath: ", indent);
    snap_print_root(x, out, p[0] - x->r.nblocks);
    for (size_t i = 1; i < n; i++) {
        uint64_t off;
        size_t re;
        char frame[600];
        if (mvz_retain_path_step(&x->r, p[i], &off, &re)) {
            const char *fr = root_frame(c, re, frame, sizeof(frame));
            fprintf(out, " (%s%sword 0x%" PRIx64 ")", fr ? fr : "", fr ? ", " : "",
                    root_word(&c->snap, re));
        } else
            fprintf(out, " +%" PRIu64, off);
        fprintf(out, " -> %s 0x%" PRIx64, snap_site_name(c, p[i]), c->snap.blocks[p[i]].addr);
    }
    fputc('\n', out);
}

void snap_json_path(struct snap_ctx *c, const struct snap_retention *x, struct mvz_json *j,
                    uint32_t v)
{
    uint32_t p[PATH_MAX_STEPS];
    size_t n = path_to(x, v, p);
    mvz_json_key(j, "path");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        mvz_json_begin_object(j);
        if (p[i] >= x->r.nblocks) {
            const struct mvz_root_info *ri = &x->g.roots[p[i] - x->r.nblocks];
            mvz_json_put_string(j, "root", mvz_root_kind_name(ri->kind));
            mvz_json_put_string(j, "name", ri->name);
            kv_u(j, "thread", ri->tid);
        } else {
            uint64_t off;
            size_t re;
            int from_root = mvz_retain_path_step(&x->r, p[i], &off, &re);
            kv_u(j, "block", c->snap.blocks[p[i]].addr);
            mvz_json_put_string(j, "site", snap_site_name(c, p[i]));
            kv_u(j, from_root ? "from_word" : "from_offset",
                 from_root ? root_word(&c->snap, re) : off);
            char frame[600];
            const char *fr = from_root ? root_frame(c, re, frame, sizeof(frame)) : NULL;
            if (fr) {
                mvz_json_put_string(j, "from_frame", fr);
            }
        }
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

long snap_block_at(const struct mvz_snapshot *s, uint64_t addr)
{
    size_t lo = 0, hi = s->nblocks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->blocks[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return -1;
    const struct mvz_snap_block *b = &s->blocks[lo - 1];
    return addr == b->addr || addr < b->addr + b->size ? (long)(lo - 1) : -1;
}
