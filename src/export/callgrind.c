/*
 * callgrind.c - `memviz export --format callgrind`: allocation costs in
 * the callgrind profile format (Valgrind's "Callgrind Format
 * Specification", version 1), for callgrind_annotate and KCachegrind.
 *
 * Events, per site of the window (docs/METRICS.md): Allocations (calls),
 * AllocBytes (bytes allocated), PeakBytes (live at the window's peak),
 * LeakedBytes and LeakedBlocks (still live at its end), Temporary.
 * Positions are source lines. A function is (object, source file, name).
 *
 * A site's costs are the self cost of its innermost frame, at that frame's
 * line. Every caller->callee pair along its stack becomes a call
 * ("calls=" line, at the caller's line) whose cost is the callee's
 * inclusive cost. Readers take a called function's inclusive cost to be
 * the sum of the calls into it, so a function that occurs more than once
 * on one stack (recursion) gets the site's cost on one call only, the
 * outermost one into it; the others carry zero, keeping the edge without
 * counting the site twice.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "export/export.h"
#include "util/strtab.h"
#include "util/sort.h"

#define MAX_FRAMES 2048

enum { EV_ALLOCS, EV_BYTES, EV_PEAK, EV_LEAKED, EV_LEAKED_BLOCKS, EV_TEMPORARY, NEV };

static const char *const event_names[NEV][2] = {
    {"Allocations", "allocation calls"},
    {"AllocBytes", "bytes allocated"},
    {"PeakBytes", "bytes live at the heap peak"},
    {"LeakedBytes", "bytes still live at the end"},
    {"LeakedBlocks", "blocks still live at the end"},
    {"Temporary", "temporary allocations"},
};

/* ---- interning: strings and triples of ids, ids start at 1 ---- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    return (h ^ v) * 0x100000001b3ull;
}

struct tripletab {
    uint32_t (*k)[3]; /* k[id - 1] */
    size_t n, cap;
    uint32_t *slots;
    size_t nslots;
};

/* Doubles slots (an array of ids hashed by hash(id)) when half full. */
static int slots_fit(uint32_t **slots, size_t *nslots, size_t n, const void *tab,
                     uint64_t (*hash)(const void *, uint32_t))
{
    if ((n + 1) * 2 <= *nslots)
        return 0;
    size_t cap = *nslots ? *nslots * 2 : 1024;
    uint32_t *v = calloc(cap, sizeof(*v));
    if (!v)
        return -1;
    for (uint32_t id = 1; id <= n; id++) {
        size_t k = hash(tab, id) & (cap - 1);
        while (v[k])
            k = (k + 1) & (cap - 1);
        v[k] = id;
    }
    free(*slots);
    *slots = v;
    *nslots = cap;
    return 0;
}

static uint64_t triple_hash3(uint32_t a, uint32_t b, uint32_t c)
{
    return mix(mix(mix(0xcbf29ce484222325ull, a), b), c) * 0x9E3779B97F4A7C15ull >> 7;
}

static uint64_t tripletab_hash(const void *tab, uint32_t id)
{
    const uint32_t *k = ((const struct tripletab *)tab)->k[id - 1];
    return triple_hash3(k[0], k[1], k[2]);
}

/* The id of (a, b, c), added on first sight; 0 when out of memory. */
static uint32_t triple_id(struct tripletab *t, uint32_t a, uint32_t b, uint32_t c)
{
    if (slots_fit(&t->slots, &t->nslots, t->n, t, tripletab_hash) < 0)
        return 0;
    size_t k = triple_hash3(a, b, c) & (t->nslots - 1);
    for (; t->slots[k]; k = (k + 1) & (t->nslots - 1)) {
        const uint32_t *e = t->k[t->slots[k] - 1];
        if (e[0] == a && e[1] == b && e[2] == c)
            return t->slots[k];
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        uint32_t(*v)[3] = realloc(t->k, cap * sizeof(*v));
        if (!v)
            return 0;
        t->k = v;
        t->cap = cap;
    }
    t->k[t->n][0] = a;
    t->k[t->n][1] = b;
    t->k[t->n][2] = c;
    t->slots[k] = (uint32_t)++t->n;
    return (uint32_t)t->n;
}

static void tripletab_free(struct tripletab *t)
{
    free(t->k);
    free(t->slots);
}

/* ---- the profile being built ---- */

/* A cost at one line of a function: self cost (callee 0) or the
 * inclusive cost of the calls from that line to callee. */
struct cost {
    uint64_t ev[NEV];
    uint64_t calls;
};

struct cg {
    struct mvz_strtab obs, files, names;
    struct tripletab fns;  /* (ob, file, name) -> function id */
    unsigned *first_line;  /* by function id - 1: lowest line seen, 0 unknown */
    uint64_t *seen;        /* by function id - 1: stack last seen on (recursion) */
    struct tripletab keys; /* (function, line, callee) -> cost id */
    struct cost *costs;    /* by cost id - 1 */
    size_t costs_cap, fns_cap, seen_cap;
    uint64_t totals[NEV];
    struct mvz_frame *frames;
    uint32_t *fid;
};

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 256;
    while (n < need)
        n *= 2;
    void *p = realloc(*v, n * size);
    if (!p)
        return -1;
    memset((char *)p + *cap * size, 0, (n - *cap) * size);
    *v = p;
    *cap = n;
    return 0;
}

