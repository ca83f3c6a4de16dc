/*
 * massif.c - `memviz export --format massif`: Valgrind Massif's output
 * format (massif.out), for ms_print and massif-visualizer.
 *
 * Snapshots: the requested bytes live (mem_heap_B) at evenly spaced times
 * of the window, from the timeline replay (src/analysis/timeline.h), plus
 * one detailed snapshot at the window's peak (heap_tree=peak) holding
 * Massif's tree of allocation points: the live bytes at the peak of every
 * site, merged by call stack from the innermost frame outwards. memviz does
 * not see allocator overhead or stacks, so mem_heap_extra_B and
 * mem_stacks_B are 0. Times are milliseconds since the agent started
 * (time_unit: ms) with three decimals: Massif writes whole milliseconds, but
 * a run shorter than a few hundred of them would then draw as one column;
 * ms_print and massif-visualizer read the decimals.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/timeline.h"
#include "cmd/cmd.h"
#include "export/export.h"
#include "util/sort.h"

/* Massif keeps at most 100 snapshots by default; with the first one (at 0)
 * and the peak this stays within that. */
#define MASSIF_POINTS 98
#define MAX_FRAMES 2048

/* ---- the tree of allocation points at the peak ---- */

/* One node per distinct stack prefix (innermost frame first). */
struct node {
    struct mvz_frame f; /* unused in the root */
    uint64_t bytes;     /* live at the peak under this prefix */
    uint32_t first_child, next_sibling, nchildren;
};

struct tree {
    struct node *nodes;
    size_t n, cap;
    uint32_t *slots; /* hash of (parent, frame) -> node index + 1 */
    size_t nslots;
    uint32_t *parent_of; /* node -> parent, for the hash comparisons */
};

static uint64_t str_hash(const char *s, uint64_t h)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static uint64_t frame_hash(uint32_t parent, const struct mvz_frame *f)
{
    uint64_t h = 0xcbf29ce484222325ull ^ parent;
    h = (h ^ f->address) * 0x100000001b3ull;
    h = (h ^ ((uint64_t)f->line << 1 | (unsigned)f->inlined)) * 0x100000001b3ull;
    h = str_hash(f->function, h);
    h = str_hash(f->file, h);
    return str_hash(f->module, h);
}

