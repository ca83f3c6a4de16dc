/*
 * leaks.c - memcheck's leak kinds (leaks.h), in memcheck's two passes.
 *
 * 1. From the roots: a block a root points to at its start is reachable;
 *    through an interior pointer, possibly lost (unless a heuristic takes
 *    the pointer for a real one: then reachable). The blocks a reachable
 *    block points to are marked the same way; everything a possibly lost
 *    block points to is possibly lost at best. A block is marked again
 *    when it moves up from possibly lost to reachable.
 * 2. The blocks still unmarked, in address order: each starts a clique and
 *    takes every unmarked block it reaches, through any pointer, as
 *    indirectly lost; a clique leader reached by a later clique joins it,
 *    with everything it had taken. The leaders left are definitely lost.
 *
 * Invariant after pass 2: leader[i] of an indirectly lost block is a
 * definitely lost block, and the indirect bytes of the definitely lost
 * blocks sum to the indirectly lost total.
 */
#include "analysis/leaks.h"

#include <stdlib.h>
#include <string.h>

#include "trace/format.h"

#define UNREACHED 0xff

const char *mvz_leak_kind_name(int kind)
{
    static const char *const names[MVZ_LEAK_KINDS] = {"reachable", "possible", "indirect",
                                                      "definite"};
    return kind >= 0 && kind < MVZ_LEAK_KINDS ? names[kind] : "?";
}

struct stack {
    uint32_t *v;
    size_t n, cap;
};

static int push(struct stack *st, uint32_t b)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 1024;
        uint32_t *v = realloc(st->v, cap * sizeof(*v));
        if (!v)
            return -1;
        st->v = v;
        st->cap = cap;
    }
    st->v[st->n++] = b;
    return 0;
}

/* Pass 1's step: block t reached through edge e from a reachable source
 * (definite) or a possibly lost one. */
static int reach(struct mvz_leaks *l, struct stack *st, const struct mvz_snap_edge *e, int definite)
{
    int via = e->kind == MVZ_EDGE_START       ? MVZ_LEAK_REACHABLE
              : e->kind >= MVZ_EDGE_STDSTRING ? MVZ_LEAK_REACHABLE
                                              : MVZ_LEAK_POSSIBLE;
    if (!definite)
        via = MVZ_LEAK_POSSIBLE;
    uint8_t *k = &l->kind[e->target];
    if (!(*k == UNREACHED || (*k == MVZ_LEAK_POSSIBLE && via == MVZ_LEAK_REACHABLE)))
        return 0;
    *k = (uint8_t)via;
    l->via[e->target] = via == MVZ_LEAK_REACHABLE && e->kind >= MVZ_EDGE_STDSTRING ? e->kind : 0;
    return push(st, e->target);
}

static int from_roots(const struct mvz_snapshot *s, struct mvz_leaks *l)
{
    struct stack st = {0};
    int rc = 0;
    for (size_t i = 0; i < s->nroot_edges && rc == 0; i++)
        rc = reach(l, &st, &s->root_edges[i], 1);
    for (size_t i = 0; i < s->nblocks && rc == 0; i++)
        if (s->blocks[i].flags & MVZ_SNAP_BLOCK_IGNORED) { /* memviz_ignore: held */
            struct mvz_snap_edge e = {(uint32_t)i, MVZ_EDGE_START, 0};
            rc = reach(l, &st, &e, 1);
        }
    while (st.n && rc == 0) {
        uint32_t b = st.v[--st.n];
        int definite = l->kind[b] == MVZ_LEAK_REACHABLE;
        for (size_t e = s->first_edge[b]; e < s->first_edge[b + 1] && rc == 0; e++)
            rc = reach(l, &st, &s->edges[e], definite);
    }
    free(st.v);
    return rc;
}

/* Pass 2 for one leader: takes what it reaches among the unmarked blocks. */
static int clique(const struct mvz_snapshot *s, struct mvz_leaks *l, uint8_t *leads, uint32_t lead)
{
    struct stack st = {0};
    int rc = push(&st, lead);
    while (st.n && rc == 0) {
        uint32_t b = st.v[--st.n];
        for (size_t e = s->first_edge[b]; e < s->first_edge[b + 1] && rc == 0; e++) {
            uint32_t t = s->edges[e].target;
            if (t == lead || l->kind[t] != UNREACHED)
                continue;
            l->kind[t] = MVZ_LEAK_INDIRECT;
            l->leader[t] = lead;
            l->indirect_bytes[lead] += s->blocks[t].size;
            l->indirect_blocks[lead]++;
            if (leads[t]) { /* an earlier leader joins, with its clique */
                l->indirect_bytes[lead] += l->indirect_bytes[t];
                l->indirect_blocks[lead] += l->indirect_blocks[t];
                l->indirect_bytes[t] = l->indirect_blocks[t] = 0;
                leads[t] = 0;
                continue; /* what it reaches is taken already */
            }
            rc = push(&st, t);
        }
    }
    free(st.v);
    return rc;
}

static void count(const struct mvz_snapshot *s, struct mvz_leaks *l)
{
    for (size_t i = 0; i < s->nblocks; i++) {
        int k = l->kind[i];
        l->t.bytes[k] += s->blocks[i].size;
        l->t.blocks[k]++;
        if (k == MVZ_LEAK_REACHABLE && l->via[i]) {
            l->t.heuristic_bytes[l->via[i] - MVZ_EDGE_STDSTRING] += s->blocks[i].size;
            l->t.heuristic_blocks[l->via[i] - MVZ_EDGE_STDSTRING]++;
        }
    }
}

int mvz_leaks_classify(const struct mvz_snapshot *s, struct mvz_leaks *l)
{
    memset(l, 0, sizeof(*l));
    size_t n = s->nblocks ? s->nblocks : 1;
    uint8_t *leads = calloc(n, 1);
    l->kind = malloc(n);
    l->via = calloc(n, 1);
    l->leader = calloc(n, sizeof(*l->leader));
    l->indirect_bytes = calloc(n, sizeof(*l->indirect_bytes));
    l->indirect_blocks = calloc(n, sizeof(*l->indirect_blocks));
    int rc =
        leads && l->kind && l->via && l->leader && l->indirect_bytes && l->indirect_blocks ? 0 : -1;
    if (rc == 0) {
        memset(l->kind, UNREACHED, n);
        rc = from_roots(s, l);
    }
    for (size_t i = 0; i < s->nblocks && rc == 0; i++)
        if (l->kind[i] == UNREACHED) {
            leads[i] = 1;
            rc = clique(s, l, leads, (uint32_t)i);
        }
    for (size_t i = 0; i < s->nblocks && rc == 0; i++)
        if (l->kind[i] == UNREACHED)
            l->kind[i] = MVZ_LEAK_DEFINITE;
    /* a joined leader's own members still name it: name the final one */
    for (size_t i = 0; i < s->nblocks && rc == 0; i++)
        if (l->kind[i] == MVZ_LEAK_INDIRECT)
            while (l->kind[l->leader[i]] == MVZ_LEAK_INDIRECT)
                l->leader[i] = l->leader[l->leader[i]];
    free(leads);
    if (rc < 0) {
        mvz_leaks_free(l);
        return -1;
    }
    count(s, l);
    return 0;
}

void mvz_leaks_free(struct mvz_leaks *l)
{
    free(l->kind);
    free(l->via);
    free(l->leader);
    free(l->indirect_bytes);
    free(l->indirect_blocks);
    memset(l, 0, sizeof(*l));
}
