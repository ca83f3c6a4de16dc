/*
 * speedscope.c - `memviz export --format speedscope`: speedscope's JSON file
 * format (https://www.speedscope.app/file-format-schema.json).
 *
 * Frames (function, file, line of each symbolized frame, inlined ones
 * included) are shared; each cost is one "sampled" profile in which every
 * site (distinct stack) is one sample, outermost frame first, weighted by
 * the site's cost. The chosen cost (--cost) comes first and is the one
 * speedscope opens; costs that are zero everywhere are left out.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "export/export.h"
#include "util/json.h"
#include "util/strtab.h"
#include "util/sort.h"

/* Deep enough for the 1024-frame depth cap plus inlined frames. */
#define FRAMES_MAX 4096

struct frame_info {
    uint32_t name, file; /* ids in strs; file 0 = unknown */
    unsigned line;
};

struct stack_ref {
    uint64_t v[MVZ_COST_COUNT]; /* its costs: the site's, or the summed small ones' */
    size_t first, n;            /* its frame indexes: ids[first .. first + n), outermost first */
};

struct speedscope {
    const struct mvz_export *x;
    struct mvz_strtab strs;  /* function and file names */
    struct mvz_strtab keys;  /* "name/file/line" -> frame index + 1 */
    struct frame_info *info; /* by frame index */
    size_t info_cap;
    uint32_t *ids; /* frame indexes of all stacks */
    size_t nids, ids_cap;
    struct stack_ref *stacks; /* the sites with any cost */
    size_t nstacks;
    struct mvz_frame *frames;
};

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap * 2 : 1024;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(*v, cap2 * size);
    if (!p)
        return -1;
    *v = p;
    *cap = cap2;
    return 0;
}

/* Frames are shared by (function, file, line): the line tells the calls of
 * one function apart, as in `memviz report`. Returns the index, or -1. */
static long frame_index(struct speedscope *w, const struct mvz_frame *f)
{
    char buf[512];
    uint32_t name = mvz_strtab_intern(&w->strs, mvz_export_frame_name(f, buf, sizeof(buf)));
    uint32_t file = f->file && *f->file ? mvz_strtab_intern(&w->strs, f->file) : 0;
    char key[48];
    snprintf(key, sizeof(key), "%u/%u/%u", name, file, f->line);
    size_t before = w->keys.n;
    uint32_t id = mvz_strtab_intern(&w->keys, key);
    if (!name || (f->file && *f->file && !file) || !id)
        return -1;
    if (w->keys.n != before) {
        if (grow((void **)&w->info, &w->info_cap, id, sizeof(*w->info)) < 0)
            return -1;
        w->info[id - 1] = (struct frame_info){name, file, f->line};
    }
    return (long)id - 1;
}

static struct stack_ref *new_ref(struct speedscope *w, size_t n)
{
    if (grow((void **)&w->ids, &w->ids_cap, w->nids + n, sizeof(*w->ids)) < 0)
        return NULL;
    struct stack_ref *r = &w->stacks[w->nstacks++];
    *r = (struct stack_ref){.first = w->nids, .n = n};
    return r;
}

static int add_stack(struct speedscope *w, uint32_t stack)
{
    size_t n = mvz_export_stack(w->x, stack, w->frames, FRAMES_MAX);
    struct stack_ref *r = new_ref(w, n);
    if (!r)
        return -1;
    for (int c = 0; c < MVZ_COST_COUNT; c++)
        r->v[c] = mvz_site_cost(&w->x->p->sites[stack], (enum mvz_cost)c);
    for (size_t i = n; i-- > 0;) {
        long id = frame_index(w, &w->frames[i]);
        if (id < 0)
            return -1;
        w->ids[w->nids++] = (uint32_t)id;
    }
    return 0;
}

static int any_cost(const struct mvz_site *s)
{
    for (int c = 0; c < MVZ_COST_COUNT; c++)
        if (mvz_site_cost(s, (enum mvz_cost)c))
            return 1;
    return 0;
}

/* Sites are indexed by stack id; the unused ones cost nothing. The sites
 * under --min-percent of the chosen cost become one stack, with all their
 * costs, so that every profile keeps its total. */
static int collect_stacks(struct speedscope *w)
{
    const struct mvz_profile *p = w->x->p;
    uint64_t other[MVZ_COST_COUNT] = {0};
    int any_other = 0;
    w->stacks = malloc((p->sites_cap + 1) * sizeof(*w->stacks));
    if (!w->stacks)
        return -1;
    for (size_t i = 0; i < p->sites_cap; i++) {
        if (!any_cost(&p->sites[i]))
            continue;
        if (!mvz_export_site_shown(w->x, &p->sites[i], w->x->cost)) {
            for (int c = 0; c < MVZ_COST_COUNT; c++)
                other[c] += mvz_site_cost(&p->sites[i], (enum mvz_cost)c);
            any_other = 1;
        } else if (add_stack(w, (uint32_t)i) < 0) {
            return -1;
        }
    }
    if (!any_other)
        return 0;
    struct mvz_frame f = {.function = MVZ_EXPORT_OTHER_SITES};
    struct stack_ref *r = new_ref(w, 1);
    long id = r ? frame_index(w, &f) : -1;
    if (id < 0)
        return -1;
    memcpy(r->v, other, sizeof(other));
    w->ids[w->nids++] = (uint32_t)id;
    return 0;
}

