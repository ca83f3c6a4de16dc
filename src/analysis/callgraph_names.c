/*
 * callgraph_names.c - the call graph's addresses as names: a function by
 * its entry (looked up as the return address one past it, so the line is
 * where the function begins), a call site by its return address.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/callgraph.h"
#include "analysis/symbols.h"

#define MAX_INLINE 64

static struct mvz_cg_place place_of(struct mvz_symbols *sym, uint32_t gen, uint64_t ra)
{
    struct mvz_frame f[MAX_INLINE];
    size_t n = mvz_symbols_address(sym, gen, ra, f, MAX_INLINE);
    const struct mvz_frame *outer = &f[n - 1]; /* the function, not what it inlined */
    return (struct mvz_cg_place){outer->function, outer->file, outer->module, outer->line};
}

int mvz_cg_names_init(struct mvz_cg_names *n, const struct mvz_callgraph *g,
                      struct mvz_symbols *sym)
{
    n->g = g;
    n->sym = sym;
    n->fns = calloc(g->nfns ? g->nfns : 1, sizeof(*n->fns));
    if (!n->fns)
        return -1;
    for (size_t i = 0; i < g->nfns; i++)
        n->fns[i] = place_of(sym, g->gen, g->fns[i].fn + 1);
    return 0;
}

void mvz_cg_names_free(struct mvz_cg_names *n)
{
    free(n->fns);
    n->fns = NULL;
}

struct mvz_cg_place mvz_cg_fn_place(const struct mvz_cg_names *n, uint64_t fn)
{
    const struct mvz_cg_fn *f = fn ? mvz_callgraph_fn(n->g, fn) : NULL;
    if (f)
        return n->fns[f - n->g->fns];
    return (struct mvz_cg_place){fn ? "??" : "(root)", NULL, NULL, 0};
}

const char *mvz_cg_fn_name(const struct mvz_cg_names *n, uint64_t fn)
{
    return mvz_cg_fn_place(n, fn).function;
}

struct mvz_cg_site_place mvz_cg_site_place(const struct mvz_cg_names *n, uint64_t caller,
                                           const struct mvz_cg_site *s)
{
    struct mvz_cg_site_place d = {NULL, NULL, 0, s->inlined};
    if (s->inlined || !s->site)
        return d;
    struct mvz_frame f[MAX_INLINE];
    size_t k = mvz_symbols_address(n->sym, n->g->gen, s->site, f, MAX_INLINE);
    d.file = f[0].file;
    d.line = f[0].line;
    if (!caller)
        return d;
    const char *want = mvz_cg_fn_name(n, caller);
    for (size_t i = 0; i < k; i++)
        if (!strcmp(f[i].function, want))
            return d;
    d.via = f[k - 1].function;
    return d;
}

int mvz_cg_name_matches(const char *name, const char *want)
{
    size_t n = strlen(want);
    return !strncmp(name, want, n) && (name[n] == 0 || name[n] == '(');
}