/* Unknown functions are named by their return address, as Valgrind names
 * code it has no symbol for, so that they do not all merge into one. */
static uint32_t function_id(struct cg *g, const struct mvz_frame *f)
{
    char addr[32];
    const char *name = f->function;
    if (!strcmp(name, "??")) {
        snprintf(addr, sizeof(addr), "0x%" PRIx64, f->address);
        name = addr;
    }
    uint32_t ob = mvz_strtab_intern(&g->obs, f->module ? f->module : "???");
    uint32_t fl = mvz_strtab_intern(&g->files, f->file ? f->file : "???");
    uint32_t fn = mvz_strtab_intern(&g->names, name);
    uint32_t id = ob && fl && fn ? triple_id(&g->fns, ob, fl, fn) : 0;
    if (!id || grow((void **)&g->first_line, &g->fns_cap, id, sizeof(unsigned)) < 0 ||
        grow((void **)&g->seen, &g->seen_cap, id, sizeof(uint64_t)) < 0)
        return 0;
    unsigned *fl0 = &g->first_line[id - 1];
    if (f->line && (!*fl0 || f->line < *fl0))
        *fl0 = f->line;
    return id;
}

static struct cost *cost_at(struct cg *g, uint32_t fn, unsigned line, uint32_t callee)
{
    uint32_t id = triple_id(&g->keys, fn, line, callee);
    if (!id || grow((void **)&g->costs, &g->costs_cap, id, sizeof(*g->costs)) < 0)
        return NULL;
    return &g->costs[id - 1];
}

static void add_costs(struct cost *c, const uint64_t *ev)
{
    for (int e = 0; e < NEV; e++)
        c->ev[e] += ev[e];
}

/* Self cost at the innermost frame; a call for every adjacent pair, whose
 * cost counts only on the outermost call into each function (walking
 * outwards in, a function already seen further out gets zero). */
static int add_frames(struct cg *g, size_t n, uint64_t mark, const uint64_t *ev, uint64_t allocs)
{
    static const uint64_t zero[NEV];
    for (size_t k = 0; k < n; k++)
        if (!(g->fid[k] = function_id(g, &g->frames[k])))
            return -1;
    struct cost *c = cost_at(g, g->fid[0], g->frames[0].line, 0);
    if (!c)
        return -1;
    add_costs(c, ev);
    for (size_t k = n - 1; k-- > 0;) {
        uint32_t callee = g->fid[k];
        int counted = g->seen[callee - 1] == mark;
        g->seen[callee - 1] = mark;
        if (!(c = cost_at(g, g->fid[k + 1], g->frames[k + 1].line, callee)))
            return -1;
        add_costs(c, counted ? zero : ev);
        c->calls += allocs;
    }
    return 0;
}

static void site_costs(const struct mvz_site *s, uint64_t *ev)
{
    ev[EV_ALLOCS] = s->allocations;
    ev[EV_BYTES] = s->allocated_bytes;
    ev[EV_PEAK] = s->at_peak_bytes;
    ev[EV_LEAKED] = s->leaked_bytes;
    ev[EV_LEAKED_BLOCKS] = s->leaked_blocks;
    ev[EV_TEMPORARY] = s->temporary;
}

/* Stacks are trimmed as the export options say; the sites under
 * --min-percent of the chosen cost make one. */
static int build(struct cg *g, const struct mvz_export *x)
{
    g->frames = malloc(MAX_FRAMES * sizeof(*g->frames));
    g->fid = malloc(MAX_FRAMES * sizeof(*g->fid));
    if (!g->frames || !g->fid)
        return -1;
    uint64_t other[NEV] = {0}, other_any = 0, other_allocs = 0;
    for (size_t i = 0; i < x->p->sites_cap; i++) {
        const struct mvz_site *s = &x->p->sites[i];
        uint64_t ev[NEV], any = 0;
        site_costs(s, ev);
        for (int e = 0; e < NEV; e++)
            any |= ev[e], g->totals[e] += ev[e];
        if (!any)
            continue;
        if (!mvz_export_site_shown(x, s, x->cost)) {
            for (int e = 0; e < NEV; e++)
                other[e] += ev[e];
            other_any = 1;
            other_allocs += s->allocations;
            continue;
        }
        size_t n = mvz_export_stack(x, (uint32_t)i, g->frames, MAX_FRAMES);
        if (add_frames(g, n, (uint64_t)i + 1, ev, s->allocations) < 0)
            return -1;
    }
    if (other_any) {
        g->frames[0] = (struct mvz_frame){.function = MVZ_EXPORT_OTHER_SITES};
        if (add_frames(g, 1, (uint64_t)x->p->sites_cap + 1, other, other_allocs) < 0)
            return -1;
    }
    return 0;
}

