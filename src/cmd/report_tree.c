/*
 * report_tree.c - `memviz report --children`: the process tree a trace
 * heads, followed through its CHILD records: every traced image with its
 * pid, how it came (the first image, a fork, an exec), how it ended, its
 * allocation calls, peak heap and what it did not free, and the tree's
 * totals. The numbers are each image's whole run, whatever window the
 * report itself shows.
 *
 * Invariants: each trace is read once (a path seen before is not followed
 * again, so a damaged or hand-made cycle of CHILD records ends); at most
 * TREE_MAX images are read.
 */
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "analysis/merge.h"
#include "cmd/report.h"
#include "trace/buf.h"
#include "trace/format.h"
#include "trace/reader.h"
#include "util/fmt.h"
#include "util/json.h"
#include "util/sort.h"

#define TREE_MAX 4096

struct image {
    char *trace;
    uint64_t start_ns; /* wall clock */
    int pid, how, depth;
    int readable;
    char command[160];
    char exit[256];
    char err[256];
    struct mvz_summary s;
};

struct proc_tree {
    struct image *v;
    size_t n, cap;
    int cut;              /* more images than TREE_MAX */
    struct mvz_merge *mg; /* when merging: every readable image goes in */
};

static int seen(const struct proc_tree *t, const char *path)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->v[i].trace, path))
            return 1;
    return 0;
}

/* The command line, shell-quoted, cut to fit (with "..."). */
static void command_of(const struct mvz_trace *tr, char *buf, size_t cap)
{
    char *p = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&p, &len);
    if (!m) {
        snprintf(buf, cap, "?");
        return;
    }
    report_put_command(m, tr);
    fclose(m);
    if (len < cap)
        snprintf(buf, cap, "%s", p ? p : "");
    else
        snprintf(buf, cap, "%.*s...", (int)(cap - 4), p);
    free(p);
}

/* The name of the outermost frame of an image's stacks in a merged
 * profile: its program's file name. */
static const char *program_of(const struct mvz_trace *tr)
{
    const char *p = tr->argc && tr->argv[0] && *tr->argv[0] ? tr->argv[0] : tr->exe ? tr->exe : "?";
    const char *slash = strrchr(p, '/');
    return slash && slash[1] ? slash + 1 : p;
}

/* Reads one image's trace and appends it; then its children, depth first. */
static void add_image(struct proc_tree *t, const char *path, int pid, int how, int depth)
{
    if (seen(t, path))
        return;
    if (t->n == TREE_MAX) {
        t->cut = 1;
        return;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct image *v = realloc(t->v, cap * sizeof(*v));
        if (!v)
            return;
        t->v = v;
        t->cap = cap;
    }
    struct image *im = &t->v[t->n];
    memset(im, 0, sizeof(*im));
    if (!(im->trace = strdup(path)))
        return;
    t->n++;
    im->pid = pid;
    im->how = how;
    im->depth = depth;
    struct mvz_profile p;
    if (mvz_profile_load(&p, path, im->err, sizeof(im->err)) < 0)
        return;
    im->readable = 1;
    im->start_ns = p.trace.start_realtime_ns;
    im->pid = p.trace.pid;
    im->s = p.sum;
    command_of(&p.trace, im->command, sizeof(im->command));
    report_exit_text(&p.trace, im->exit, sizeof(im->exit));
    size_t nkids = p.trace.nchildren;
    struct mvz_child *kids = calloc(nkids ? nkids : 1, sizeof(*kids));
    for (size_t i = 0; kids && i < nkids; i++) {
        kids[i] = p.trace.children[i];
        kids[i].trace = strdup(p.trace.children[i].trace ? p.trace.children[i].trace : "");
    }
    if (t->mg && mvz_merge_add(t->mg, &p, program_of(&p.trace), p.trace.exe) < 0)
        t->cut = 1;
    mvz_profile_free(&p);
    for (size_t i = 0; kids && i < nkids; i++) {
        if (kids[i].trace && *kids[i].trace)
            add_image(t, kids[i].trace, kids[i].pid, kids[i].how, depth + 1);
        free(kids[i].trace);
    }
    free(kids);
}

static void tree_free(struct proc_tree *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].trace);
    free(t->v);
}

void proc_tree_free(struct proc_tree *t)
{
    if (t)
        tree_free(t);
    free(t);
}

