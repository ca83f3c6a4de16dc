/*
 * strtab.c - see strtab.h. The slot table is kept at most half full.
 */
#include "util/strtab.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int grow_slots(struct mvz_strtab *t)
{
    size_t n = t->nslots ? t->nslots * 2 : 1024;
    uint32_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t id = 1; id <= t->n; id++) {
        size_t j = hash_str(t->strs[id]) & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = (uint32_t)id;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
    return 0;
}

static uint32_t add(struct mvz_strtab *t, const char *s)
{
    if (t->n + 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        char **v = realloc(t->strs, cap * sizeof(*v));
        if (!v)
            return 0;
        t->strs = v;
        t->cap = cap;
    }
    char *copy = strdup(s);
    if (!copy)
        return 0;
    t->strs[++t->n] = copy;
    return (uint32_t)t->n;
}

uint32_t mvz_strtab_intern(struct mvz_strtab *t, const char *s)
{
    if ((t->n + 1) * 2 > t->nslots && grow_slots(t) < 0)
        return 0;
    size_t j = hash_str(s) & (t->nslots - 1);
    for (; t->slots[j]; j = (j + 1) & (t->nslots - 1))
        if (!strcmp(t->strs[t->slots[j]], s))
            return t->slots[j];
    uint32_t id = add(t, s);
    if (id)
        t->slots[j] = id;
    return id;
}

const char *mvz_strtab_get(const struct mvz_strtab *t, uint32_t id)
{
    return id && id <= t->n ? t->strs[id] : "";
}

void mvz_strtab_free(struct mvz_strtab *t)
{
    for (size_t id = 1; id <= t->n; id++)
        free(t->strs[id]);
    free(t->strs);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}