static void cg_free(struct cg *g)
{
    mvz_strtab_free(&g->obs);
    mvz_strtab_free(&g->files);
    mvz_strtab_free(&g->names);
    tripletab_free(&g->fns);
    tripletab_free(&g->keys);
    free(g->first_line);
    free(g->seen);
    free(g->costs);
    free(g->frames);
    free(g->fid);
}

/* ---- writing ---- */

/* Name compression: "spec=(id) name" the first time, "spec=(id)" after. */
static void put_name(FILE *out, const char *spec, uint32_t id, const struct mvz_strtab *t,
                     unsigned char *defined)
{
    fprintf(out, "%s=(%" PRIu32 ")", spec, id);
    if (!defined[id - 1]) {
        fputc(' ', out);
        mvz_export_put_clean(out, mvz_strtab_get(t, id));
        defined[id - 1] = 1;
    }
    fputc('\n', out);
}

static void put_costs(FILE *out, unsigned line, const uint64_t *ev)
{
    fprintf(out, "%u", line);
    for (int e = 0; e < NEV; e++)
        fprintf(out, " %" PRIu64, ev[e]);
    fputc('\n', out);
}

static const struct cg *sort_g;
static int by_function(const void *a, const void *b)
{
    const uint32_t *x = sort_g->keys.k[*(const uint32_t *)a - 1];
    const uint32_t *y = sort_g->keys.k[*(const uint32_t *)b - 1];
    for (int i = 0; i < 3; i++) /* function, line, callee (self first: 0) */
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

struct defined {
    unsigned char *ob, *fl, *fn;
};

static void write_call(FILE *out, const struct cg *g, const uint32_t *key, const struct cost *c,
                       struct defined *d)
{
    const uint32_t *callee = g->fns.k[key[2] - 1];
    put_name(out, "cob", callee[0], &g->obs, d->ob);
    put_name(out, "cfi", callee[1], &g->files, d->fl);
    put_name(out, "cfn", callee[2], &g->names, d->fn);
    /* 0 calls would make readers take the cost for self cost: an edge whose
     * sites allocated nothing in the window (bytes live from before it)
     * still counts one. */
    fprintf(out, "calls=%" PRIu64 " %u\n", c->calls ? c->calls : 1, g->first_line[key[2] - 1]);
    put_costs(out, key[1], c->ev);
}

static int write_body(FILE *out, const struct cg *g)
{
    uint32_t *order = malloc((g->keys.n + 1) * sizeof(*order));
    struct defined d = {calloc(g->obs.n + 1, 1), calloc(g->files.n + 1, 1),
                        calloc(g->names.n + 1, 1)};
    int rc = order && d.ob && d.fl && d.fn ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < g->keys.n; i++)
        order[i] = (uint32_t)i + 1;
    if (rc == 0) {
        sort_g = g;
        mvz_sort(order, g->keys.n, sizeof(*order), by_function);
    }
    uint32_t cur = 0;
    for (size_t i = 0; rc == 0 && i < g->keys.n; i++) {
        const uint32_t *key = g->keys.k[order[i] - 1];
        if (key[0] != cur) {
            const uint32_t *fn = g->fns.k[key[0] - 1];
            fputc('\n', out);
            put_name(out, "ob", fn[0], &g->obs, d.ob);
            put_name(out, "fl", fn[1], &g->files, d.fl);
            put_name(out, "fn", fn[2], &g->names, d.fn);
            cur = key[0];
        }
        if (key[2])
            write_call(out, g, key, &g->costs[order[i] - 1], &d);
        else
            put_costs(out, key[1], g->costs[order[i] - 1].ev);
    }
    free(order);
    free(d.ob);
    free(d.fl);
    free(d.fn);
    return rc;
}

static void put_totals(FILE *out, const char *what, const uint64_t *ev)
{
    fprintf(out, "%s:", what);
    for (int e = 0; e < NEV; e++)
        fprintf(out, " %" PRIu64, ev[e]);
    fputc('\n', out);
}

static void write_header(FILE *out, const struct mvz_export *x)
{
    const struct mvz_summary *s = &x->p->sum;
    mvz_export_callgrind_head(out, x);
    if (x->to_ns == UINT64_MAX)
        fprintf(out, "desc: Window: %.3f s to the end\n", x->from_ns / 1e9);
    else
        fprintf(out, "desc: Window: %.3f s to %.3f s\n", x->from_ns / 1e9, x->to_ns / 1e9);
    mvz_export_callgrind_events(out, event_names, NEV);
    uint64_t sum[NEV] = {s->allocations,  s->allocated_bytes, s->peak_bytes,
                         s->leaked_bytes, s->leaked_blocks,   s->temporary};
    put_totals(out, "summary", sum);
}

int mvz_export_callgrind(struct mvz_export *x)
{
    struct cg g;
    memset(&g, 0, sizeof(g));
    int rc = build(&g, x);
    if (rc == 0) {
        write_header(x->out, x);
        rc = write_body(x->out, &g);
        put_totals(x->out, "\ntotals", g.totals);
    }
    if (rc < 0)
        mvz_error("out of memory writing the callgrind output");
    cg_free(&g);
    return rc;
}