struct proc_tree *proc_tree_load(const char *path, struct mvz_profile *p, struct mvz_symbols **sym)
{
    struct proc_tree *t = calloc(1, sizeof(*t));
    struct mvz_merge mg;
    if (!t || mvz_merge_init(&mg) < 0) {
        free(t);
        mvz_error("out of memory");
        return NULL;
    }
    t->mg = &mg;
    add_image(t, path, 0, 0, 0);
    t->mg = NULL;
    if (t->n && !t->v[0].readable) {
        mvz_error("%s", t->v[0].err);
        mvz_merge_free(&mg);
        proc_tree_free(t);
        return NULL;
    }
    if (!(*sym = mvz_merge_finish(&mg, p))) {
        mvz_error("out of memory merging the process tree's traces");
        proc_tree_free(t);
        return NULL;
    }
    p->trace.path = t->v[0].trace;
    return t;
}

size_t proc_tree_count(const struct proc_tree *t)
{
    size_t n = 0;
    for (size_t j = 0; j < t->n; j++)
        n += t->v[j].readable;
    return n;
}

size_t proc_tree_image(const struct proc_tree *t, size_t i, const char **path, uint64_t *start_ns)
{
    size_t k = 0;
    for (size_t j = 0; j < t->n; j++)
        if (t->v[j].readable && k++ == i) {
            *path = t->v[j].trace;
            *start_ns = t->v[j].start_ns;
            return 1;
        }
    return 0;
}

static const char *how_name(int how)
{
    return how == MVZ_CHILD_FORK ? "fork" : how == MVZ_CHILD_EXEC ? "exec" : "-";
}

/* Distinct pids: an exec'd image is its process's; a forked child that
 * exec'd at once (posix_spawn, a shell's fork) has only the exec'd image. */
static size_t processes(const struct proc_tree *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        size_t j = 0;
        while (j < i && t->v[j].pid != t->v[i].pid)
            j++;
        n += j == i;
    }
    return n;
}

static void print_tree_text(const struct proc_tree *t, FILE *out)
{
    char a[32], b[32], c[32], d[32];
    struct mvz_summary sum = {0};
    fprintf(out, "Process tree: %zu traced image(s) in %zu process(es)%s\n", t->n, processes(t),
            t->cut ? " (the first 4,096 read)" : "");
    fprintf(out, "  %-12s %-5s %12s %12s %12s  %s\n", "pid", "how", "calls", "peak heap",
            "not freed", "command / how it ended");
    for (size_t i = 0; i < t->n; i++) {
        const struct image *im = &t->v[i];
        char pid[32];
        snprintf(pid, sizeof(pid), "%*s%d", 2 * (im->depth < 5 ? im->depth : 5), "", im->pid);
        if (!im->readable) {
            fprintf(out, "  %-12s %-5s %12s %12s %12s  %s: %s\n", pid, how_name(im->how), "?", "?",
                    "?", im->trace, im->err);
            continue;
        }
        fprintf(out, "  %-12s %-5s %12s %12s %12s  %s; %s\n", pid, how_name(im->how),
                mvz_fmt_count(im->s.allocations, a, sizeof(a)),
                mvz_fmt_bytes(im->s.peak_bytes, b, sizeof(b)),
                mvz_fmt_bytes(im->s.leaked_bytes, c, sizeof(c)), im->command, im->exit);
        sum.allocations += im->s.allocations;
        sum.allocated_bytes += im->s.allocated_bytes;
        sum.leaked_bytes += im->s.leaked_bytes;
        sum.leaked_blocks += im->s.leaked_blocks;
    }
    fprintf(out,
            "  tree totals: %s allocation calls, %s allocated, %s not freed in %s block(s)\n\n",
            mvz_fmt_count(sum.allocations, a, sizeof(a)),
            mvz_fmt_bytes(sum.allocated_bytes, b, sizeof(b)),
            mvz_fmt_bytes(sum.leaked_bytes, c, sizeof(c)),
            mvz_fmt_count(sum.leaked_blocks, d, sizeof(d)));
}

