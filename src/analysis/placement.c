/*
 * placement.c - the live blocks and their addresses over a replay
 * (placement.h).
 *
 * The live set is a dense array (a moment walks it at memory speed) with
 * an index by name: open addressing, linear probing, at most half full,
 * deleted by shifting back the entries after (no tombstones, so a long
 * run of allocations and releases never slows the probes). Invariant:
 * slot[h] == i + 1 exactly when v[i] is live and h is where its name's
 * probe ends.
 */
#include "analysis/placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/readahead.h"
#include "analysis/replay.h"
#include "trace/format.h"
#include "util/sort.h"

static size_t hash_name(uint64_t name, size_t nslots)
{
    name ^= name >> 29;
    name *= 0xbf58476d1ce4e5b9ull;
    name ^= name >> 32;
    return (size_t)name & (nslots - 1);
}

static void live_free(struct mvz_live_set *s)
{
    free(s->v);
    free(s->slot);
    memset(s, 0, sizeof(*s));
}

/* The slot of name, or the empty one where it would go. */
static size_t find_slot(const struct mvz_live_set *s, uint64_t name)
{
    size_t h = hash_name(name, s->nslots);
    while (s->slot[h] && s->v[s->slot[h] - 1].name != name)
        h = (h + 1) & (s->nslots - 1);
    return h;
}

static int rehash(struct mvz_live_set *s, size_t nslots)
{
    uint64_t *old = s->slot;
    s->slot = calloc(nslots, sizeof(*s->slot));
    if (!s->slot) {
        s->slot = old;
        return -1;
    }
    s->nslots = nslots;
    for (size_t i = 0; i < s->n; i++)
        s->slot[find_slot(s, s->v[i].name)] = i + 1;
    free(old);
    return 0;
}

/* Room for one more block; -1 when out of memory. */
static int live_room(struct mvz_live_set *s)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 4096;
        struct mvz_placed *v = realloc(s->v, cap * sizeof(*v));
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    if (2 * (s->n + 1) > s->nslots)
        return rehash(s, s->nslots ? 2 * s->nslots : 8192);
    return 0;
}

/* Empties slot h, moving back the entries of the probe run after it. */
static void slot_delete(struct mvz_live_set *s, size_t h)
{
    size_t mask = s->nslots - 1, j = h;
    s->slot[h] = 0;
    for (;;) {
        j = (j + 1) & mask;
        if (!s->slot[j])
            return;
        size_t home = hash_name(s->v[s->slot[j] - 1].name, s->nslots);
        /* the entry at j may move to h if h lies on its way from home */
        if (((j - home) & mask) >= ((j - h) & mask)) {
            s->slot[h] = s->slot[j];
            s->slot[j] = 0;
            h = j;
        }
    }
}

/* Takes the block named name out of the set into *b; 0 when it is not in. */
static int live_take(struct mvz_live_set *s, uint64_t name, struct mvz_placed *b)
{
    if (!s->n)
        return 0;
    size_t h = find_slot(s, name);
    if (!s->slot[h])
        return 0;
    size_t i = s->slot[h] - 1;
    *b = s->v[i];
    slot_delete(s, h);
    if (i != --s->n) { /* the last block fills the hole */
        s->v[i] = s->v[s->n];
        s->slot[find_slot(s, s->v[i].name)] = i + 1;
    }
    return 1;
}

struct placing {
    const struct mvz_place_ops *ops;
    void *ctx;
    struct mvz_place_info *info;
    struct mvz_live_set live;
    uint64_t where_name, where_addr; /* the address the replay gave last */
    size_t next_moment;
};

static void where(void *ctx, uint64_t name, uint64_t addr)
{
    struct placing *p = ctx;
    p->where_name = name;
    p->where_addr = addr;
}

