/*
 * symbols.c - see symbols.h.
 */
#include "analysis/symbols.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/framestore.h"
#include "trace/format.h"
#include "util/sort.h"

/* A symbolizer serves every generation whose mapped modules include all
 * the modules it was given: a program that dlopens plugins one by one
 * (CPython's extension modules) gets one symbolizer whose modules grow,
 * rather than one per generation that would each read libc's debugging
 * information again. A generation that unmapped one of a symbolizer's
 * modules (another object may now live at its addresses) gets another. */
struct symbolizer_set {
    struct mvz_symbolizer *sym;
    uint32_t *mods; /* ascending indexes into t->modules given to sym */
    size_t nmods;
};

struct gen_symbolizer {
    uint32_t gen;
    size_t set; /* index into mvz_symbols.sets */
};

struct mvz_symbols {
    const struct mvz_trace *t;
    struct gen_symbolizer *gens;
    size_t ngens;
    struct symbolizer_set *sets;
    size_t nsets;
    struct mvz_framestore *store; /* stacks kept as frames (merged profiles) */
};

/* At most this many modules of one address space are read for symbols; the
 * frames in the rest are left unknown (no real process maps anywhere near as
 * many; a damaged trace may claim thousands). */
#define MAX_SYMBOLIZED_MODULES 2048

struct mvz_symbols_warm {
    pthread_t thread;
    int running;
    uint32_t gen;
    struct mvz_symbolizer *sym;
    uint32_t *mods; /* indexes into t->modules, as mapped_modules() */
    size_t nmods;
    uint64_t *touch; /* an address in each module to warm */
    size_t ntouch;
};

static uint32_t *mapped_modules(const struct mvz_trace *t, uint32_t gen, size_t *n);
static struct mvz_symbolizer *build_symbolizer(const struct mvz_trace *t, const uint32_t *mods,
                                               size_t n);

static void *warm_main(void *arg)
{
    struct mvz_symbols_warm *w = arg;
    mvz_symbolizer_warm(w->sym, w->touch, w->ntouch);
    return NULL;
}

/* An address in each of the generation's modules that holds a frame of a
 * stack defined so far: only those are warmed, not every library of a
 * program that maps hundreds. */
struct range {
    uint64_t lo, hi;
    size_t k; /* index into w->mods */
};