static void print_tree_json(const struct proc_tree *t, struct mvz_json *j)
{
    uint64_t calls = 0, bytes = 0, leaked = 0, blocks = 0;
    mvz_json_key(j, "tree");
    mvz_json_begin_object(j);
    mvz_json_key(j, "images");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < t->n; i++) {
        const struct image *im = &t->v[i];
        mvz_json_begin_object(j);
        mvz_json_put_uint(j, "pid", (uint64_t)im->pid);
        mvz_json_put_uint(j, "depth", (uint64_t)im->depth);
        mvz_json_key(j, "how");
        mvz_json_string(j, im->how == MVZ_CHILD_FORK   ? "fork"
                           : im->how == MVZ_CHILD_EXEC ? "exec"
                                                       : "first");
        mvz_json_put_string(j, "trace", im->trace);
        mvz_json_key(j, "readable");
        mvz_json_bool(j, im->readable);
        if (im->readable) {
            mvz_json_put_string(j, "command", im->command);
            mvz_json_put_string(j, "exit", im->exit);
            mvz_json_put_uint(j, "allocations", im->s.allocations);
            mvz_json_put_uint(j, "allocated_bytes", im->s.allocated_bytes);
            mvz_json_put_uint(j, "peak_bytes", im->s.peak_bytes);
            mvz_json_put_uint(j, "leaked_bytes", im->s.leaked_bytes);
            mvz_json_put_uint(j, "leaked_blocks", im->s.leaked_blocks);
            calls += im->s.allocations;
            bytes += im->s.allocated_bytes;
            leaked += im->s.leaked_bytes;
            blocks += im->s.leaked_blocks;
        } else {
            mvz_json_put_string(j, "error", im->err);
        }
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
    mvz_json_put_uint(j, "processes", processes(t));
    mvz_json_key(j, "cut");
    mvz_json_bool(j, t->cut);
    mvz_json_key(j, "totals");
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "allocations", calls);
    mvz_json_put_uint(j, "allocated_bytes", bytes);
    mvz_json_put_uint(j, "leaked_bytes", leaked);
    mvz_json_put_uint(j, "leaked_blocks", blocks);
    mvz_json_end_object(j);
    mvz_json_end_object(j);
}

void report_print_tree(const struct proc_tree *t, FILE *out, struct mvz_json *j)
{
    if (j)
        print_tree_json(t, j);
    else
        print_tree_text(t, out);
}

/* ---- memviz report DIR: the trees of a directory of traces ---- */

/* The parent_trace field of a trace's PROCESS record (its first record);
 * "" for a first image or when the trace cannot be read. */
static void parent_of(const char *path, char *parent, size_t cap)
{
    struct mvz_reader rd;
    struct mvz_record rec;
    char err[256];
    parent[0] = 0;
    if (mvz_reader_open(&rd, path, err, sizeof(err)) < 0)
        return;
    if (mvz_reader_next(&rd, &rec) == 1 && rec.kind == MVZ_REC_PROCESS) {
        struct mvz_cursor c = mvz_cursor_make(rec.data, rec.len);
        for (int i = 0; i < 7; i++) /* pid ... child_how */
            mvz_get_uvarint(&c);
        char *s = mvz_get_str(&c);
        if (s && !c.bad)
            snprintf(parent, cap, "%s", s);
        free(s);
    }
    mvz_reader_close(&rd);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The traces in dir (*.mvz), as absolute paths, sorted; NULL on error. */
static char **traces_in(const char *dir, size_t *n)
{
    char abs[PATH_MAX];
    DIR *d = realpath(dir, abs) ? opendir(abs) : NULL;
    char **v = NULL;
    size_t cap = 0;
    *n = 0;
    if (!d)
        return NULL;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".mvz"))
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            char **w = realloc(v, cap * sizeof(*v));
            if (!w)
                break;
            v = w;
        }
        if (asprintf(&v[*n], "%s/%s", abs, e->d_name) > 0)
            (*n)++;
    }
    closedir(d);
    if (!v)
        v = calloc(1, sizeof(*v));
    mvz_sort(v, *n, sizeof(*v), by_name);
    return v;
}

static int listed(char **v, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i], path))
            return 1;
    return 0;
}

int report_print_dir(const char *dir, int json, FILE *out)
{
    size_t n;
    char **v = traces_in(dir, &n);
    if (!v) {
        mvz_error("%s: cannot read the directory", dir);
        return 1;
    }
    if (n == 0) {
        mvz_error("%s: no traces (*.mvz) in it", dir);
        free(v);
        return 1;
    }
    /* The roots: traces whose parent is not in the directory. */
    struct proc_tree t = {0};
    for (size_t i = 0; i < n; i++) {
        char parent[PATH_MAX];
        parent_of(v[i], parent, sizeof(parent));
        if (!parent[0] || !listed(v, n, parent))
            add_image(&t, v[i], 0, 0, 0);
    }
    if (json) {
        struct mvz_json j;
        mvz_json_init(&j, out);
        mvz_json_begin_object(&j);
        mvz_json_put_uint(&j, "memviz_report_dir", 1);
        mvz_json_put_string(&j, "dir", dir);
        print_tree_json(&t, &j);
        mvz_json_end_object(&j);
        fputc('\n', out);
    } else {
        print_tree_text(&t, out);
    }
    tree_free(&t);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return 0;
}
