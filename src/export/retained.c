/*
 * retained.c - `memviz export --cost retained`: a heap snapshot's dominator
 * tree as a flame graph, in the collapsed and speedscope formats.
 *
 * A block's stack is its path down the dominator tree: the root that
 * retains it (a global variable, a thread's stack), then each block that
 * dominates it, named by its allocation site (the innermost frame of its
 * allocation stack), then the block's own site; its value is the block's
 * size. A block several roots reach, and none dominates, sits under
 * "[held by more than one root]". So a frame's width is what freeing its blocks would free: the
 * retained size. A run of dominators from one site (a list's nodes) is one
 * frame, or a list of a million nodes would be a million frames deep.
 * Blocks no root reaches sit under "[not reachable from a root]", by site.
 *
 * Invariant: a trie node's total (its own value and its children's) is
 * the retained bytes of the blocks it stands for.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dominators.h"
#include "cmd/cmd.h"
#include "export/export.h"
#include "util/fmt.h"
#include "util/json.h"
#include "util/strtab.h"

#define DEFAULT_DEPTH 128
#define NO_LABEL UINT32_MAX

/* One frame of the flame graph under its parent. Node 0 is the top. */
struct tnode {
    uint32_t parent, name; /* name: id in names */
    uint32_t depth;
    uint64_t self;
};

struct trie {
    struct tnode *v;
    size_t n, cap;
    uint32_t *slots; /* open addressing on (parent, name): node + 1, 0 = empty */
    size_t nslots;
    struct mvz_strtab names;
};

struct retained {
    const struct mvz_export *x;
    const struct mvz_export_retained *rx;
    struct trie t;
    uint32_t *node;  /* per graph node: its trie node */
    uint32_t *label; /* per stack id: the site's name id, NO_LABEL until named */
    uint32_t nstacks;
    unsigned depth;
    struct mvz_frame *frames;
};

static size_t slot_of(const struct trie *t, uint32_t parent, uint32_t name)
{
    uint64_t h = ((uint64_t)parent << 32 | name) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (t->nslots - 1);
}

static int rehash(struct trie *t)
{
    size_t n = t->nslots ? 2 * t->nslots : 1024;
    uint32_t *s = calloc(n, sizeof(*s));
    if (!s)
        return -1;
    free(t->slots);
    t->slots = s;
    t->nslots = n;
    for (size_t i = 1; i < t->n; i++) {
        size_t k = slot_of(t, t->v[i].parent, t->v[i].name);
        while (t->slots[k])
            k = (k + 1) & (n - 1);
        t->slots[k] = (uint32_t)i + 1;
    }
    return 0;
}

/* The child of parent named name, made on first sight; 0 when out of memory. */
static uint32_t child(struct trie *t, uint32_t parent, uint32_t name)
{
    if (2 * (t->n + 1) > t->nslots && rehash(t) < 0)
        return 0;
    size_t k = slot_of(t, parent, name);
    for (; t->slots[k]; k = (k + 1) & (t->nslots - 1)) {
        const struct tnode *c = &t->v[t->slots[k] - 1];
        if (c->parent == parent && c->name == name)
            return t->slots[k] - 1;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        struct tnode *v = realloc(t->v, cap * sizeof(*v));
        if (!v)
            return 0;
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n] = (struct tnode){parent, name, t->v[parent].depth + 1, 0};
    t->slots[k] = (uint32_t)t->n + 1;
    return (uint32_t)t->n++;
}

/* frame f as "function (file:line)", or the function alone. */
static void frame_label(const struct mvz_frame *f, char *out, size_t cap)
{
    char buf[512];
    const char *name = mvz_export_frame_name(f, buf, sizeof(buf));
    if (f->file && f->line)
        snprintf(out, cap, "%s (%s:%u)", name, mvz_base_name(f->file), f->line);
    else
        snprintf(out, cap, "%s", name);
}

/* The name of an allocation site: its two innermost frames, "caller:line
 * > callee (file:line)", since the innermost alone is often a wrapper
 * (xmalloc, a container's grow) that every site shares, and the lines
 * tell apart the calls of one function. */