static int str_eq(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Frames are the same allocation point when the return address and what
 * it symbolizes to agree; the strings are compared, not their pointers,
 * because each generation of the trace has its own symbolizer. */
static int frame_eq(const struct mvz_frame *a, const struct mvz_frame *b)
{
    return a->address == b->address && a->line == b->line && a->inlined == b->inlined &&
           str_eq(a->function, b->function) && str_eq(a->file, b->file) &&
           str_eq(a->module, b->module);
}

static int tree_rehash(struct tree *t, size_t nslots)
{
    uint32_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t i = 1; i < t->n; i++) {
        size_t k = frame_hash(t->parent_of[i], &t->nodes[i].f) & (nslots - 1);
        while (slots[k])
            k = (k + 1) & (nslots - 1);
        slots[k] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

static int tree_grow(struct tree *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    struct node *nodes = realloc(t->nodes, cap * sizeof(*nodes));
    if (!nodes)
        return -1;
    t->nodes = nodes;
    uint32_t *parents = realloc(t->parent_of, cap * sizeof(*parents));
    if (!parents)
        return -1;
    t->parent_of = parents;
    t->cap = cap;
    return 0;
}

static int tree_init(struct tree *t)
{
    memset(t, 0, sizeof(*t));
    if (tree_grow(t) < 0 || tree_rehash(t, 2048) < 0)
        return -1;
    memset(&t->nodes[0], 0, sizeof(t->nodes[0]));
    t->parent_of[0] = 0;
    t->n = 1;
    return 0;
}

static void tree_free(struct tree *t)
{
    free(t->nodes);
    free(t->slots);
    free(t->parent_of);
    memset(t, 0, sizeof(*t));
}

/* The child of `parent` for frame f, created when missing; 0 when out of
 * memory (0 is the root, never a child). */
static uint32_t tree_child(struct tree *t, uint32_t parent, const struct mvz_frame *f)
{
    size_t k = frame_hash(parent, f) & (t->nslots - 1);
    for (; t->slots[k]; k = (k + 1) & (t->nslots - 1)) {
        uint32_t i = t->slots[k] - 1;
        if (t->parent_of[i] == parent && frame_eq(&t->nodes[i].f, f))
            return i;
    }
    if ((t->n == t->cap && tree_grow(t) < 0) || t->n >= UINT32_MAX - 1)
        return 0;
    uint32_t i = (uint32_t)t->n++;
    struct node *c = &t->nodes[i];
    memset(c, 0, sizeof(*c));
    c->f = *f;
    t->parent_of[i] = parent;
    c->next_sibling = t->nodes[parent].first_child;
    t->nodes[parent].first_child = i;
    t->nodes[parent].nchildren++;
    t->slots[k] = i + 1;
    /* at most half full keeps probes short */
    if (t->n * 2 > t->nslots && tree_rehash(t, t->nslots * 2) < 0)
        return 0;
    return i;
}

/* Adds bytes along frames[0..n): as Massif draws it, the allocating
 * function under the root, its callers below it. */
static int tree_add_frames(struct tree *t, const struct mvz_frame *frames, size_t n, uint64_t bytes)
{
    uint32_t cur = 0;
    t->nodes[0].bytes += bytes;
    for (size_t k = 0; k < n; k++) {
        if (!(cur = tree_child(t, cur, &frames[k])))
            return -1;
        t->nodes[cur].bytes += bytes;
    }
    return 0;
}

/* Every site live at the peak, whether or not it allocated in the window:
 * their at_peak_bytes add up to the peak. Stacks are trimmed as the export
 * options say; the sites under --min-percent of the peak make one. */
static int tree_build(struct tree *t, const struct mvz_export *x)
{
    struct mvz_frame *frames = malloc(MAX_FRAMES * sizeof(*frames));
    int rc = frames && tree_init(t) == 0 ? 0 : -1;
    uint64_t other = 0;
    for (size_t i = 0; rc == 0 && i < x->p->sites_cap; i++) {
        const struct mvz_site *s = &x->p->sites[i];
        if (!s->at_peak_bytes)
            continue;
        if (!mvz_export_site_shown(x, s, MVZ_COST_PEAK)) {
            other += s->at_peak_bytes;
            continue;
        }
        size_t n = mvz_export_stack(x, (uint32_t)i, frames, MAX_FRAMES);
        rc = tree_add_frames(t, frames, n, s->at_peak_bytes);
    }
    if (rc == 0 && other) {
        frames[0] = (struct mvz_frame){.function = MVZ_EXPORT_OTHER_SITES};
        rc = tree_add_frames(t, frames, 1, other);
    }
    free(frames);
    return rc;
}

/* ---- writing the tree ---- */

/* Names and paths must not break the line-based format. */
static void put_clean(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
}

/* "0x<addr>: <function> (<file>:<line>)", or "(in <module>)" without line
 * information, as Valgrind describes a code address. */
static void put_frame(FILE *out, const struct mvz_frame *f)
{
    fprintf(out, "0x%" PRIX64 ": ", f->address);
    put_clean(out, strcmp(f->function, "??") ? f->function : "???");
    if (f->file) {
        fputs(" (", out);
        put_clean(out, f->file);
        fprintf(out, ":%u)", f->line);
    } else if (f->module) {
        fputs(" (in ", out);
        put_clean(out, f->module);
        fputc(')', out);
    }
}

/* A child entry: a node, or (node 0) the bytes of stacks that end at the
 * parent while others go on, so that a node's bytes are its children's sum. */
struct entry {
    uint32_t node;
    uint64_t bytes;
};

static int by_bytes_desc(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Massif's threshold: children under 1% of the snapshot's total are
 * summarized in one line. */
static int significant(uint64_t bytes, uint64_t total)
{
    return (long double)bytes * 100 >= (long double)total;
}

static struct entry *children_of(const struct tree *t, uint32_t i, size_t *n)
{
    const struct node *nd = &t->nodes[i];
    struct entry *e = malloc((nd->nchildren + 1) * sizeof(*e));
    uint64_t sum = 0;
    *n = 0;
    if (!e)
        return NULL;
    for (uint32_t c = nd->first_child; c; c = t->nodes[c].next_sibling) {
        e[*n].node = c;
        e[(*n)++].bytes = t->nodes[c].bytes;
        sum += t->nodes[c].bytes;
    }
    if (*n && sum < nd->bytes) {
        e[*n].node = 0;
        e[(*n)++].bytes = nd->bytes - sum;
    }
    mvz_sort(e, *n, sizeof(*e), by_bytes_desc);
    return e;
}

static void indent(FILE *out, unsigned depth)
{
    for (unsigned d = 0; d < depth; d++)
        fputc(' ', out);
}

static void below_threshold(FILE *out, unsigned depth, uint64_t bytes, size_t places)
{
    indent(out, depth);
    if (places == 1)
        fprintf(out, "n0: %" PRIu64 " in 1 place, below massif's threshold (1.00%%)\n", bytes);
    else
        fprintf(out, "n0: %" PRIu64 " in %zu places, all below massif's threshold (1.00%%)\n",
                bytes, places);
}

static int write_node(FILE *out, const struct tree *t, uint32_t i, unsigned depth, uint64_t total)
{
    size_t n, nsig = 0, ninsig = 0;
    uint64_t insig = 0;
    struct entry *e = children_of(t, i, &n);
    if (!e)
        return -1;
    for (size_t k = 0; k < n; k++)
        if (significant(e[k].bytes, total))
            nsig++;
        else
            ninsig++, insig += e[k].bytes;
    indent(out, depth);
    fprintf(out, "n%zu: %" PRIu64 " ", nsig + (ninsig > 0), t->nodes[i].bytes);
    if (i == 0)
        fputs("(heap allocation functions) malloc/new/new[], --alloc-fns, etc.", out);
    else
        put_frame(out, &t->nodes[i].f);
    fputc('\n', out);
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < nsig; k++) {
        if (e[k].node)
            rc = write_node(out, t, e[k].node, depth + 1, total);
        else {
            indent(out, depth + 1);
            fprintf(out, "n0: %" PRIu64 " (the recorded stack ends here)\n", e[k].bytes);
        }
    }
    if (ninsig)
        below_threshold(out, depth + 1, insig, ninsig);
    free(e);
    return rc;
}

/* ---- snapshots ---- */

struct snapshot {
    uint64_t ts_ns, heap;
    int peak;
};

/* The timeline's points in time order with the peak merged in before the
 * first point at or after it; a run seen from its start begins with an
 * empty heap at time 0, as Massif's first snapshot does. */
static struct snapshot *snapshots(const struct mvz_export *x, const struct mvz_timeline *tl,
                                  size_t *n)
{
    struct snapshot *v = calloc(tl->npoints + 2, sizeof(*v));
    int peak_done = 0;
    *n = 0;
    if (!v)
        return NULL;
    if (tl->from_ns == 0 && x->peak_time_ns > 0)
        v[(*n)++] = (struct snapshot){0, 0, 0};
    for (size_t i = 0; i < tl->npoints; i++) {
        if (!peak_done && x->peak_time_ns <= tl->t[i]) {
            v[(*n)++] = (struct snapshot){x->peak_time_ns, x->peak_bytes, 1};
            peak_done = 1;
        }
        v[(*n)++] = (struct snapshot){tl->t[i], tl->heap[i], 0};
    }
    if (!peak_done)
        v[(*n)++] = (struct snapshot){x->peak_time_ns, x->peak_bytes, 1};
    return v;
}

static void write_header(const struct mvz_export *x, const struct mvz_timeline *tl)
{
    const struct mvz_trace *t = &x->p->trace;
    fprintf(x->out, "desc: memviz export of ");
    put_clean(x->out, x->trace_path);
    fprintf(x->out, ", %.3f s to %.3f s; mem_heap_B = bytes requested and not released%s\n",
            tl->from_ns / 1e9, tl->to_ns / 1e9,
            x->nimages ? "; --children: the images' heaps summed on one clock, the peak's "
                         "tree is each image at its own peak"
                       : "");
    fputs("cmd:", x->out);
    for (size_t i = 0; i < t->argc; i++) {
        fputc(' ', x->out);
        put_clean(x->out, t->argv[i]);
    }
    if (!t->argc)
        fputs(" (unknown)", x->out);
    fputs("\ntime_unit: ms\n", x->out);
}

static int write_snapshot(const struct mvz_export *x, size_t num, const struct snapshot *s,
                          const struct tree *t)
{
    fprintf(x->out,
            "#-----------\nsnapshot=%zu\n#-----------\ntime=%" PRIu64 ".%03" PRIu64
            "\nmem_heap_B=%" PRIu64 "\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=%s\n",
            num, s->ts_ns / 1000000, s->ts_ns / 1000 % 1000, s->heap, s->peak ? "peak" : "empty");
    return s->peak ? write_node(x->out, t, 0, 0, x->p->sum.peak_bytes) : 0;
}

static int write_massif(const struct mvz_export *x, const struct mvz_timeline *tl)
{
    struct tree t = {0};
    size_t n;
    struct snapshot *v = snapshots(x, tl, &n);
    int rc = v && tree_build(&t, x) == 0 ? 0 : -1;
    if (rc == 0) {
        write_header(x, tl);
        for (size_t i = 0; rc == 0 && i < n; i++)
            rc = write_snapshot(x, i, &v[i], &t);
    }
    if (rc < 0)
        mvz_error("out of memory writing the massif output");
    tree_free(&t);
    free(v);
    return rc;
}

int mvz_export_massif(struct mvz_export *x)
{
    struct mvz_timeline tl;
    if (mvz_export_heap_points(x, MASSIF_POINTS, &tl) < 0)
        return -1;
    int rc = write_massif(x, &tl);
    mvz_timeline_free(&tl);
    return rc;
}
