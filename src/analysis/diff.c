/*
 * diff.c - see diff.h.
 */
#include "analysis/diff.h"

#include <stdlib.h>
#include <string.h>

#include "util/sort.h"

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