static int by_lo(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static const struct range *range_of(const struct range *r, size_t n, uint64_t a)
{
    size_t l = 0, h = n; /* the last range starting at or below a */
    while (l < h) {
        size_t mid = l + (h - l) / 2;
        if (r[mid].lo <= a)
            l = mid + 1;
        else
            h = mid;
    }
    return l && a < r[l - 1].hi ? &r[l - 1] : NULL;
}

static void modules_to_warm(struct mvz_symbols_warm *w, const struct mvz_trace *t)
{
    size_t n = w->nmods ? w->nmods : 1;
    char *hit = calloc(n, 1);
    struct range *r = malloc(n * sizeof(*r));
    w->touch = malloc(n * sizeof(*w->touch));
    if (!hit || !r || !w->touch)
        goto out;
    for (size_t k = 0; k < w->nmods; k++) {
        const struct mvz_module *m = &t->modules[w->mods[k]];
        r[k] = (struct range){m->lo, m->hi, k};
    }
    mvz_sort(r, w->nmods, sizeof(*r), by_lo);
    for (size_t i = 0; i < t->stacks_cap && w->ntouch < w->nmods; i++) {
        const struct mvz_stack *st = &t->stacks[i];
        for (uint32_t f = 0; st->frames && st->gen <= w->gen && f < st->depth; f++) {
            const struct range *m = range_of(r, w->nmods, st->frames[f]);
            if (m && !hit[m->k]) {
                hit[m->k] = 1;
                w->touch[w->ntouch++] = m->lo;
            }
        }
    }
out:
    free(hit);
    free(r);
}

/* The symbolizer is built here, from t as it is now (the replay goes on
 * changing t); only the warming runs in the thread. */
struct mvz_symbols_warm *mvz_symbols_warm_start(const struct mvz_trace *t, uint32_t gen)
{
    struct mvz_symbols_warm *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->gen = gen;
    w->mods = mapped_modules(t, gen, &w->nmods);
    w->sym = w->mods ? build_symbolizer(t, w->mods, w->nmods) : NULL;
    if (w->sym)
        modules_to_warm(w, t);
    if (!w->sym) {
        mvz_symbols_warm_free(w);
        return NULL;
    }
    w->running = pthread_create(&w->thread, NULL, warm_main, w) == 0;
    return w;
}

void mvz_symbols_warm_finish(struct mvz_symbols_warm *w)
{
    if (w && w->running) {
        pthread_join(w->thread, NULL);
        w->running = 0;
    }
}

void mvz_symbols_warm_free(struct mvz_symbols_warm *w)
{
    if (!w)
        return;
    mvz_symbols_warm_finish(w);
    mvz_symbolizer_free(w->sym);
    free(w->mods);
    free(w->touch);
    free(w);
}

struct mvz_symbols *mvz_symbols_new(const struct mvz_trace *t)
{
    struct mvz_symbols *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->t = t;
    struct mvz_symbols_warm *w = t->warm;
    size_t n = 0;
    uint32_t *now = w && !w->running && w->sym ? mapped_modules(t, w->gen, &n) : NULL;
    /* Adopted only if the generation's modules are still those it was
     * built from (a damaged trace may add some later). */
    int same = now && n == w->nmods && !memcmp(now, w->mods, n * sizeof(*now));
    free(now);
    if (same && (s->sets = calloc(1, sizeof(*s->sets))) &&
        (s->gens = calloc(1, sizeof(*s->gens)))) {
        /* adopted: the trace keeps the empty shell, freed with it */
        s->sets[0] = (struct symbolizer_set){w->sym, w->mods, w->nmods};
        s->nsets = 1;
        s->gens[0] = (struct gen_symbolizer){w->gen, 0};
        s->ngens = 1;
        w->sym = NULL;
        w->mods = NULL;
    }
    return s;
}

struct mvz_symbols *mvz_symbols_new_stored(struct mvz_framestore *fs)
{
    struct mvz_symbols *s = calloc(1, sizeof(*s));
    if (s)
        s->store = fs;
    return s;
}

void mvz_symbols_free(struct mvz_symbols *s)
{
    if (!s)
        return;
    mvz_framestore_free(s->store);
    for (size_t i = 0; i < s->nsets; i++) {
        mvz_symbolizer_free(s->sets[i].sym);
        free(s->sets[i].mods);
    }
    free(s->sets);
    free(s->gens);
    free(s);
}

static int mapped_in(const struct mvz_module *m, uint32_t gen)
{
    return m->gen_loaded <= gen && (m->gen_unloaded == 0 || gen < m->gen_unloaded);
}

static uint32_t *mapped_modules(const struct mvz_trace *t, uint32_t gen, size_t *n)
{
    uint32_t *v = malloc((t->nmodules ? t->nmodules : 1) * sizeof(*v));
    *n = 0;
    for (size_t i = 0; v && i < t->nmodules; i++)
        if (mapped_in(&t->modules[i], gen))
            v[(*n)++] = (uint32_t)i;
    return v;
}

/* Gives sym the modules mods[from..n). */
static void add_modules(struct mvz_symbolizer *sym, const struct mvz_trace *t, const uint32_t *mods,
                        size_t from, size_t n)
{
    for (size_t i = from; sym && i < n; i++) {
        const struct mvz_module *m = &t->modules[mods[i]];
        if (i < MAX_SYMBOLIZED_MODULES)
            mvz_symbolizer_add_module(sym, m->path, m->bias, m->lo, m->hi,
                                      m->build_id_len ? m->build_id : NULL, m->build_id_len);
        else /* not read: an empty range keeps libdwfl out */
            mvz_symbolizer_add_module(sym, m->path, m->bias, m->lo, m->lo, NULL, 0);
    }
}

static struct mvz_symbolizer *build_symbolizer(const struct mvz_trace *t, const uint32_t *mods,
                                               size_t n)
{
    struct mvz_symbolizer *sym = mvz_symbolizer_new();
    add_modules(sym, t, mods, 0, n);
    return sym;
}

/* Whether every element of a (ascending) is in b (ascending). */
static int subset(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    size_t j = 0;
    for (size_t i = 0; i < na; i++) {
        while (j < nb && b[j] < a[i])
            j++;
        if (j == nb || b[j] != a[i])
            return 0;
    }
    return 1;
}

/* The set that serves a generation mapping mods (n, ascending; taken
 * over), extended or created; -1 when out of memory. */
static long set_for(struct mvz_symbols *s, uint32_t *mods, size_t n)
{
    for (size_t i = 0; i < s->nsets; i++) {
        struct symbolizer_set *set = &s->sets[i];
        if (!subset(set->mods, set->nmods, mods, n))
            continue;
        if (set->nmods < n) { /* the new modules go after the ones it has */
            uint32_t *order = malloc(n * sizeof(*order));
            if (!order) {
                free(mods);
                return -1;
            }
            memcpy(order, set->mods, set->nmods * sizeof(*order));
            size_t k = set->nmods;
            for (size_t j = 0; j < n; j++)
                if (!subset(&mods[j], 1, set->mods, set->nmods))
                    order[k++] = mods[j];
            add_modules(set->sym, s->t, order, set->nmods, n);
            free(order);
            free(set->mods);
            set->mods = mods;
            set->nmods = n;
        } else {
            free(mods);
        }
        return (long)i;
    }
    struct symbolizer_set *v = realloc(s->sets, (s->nsets + 1) * sizeof(*v));
    if (!v) {
        free(mods);
        return -1;
    }
    s->sets = v;
    v[s->nsets] = (struct symbolizer_set){build_symbolizer(s->t, mods, n), mods, n};
    return (long)s->nsets++;
}

static struct mvz_symbolizer *for_generation(struct mvz_symbols *s, uint32_t gen)
{
    for (size_t i = 0; i < s->ngens; i++)
        if (s->gens[i].gen == gen)
            return s->sets[s->gens[i].set].sym;
    struct gen_symbolizer *v = realloc(s->gens, (s->ngens + 1) * sizeof(*v));
    if (!v)
        return NULL;
    s->gens = v;
    size_t n;
    uint32_t *mods = mapped_modules(s->t, gen, &n);
    long set = mods ? set_for(s, mods, n) : -1;
    if (set < 0)
        return NULL;
    v[s->ngens++] = (struct gen_symbolizer){gen, (size_t)set};
    return s->sets[set].sym;
}

static size_t pseudo_frame(struct mvz_frame *out, const char *what)
{
    memset(out, 0, sizeof(*out));
    out->function = what;
    return 1;
}

size_t mvz_symbols_stack(struct mvz_symbols *s, uint32_t id, struct mvz_frame *out, size_t max)
{
    if (max == 0)
        return 0;
    if (s->store) { /* its own ids: MVZ_STACK_NESTED is a trace's */
        size_t n = mvz_framestore_get(s->store, id, out, max);
        return n ? n : pseudo_frame(out, "[stack not recorded]");
    }
    if (id == MVZ_STACK_NESTED)
        return pseudo_frame(out, "[allocated in a signal handler while memviz was busy]");
    const struct mvz_stack *st = mvz_trace_stack(s->t, id);
    if (!st)
        return pseudo_frame(out, "[stack not recorded]");
    size_t n = 0;
    for (uint32_t i = 0; i < st->depth && n < max; i++)
        n += mvz_symbols_address(s, st->gen, st->frames[i], out + n, max - n);
    return n ? n : pseudo_frame(out, "[empty stack]");
}

const char *mvz_symbols_data(struct mvz_symbols *s, uint32_t gen, uint64_t addr, uint64_t *offset)
{
    struct mvz_symbolizer *sym = s->store ? NULL : for_generation(s, gen);
    return sym ? mvz_symbolize_data(sym, addr, offset) : NULL;
}

Dwarf *mvz_symbols_dwarf(struct mvz_symbols *s, uint32_t gen, uint64_t addr, uint64_t *bias)
{
    struct mvz_symbolizer *sym = s->store ? NULL : for_generation(s, gen);
    *bias = 0;
    return sym ? mvz_symbolize_dwarf(sym, addr, bias) : NULL;
}

size_t mvz_symbols_address(struct mvz_symbols *s, uint32_t gen, uint64_t pc, struct mvz_frame *out,
                           size_t max)
{
    if (max == 0)
        return 0;
    struct mvz_symbolizer *sym = s->store ? NULL : for_generation(s, gen);
    if (!sym) {
        memset(out, 0, sizeof(*out));
        out->function = "??";
        out->address = pc;
        return 1;
    }
    return (size_t)mvz_symbolize(sym, pc, out, (int)max);
}
