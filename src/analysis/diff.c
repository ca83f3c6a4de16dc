/*
 * diff.c - see diff.h.
 */
#include "analysis/diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fmt.h"
#include "util/sort.h"

#define MAX_FRAMES 2048
#define KEY_MAX 65536

int mvz_diff_add(struct mvz_diff *d, const char *key, int side, uint32_t stack,
                 const uint64_t cost[MVZ_COST_COUNT])
{
    uint32_t id = mvz_strtab_intern(&d->keys, key);
    if (!id)
        return -1;
    if (id > d->n) {
        struct mvz_diff_entry *v = realloc(d->e, id * sizeof(*v));
        if (!v)
            return -1;
        memset(v + d->n, 0, (id - d->n) * sizeof(*v));
        d->e = v;
        d->n = id;
    }
    struct mvz_diff_entry *e = &d->e[id - 1];
    e->key = id;
    if (!e->stack[side])
        e->stack[side] = stack;
    for (int c = 0; c < MVZ_COST_COUNT; c++)
        e->cost[side][c] += cost[c];
    return 0;
}

int64_t mvz_diff_delta(const struct mvz_diff_entry *e, enum mvz_cost c)
{
    return (int64_t)(e->cost[MVZ_DIFF_NEW][c] - e->cost[MVZ_DIFF_BASE][c]);
}

static enum mvz_cost sort_cost;

static int by_delta_desc(const void *a, const void *b)
{
    const struct mvz_diff_entry *x = a, *y = b;
    int64_t dx = mvz_diff_delta(x, sort_cost), dy = mvz_diff_delta(y, sort_cost);
    if (dx != dy)
        return dx > dy ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

void mvz_diff_sort(struct mvz_diff *d, enum mvz_cost c)
{
    sort_cost = c;
    mvz_sort(d->e, d->n, sizeof(*d->e), by_delta_desc);
}

void mvz_diff_free(struct mvz_diff *d)
{
    mvz_strtab_free(&d->keys);
    free(d->e);
    memset(d, 0, sizeof(*d));
}

/* A module's file name, "??" when there is none. */
static const char *module_name(const char *path)
{
    return path ? mvz_base_name(path) : "??";
}

/* "function  [module]" per frame, innermost first, one per line. */
static void stack_key(char *key, const struct mvz_frame *f, size_t n)
{
    size_t len = 0;
    key[0] = 0;
    for (size_t i = 0; i < n && len + 1 < KEY_MAX; i++) {
        int w = snprintf(key + len, KEY_MAX - len, "%s%s  [%s]", i ? "\n" : "", f[i].function,
                         module_name(f[i].module));
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

int mvz_diff_add_profile(struct mvz_diff *sites, struct mvz_diff *funcs, int side,
                         const struct mvz_profile *p, struct mvz_symbols *sym)
{
    struct mvz_frame *f = malloc(MAX_FRAMES * sizeof(*f));
    char *key = malloc(KEY_MAX);
    int rc = f && key ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < p->sites_cap; i++) {
        const struct mvz_site *site = &p->sites[i];
        if (!site->allocations)
            continue;
        uint64_t cost[MVZ_COST_COUNT];
        for (int c = 0; c < MVZ_COST_COUNT; c++)
            cost[c] = mvz_site_cost(site, (enum mvz_cost)c);
        size_t n = mvz_symbols_stack(sym, site->stack, f, MAX_FRAMES);
        char func[4096];
        snprintf(func, sizeof(func), "%s  [%s]", n ? f[0].function : "??",
                 module_name(n ? f[0].module : NULL));
        stack_key(key, f, n);
        if (mvz_diff_add(funcs, func, side, site->stack, cost) < 0 ||
            mvz_diff_add(sites, key, side, site->stack, cost) < 0)
            rc = -1;
    }
    free(f);
    free(key);
    return rc;
}