/* Samples are ordered by their frames, outermost first, so that speedscope's
 * time-order view shows the same stacks side by side. */
static const uint32_t *sort_ids;
static int by_frames(const void *a, const void *b)
{
    const struct stack_ref *x = a, *y = b;
    for (size_t i = 0; i < x->n && i < y->n; i++)
        if (sort_ids[x->first + i] != sort_ids[y->first + i])
            return sort_ids[x->first + i] < sort_ids[y->first + i] ? -1 : 1;
    return x->n < y->n ? -1 : x->n > y->n;
}

static void write_frames(const struct speedscope *w, struct mvz_json *j)
{
    mvz_json_key(j, "shared");
    mvz_json_begin_object(j);
    mvz_json_key(j, "frames");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < w->keys.n; i++) {
        const struct frame_info *f = &w->info[i];
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "name", mvz_strtab_get(&w->strs, f->name));
        if (f->file) {
            mvz_json_put_string(j, "file", mvz_strtab_get(&w->strs, f->file));
        }
        if (f->line) {
            mvz_json_put_uint(j, "line", f->line);
        }
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
    mvz_json_end_object(j);
}

static const char *cost_title(enum mvz_cost c)
{
    switch (c) {
    case MVZ_COST_PEAK:
        return "peak: bytes live at the peak";
    case MVZ_COST_LEAKED:
        return "leaked: bytes not freed at the end (still live)";
    case MVZ_COST_ALLOCATIONS:
        return "allocations: allocation calls";
    case MVZ_COST_BYTES:
        return "bytes: bytes allocated";
    default:
        return "temporary: temporary allocations";
    }
}

static uint64_t cost_total(const struct speedscope *w, enum mvz_cost c)
{
    uint64_t total = 0;
    for (size_t i = 0; i < w->nstacks; i++)
        total += w->stacks[i].v[c];
    return total;
}

static void write_samples(const struct speedscope *w, struct mvz_json *j, enum mvz_cost c)
{
    mvz_json_key(j, "samples");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < w->nstacks; i++) {
        const struct stack_ref *r = &w->stacks[i];
        if (!r->v[c])
            continue;
        mvz_json_begin_array(j);
        for (size_t k = 0; k < r->n; k++)
            mvz_json_uint(j, w->ids[r->first + k]);
        mvz_json_end_array(j);
    }
    mvz_json_end_array(j);
    mvz_json_key(j, "weights");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < w->nstacks; i++) {
        uint64_t v = w->stacks[i].v[c];
        if (v)
            mvz_json_uint(j, v);
    }
    mvz_json_end_array(j);
}

/* speedscope sizes the profile as endValue - startValue: the sum of the
 * weights. */
static void write_profile(const struct speedscope *w, struct mvz_json *j, enum mvz_cost c)
{
    int bytes = c == MVZ_COST_PEAK || c == MVZ_COST_LEAKED || c == MVZ_COST_BYTES;
    mvz_json_begin_object(j);
    mvz_json_put_string(j, "type", "sampled");
    mvz_json_key(j, "name");
    if (w->x->p->trace.sample_bytes) { /* memviz run --sample */
        char title[200];
        snprintf(title, sizeof(title), "%s (estimates: sampled)", cost_title(c));
        mvz_json_string(j, title);
    } else {
        mvz_json_string(j, cost_title(c));
    }
    mvz_json_put_string(j, "unit", bytes ? "bytes" : "none");
    mvz_json_put_uint(j, "startValue", 0);
    mvz_json_put_uint(j, "endValue", cost_total(w, c));
    write_samples(w, j, c);
    mvz_json_end_object(j);
}

static void write_file(const struct speedscope *w)
{
    const struct mvz_export *x = w->x;
    struct mvz_json j;
    mvz_json_init(&j, x->out);
    mvz_export_speedscope_head(&j, x);
    write_frames(w, &j);
    mvz_json_key(&j, "profiles");
    mvz_json_begin_array(&j);
    write_profile(w, &j, x->cost);
    for (int c = 0; c < MVZ_COST_COUNT; c++)
        if (c != (int)x->cost && cost_total(w, (enum mvz_cost)c))
            write_profile(w, &j, (enum mvz_cost)c);
    mvz_json_end_array(&j);
    mvz_json_end_object(&j);
}

int mvz_export_speedscope(struct mvz_export *x)
{
    struct speedscope w = {.x = x};
    int rc = -1;
    w.frames = malloc(FRAMES_MAX * sizeof(*w.frames));
    if (w.frames && collect_stacks(&w) == 0) {
        sort_ids = w.ids;
        mvz_sort(w.stacks, w.nstacks, sizeof(*w.stacks), by_frames);
        write_file(&w);
        rc = 0;
    } else {
        mvz_error("export: out of memory");
    }
    mvz_strtab_free(&w.strs);
    mvz_strtab_free(&w.keys);
    free(w.info);
    free(w.ids);
    free(w.stacks);
    free(w.frames);
    return rc;
}