static void moments_before(struct placing *p, uint64_t ts)
{
    const struct mvz_place_ops *o = p->ops;
    while (p->next_moment < o->nmoments && o->moments[p->next_moment] < ts) {
        if (o->moment)
            o->moment(p->ctx, p->next_moment, &p->live);
        p->next_moment++;
    }
}

static void on_alloc(struct placing *p, const struct mvz_event *e)
{
    struct mvz_placed b = {e->addr, 0, e->size, e->ts, e->stack, e->tid}, old;
    if (!(e->flags & MVZ_EV_NAMED))
        b.addr = e->addr; /* formats 1 and 2 name blocks by address */
    else if (p->where_name == e->addr)
        b.addr = p->where_addr;
    p->where_name = 0;
    if (b.size > UINT64_MAX - b.addr)
        b.addr = 0; /* past the end of the address space: damage, no address */
    if (b.addr)
        p->info->placed++;
    else
        p->info->unplaced++;
    if (live_take(&p->live, b.name, &old) && p->ops->release) /* a reuse: the old one went */
        p->ops->release(p->ctx, &old, e->ts);
    if (live_room(&p->live) < 0) {
        p->info->lost_blocks++;
        return;
    }
    p->live.v[p->live.n] = b;
    p->live.slot[find_slot(&p->live, b.name)] = ++p->live.n;
    if (p->ops->alloc)
        p->ops->alloc(p->ctx, &b);
}

static void event(void *ctx, const struct mvz_event *e)
{
    struct placing *p = ctx;
    moments_before(p, e->ts);
    if (e->ts > p->info->end_ns)
        p->info->end_ns = e->ts;
    if (e->op == MVZ_OP_ALLOC) {
        on_alloc(p, e);
    } else if (e->op == MVZ_OP_FREE && e->addr != MVZ_NAME_NO_BLOCK) {
        struct mvz_placed b;
        if (live_take(&p->live, e->addr, &b) && p->ops->release)
            p->ops->release(p->ctx, &b, e->ts);
    }
}

int mvz_place_replay(const char *path, const struct mvz_place_ops *ops, void *ctx,
                     struct mvz_place_info *info, char *err, size_t errlen)
{
    memset(info, 0, sizeof(*info));
    struct placing p = {.ops = ops, .ctx = ctx, .info = info};
    struct mvz_replay_ops ro = {.event = event, .where = where};
    struct mvz_trace t;
    int rc = mvz_replay(path, &t, &ro, &p, err, errlen);
    if (rc == 0) {
        if (t.last_ts > info->end_ns)
            info->end_ns = t.last_ts;
        moments_before(&p, UINT64_MAX);
        mvz_trace_free(&t);
    }
    live_free(&p.live);
    return rc;
}

/* ---- the live blocks at one moment ---- */
struct at {
    struct mvz_placed *v;
    size_t n;
    int oom;
};

static void keep_moment(void *ctx, size_t k, const struct mvz_live_set *live)
{
    struct at *a = ctx;
    (void)k;
    a->v = malloc((live->n + 1) * sizeof(*a->v));
    if (!a->v) {
        a->oom = 1;
        return;
    }
    for (size_t i = 0; i < live->n; i++)
        if (live->v[i].addr)
            a->v[a->n++] = live->v[i];
}

static int by_addr(const void *x, const void *y)
{
    const struct mvz_placed *a = x, *b = y;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

int mvz_place_at(const char *path, uint64_t t, struct mvz_placed **out, size_t *n,
                 struct mvz_place_info *info, char *err, size_t errlen)
{
    struct at a = {0};
    uint64_t when = t;
    struct mvz_place_ops ops = {.moments = &when, .nmoments = 1, .moment = keep_moment};
    if (mvz_place_replay(path, &ops, &a, info, err, errlen) < 0) {
        free(a.v);
        return -1;
    }
    if (a.oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    mvz_sort(a.v, a.n, sizeof(*a.v), by_addr);
    *out = a.v;
    *n = a.n;
    return 0;
}
