/*
 * symbols.c - see symbols.h.
 */
#include "analysis/symbols.h"

#include <stdlib.h>
#include <string.h>

#include "trace/format.h"

struct gen_symbolizer {
    uint32_t gen;
    struct mvz_symbolizer *sym;
};

struct mvz_symbols {
    const struct mvz_trace *t;
    struct gen_symbolizer *gens;
    size_t ngens;
};

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
    for (size_t i = 0; i < s->ngens; i++)
        mvz_symbolizer_free(s->gens[i].sym);
    free(s->gens);
    free(s);
}

static int mapped_in(const struct mvz_module *m, uint32_t gen)
{
    return m->gen_loaded <= gen && (m->gen_unloaded == 0 || gen < m->gen_unloaded);
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
    struct mvz_symbolizer *sym = mvz_symbolizer_new();
    for (size_t i = 0; sym && i < s->t->nmodules; i++) {
        const struct mvz_module *m = &s->t->modules[i];
        if (mapped_in(m, gen))
            mvz_symbolizer_add_module(sym, m->path, m->bias, m->lo, m->hi,
                                      m->build_id_len ? m->build_id : NULL, m->build_id_len);
    }
    s->gens[s->ngens].gen = gen;
    s->gens[s->ngens++].sym = sym;
    return sym;
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