static uint32_t site_label(struct retained *w, uint32_t stack)
{
    if (stack < w->nstacks && w->label[stack] != NO_LABEL)
        return w->label[stack];
    size_t n = mvz_symbols_stack(w->x->sym, stack, w->frames, 64);
    char name[1200], inner[600], buf[512];
    if (!n) {
        snprintf(name, sizeof(name), "??");
    } else {
        frame_label(&w->frames[0], inner, sizeof(inner));
        const struct mvz_frame *up = &w->frames[1];
        if (n == 1)
            snprintf(name, sizeof(name), "%s", inner);
        else if (up->line)
            snprintf(name, sizeof(name), "%s:%u > %s", mvz_export_frame_name(up, buf, sizeof(buf)),
                     up->line, inner);
        else
            snprintf(name, sizeof(name), "%s > %s", mvz_export_frame_name(up, buf, sizeof(buf)),
                     inner);
    }
    uint32_t id = mvz_strtab_intern(&w->t.names, name);
    if (id && stack < w->nstacks)
        w->label[stack] = id;
    return id ? id : NO_LABEL;
}

/* The trie node of block b, whose immediate dominator's node is up. */
static uint32_t block_node(struct retained *w, uint32_t b, uint32_t up, int up_is_block,
                           uint32_t up_stack)
{
    const struct mvz_snapshot *s = w->rx->snap;
    uint32_t name = site_label(w, s->blocks[b].stack);
    if (name == NO_LABEL)
        return 0;
    if (up_is_block && site_label(w, up_stack) == name)
        return up; /* a run of one site is one frame */
    if (w->t.v[up].depth >= w->depth) {
        uint32_t deeper = mvz_strtab_intern(&w->t.names, "[deeper dominators]");
        if (!deeper)
            return 0;
        return w->t.v[up].name == deeper ? up : child(&w->t, up, deeper);
    }
    return child(&w->t, up, name);
}

static int build(struct retained *w)
{
    const struct mvz_retain *r = w->rx->r;
    const struct mvz_snapshot *s = w->rx->snap;
    w->t.v = calloc(1024, sizeof(*w->t.v));
    w->t.cap = 1024;
    w->t.n = 1; /* the top */
    w->node = malloc(((size_t)r->vroot + 1) * sizeof(*w->node));
    if (!w->t.v || !w->node)
        return -1;
    w->node[r->vroot] = 0;
    for (uint32_t i = 0; i < r->nreached; i++) {
        uint32_t v = r->order[i], d = r->idom[v];
        if (v == r->vroot)
            continue;
        uint32_t at;
        if (v >= r->nblocks) { /* a root */
            char label[600];
            mvz_root_label(&w->rx->g->roots[v - r->nblocks], label, sizeof(label));
            uint32_t name = mvz_strtab_intern(&w->t.names, label);
            at = name ? child(&w->t, 0, name) : 0;
        } else {
            int up_block = d < r->nblocks;
            uint32_t up = w->node[d];
            if (d == r->vroot) { /* no one root dominates it */
                uint32_t name = mvz_strtab_intern(&w->t.names, "[held by more than one root]");
                up = name ? child(&w->t, 0, name) : 0;
            }
            at = up ? block_node(w, v, up, up_block, up_block ? s->blocks[d].stack : 0) : 0;
            if (at)
                w->t.v[at].self += s->blocks[v].size;
        }
        if (!at)
            return -1;
        w->node[v] = at;
    }
    return 0;
}

/* Blocks no root reaches: under one frame, by their own site. */
static int add_unreached(struct retained *w)
{
    const struct mvz_retain *r = w->rx->r;
    const struct mvz_snapshot *s = w->rx->snap;
    uint32_t top = 0;
    for (uint32_t b = 0; b < r->nblocks; b++) {
        if (r->idom[b] != MVZ_DOM_NONE)
            continue;
        if (!top) {
            uint32_t name = mvz_strtab_intern(&w->t.names, "[not reachable from a root]");
            if (!name || !(top = child(&w->t, 0, name)))
                return -1;
        }
        uint32_t name = site_label(w, s->blocks[b].stack);
        uint32_t at = name == NO_LABEL ? 0 : child(&w->t, top, name);
        if (!at)
            return -1;
        w->t.v[at].self += s->blocks[b].size;
    }
    return 0;
}

