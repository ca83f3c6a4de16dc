/*
 * symbols.c - see symbols.h.
 */
#include "analysis/symbols.h"

#include <stdlib.h>
#include <string.h>

#include "trace/format.h"

/* Generations with the same mapped modules share one symbolizer (`owner`
 * marks the entry that frees it): a program that loads and unloads the
 * same plugin again and again, or a damaged trace with thousands of
 * generations, must not build a symbolizer per generation. */
struct gen_symbolizer {
    uint32_t gen;
    struct mvz_symbolizer *sym;
    uint32_t *mods; /* indexes into t->modules mapped in gen */
    size_t nmods;
    int owner;
};

struct mvz_symbols {
    const struct mvz_trace *t;
    struct gen_symbolizer *gens;
    size_t ngens;
};

/* At most this many modules of one address space are read for symbols; the
 * frames in the rest are left unknown (no real process maps anywhere near as
 * many; a damaged trace may claim thousands). */
#define MAX_SYMBOLIZED_MODULES 2048

struct mvz_symbols *mvz_symbols_new(const struct mvz_trace *t)
{
    struct mvz_symbols *s = calloc(1, sizeof(*s));
    if (s)
        s->t = t;
    return s;
}

void mvz_symbols_free(struct mvz_symbols *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->ngens; i++) {
        if (s->gens[i].owner)
            mvz_symbolizer_free(s->gens[i].sym);
        free(s->gens[i].mods);
    }
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

static struct mvz_symbolizer *build_symbolizer(const struct mvz_trace *t, const uint32_t *mods,
                                               size_t n)
{
    struct mvz_symbolizer *sym = mvz_symbolizer_new();
    for (size_t i = 0; sym && i < n; i++) {
        const struct mvz_module *m = &t->modules[mods[i]];
        if (i < MAX_SYMBOLIZED_MODULES)
            mvz_symbolizer_add_module(sym, m->path, m->bias, m->lo, m->hi,
                                      m->build_id_len ? m->build_id : NULL, m->build_id_len);
        else /* not read: an empty range keeps libdwfl out */
            mvz_symbolizer_add_module(sym, m->path, m->bias, m->lo, m->lo, NULL, 0);
    }
    return sym;
}

static struct mvz_symbolizer *for_generation(struct mvz_symbols *s, uint32_t gen)
{
    for (size_t i = 0; i < s->ngens; i++)
        if (s->gens[i].gen == gen)
            return s->gens[i].sym;
    struct gen_symbolizer *v = realloc(s->gens, (s->ngens + 1) * sizeof(*v));
    if (!v)
        return NULL;
    s->gens = v;
    struct gen_symbolizer *g = &v[s->ngens];
    memset(g, 0, sizeof(*g));
    g->gen = gen;
    if (!(g->mods = mapped_modules(s->t, gen, &g->nmods)))
        return NULL;
    for (size_t i = 0; i < s->ngens && !g->sym; i++)
        if (v[i].nmods == g->nmods && !memcmp(v[i].mods, g->mods, g->nmods * sizeof(*g->mods)))
            g->sym = v[i].sym;
    if (!g->sym) {
        g->sym = build_symbolizer(s->t, g->mods, g->nmods);
        g->owner = 1;
    }
    s->ngens++;
    return g->sym;
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
    if (id == MVZ_STACK_NESTED)
        return pseudo_frame(out, "[allocated in a signal handler while memviz was busy]");
    const struct mvz_stack *st = mvz_trace_stack(s->t, id);
    if (!st)
        return pseudo_frame(out, "[stack not recorded]");
    struct mvz_symbolizer *sym = for_generation(s, st->gen);
    size_t n = 0;
    for (uint32_t i = 0; i < st->depth && n < max; i++) {
        if (!sym) {
            memset(&out[n], 0, sizeof(out[n]));
            out[n].function = "??";
            out[n++].address = st->frames[i];
            continue;
        }
        n += (size_t)mvz_symbolize(sym, st->frames[i], out + n, (int)(max - n));
    }
    return n ? n : pseudo_frame(out, "[empty stack]");
}