/* ---- collapsed ---- */
static void write_path(const struct retained *w, FILE *out, uint32_t n)
{
    if (!n)
        return;
    if (w->t.v[n].parent) {
        write_path(w, out, w->t.v[n].parent);
        fputc(';', out);
    }
    for (const char *c = mvz_strtab_get(&w->t.names, w->t.v[n].name); *c; c++)
        fputc(*c == ';' ? ':' : (unsigned char)*c < 0x20 ? ' ' : *c, out);
}

static void write_collapsed(const struct retained *w, FILE *out)
{
    for (size_t i = 1; i < w->t.n; i++)
        if (w->t.v[i].self) {
            write_path(w, out, (uint32_t)i);
            fprintf(out, " %" PRIu64 "\n", w->t.v[i].self);
        }
}

/* ---- speedscope ---- */
static void write_sample(const struct retained *w, struct mvz_json *j, uint32_t n)
{
    if (!n)
        return;
    write_sample(w, j, w->t.v[n].parent);
    mvz_json_uint(j, w->t.v[n].name - 1);
}

static void write_speedscope(const struct retained *w, FILE *out)
{
    struct mvz_json j;
    uint64_t total = 0;
    for (size_t i = 1; i < w->t.n; i++)
        total += w->t.v[i].self;
    mvz_json_init(&j, out);
    mvz_export_speedscope_head(&j, w->x);
    mvz_json_key(&j, "shared");
    mvz_json_begin_object(&j);
    mvz_json_key(&j, "frames");
    mvz_json_begin_array(&j);
    for (size_t i = 1; i <= w->t.names.n; i++) {
        mvz_json_begin_object(&j);
        mvz_json_put_string(&j, "name", mvz_strtab_get(&w->t.names, (uint32_t)i));
        mvz_json_end_object(&j);
    }
    mvz_json_end_array(&j);
    mvz_json_end_object(&j);
    mvz_json_key(&j, "profiles");
    mvz_json_begin_array(&j);
    mvz_json_begin_object(&j);
    mvz_json_put_string(&j, "type", "sampled");
    mvz_json_key(&j, "name");
    char title[300];
    snprintf(title, sizeof(title), "retained: what freeing each would free (snapshot \"%s\")",
             w->rx->snap->info.name ? w->rx->snap->info.name : "");
    mvz_json_string(&j, title);
    mvz_json_put_string(&j, "unit", "bytes");
    mvz_json_put_uint(&j, "startValue", 0);
    mvz_json_put_uint(&j, "endValue", total);
    mvz_json_key(&j, "samples");
    mvz_json_begin_array(&j);
    for (size_t i = 1; i < w->t.n; i++)
        if (w->t.v[i].self) {
            mvz_json_begin_array(&j);
            write_sample(w, &j, (uint32_t)i);
            mvz_json_end_array(&j);
        }
    mvz_json_end_array(&j);
    mvz_json_key(&j, "weights");
    mvz_json_begin_array(&j);
    for (size_t i = 1; i < w->t.n; i++)
        if (w->t.v[i].self)
            mvz_json_uint(&j, w->t.v[i].self);
    mvz_json_end_array(&j);
    mvz_json_end_object(&j);
    mvz_json_end_array(&j);
    mvz_json_end_object(&j);
    fputc('\n', out);
}

int mvz_export_retained(struct mvz_export *x, const struct mvz_export_retained *rx, int speedscope)
{
    struct retained w = {.x = x, .rx = rx, .depth = x->depth ? x->depth : DEFAULT_DEPTH};
    for (size_t b = 0; b < rx->snap->nblocks; b++)
        w.nstacks =
            rx->snap->blocks[b].stack + 1 > w.nstacks ? rx->snap->blocks[b].stack + 1 : w.nstacks;
    w.label = malloc((w.nstacks ? w.nstacks : 1) * sizeof(*w.label));
    w.frames = malloc(64 * sizeof(*w.frames));
    int rc = -1;
    if (w.label && w.frames) {
        memset(w.label, 0xff, (w.nstacks ? w.nstacks : 1) * sizeof(*w.label));
        if (build(&w) == 0 && add_unreached(&w) == 0) {
            if (speedscope)
                write_speedscope(&w, x->out);
            else
                write_collapsed(&w, x->out);
            rc = 0;
        }
    }
    if (rc < 0)
        mvz_error("export: out of memory");
    mvz_strtab_free(&w.t.names);
    free(w.t.v);
    free(w.t.slots);
    free(w.node);
    free(w.label);
    free(w.frames);
    return rc;
}
