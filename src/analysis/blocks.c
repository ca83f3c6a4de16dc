/*
 * blocks.c - the live blocks of a replay: the threads' windows of recent
 * serials, and a hash table for the rest (see blocks.h).
 *
 * On a CPython trace a third of the report's time went to the hash table
 * alone (probing, and backward shifts on every release); in a window a
 * release is one store.
 */
#include "analysis/blocks.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "trace/heap_codec.h"

/* A window starts small and doubles, up to WINDOW_MAX slots (6 MiB),
 * when more than 1/WINDOW_MOVED_SHARE of the serials leaving it in one
 * turn (as many serials as it has slots) were live: a thread whose blocks
 * die young keeps a small one. A moved block costs a hash insertion and
 * later a hash release; on a CPython trace, whose objects often outlive
 * 2^16 of the thread's allocations, 2^18 slots made the replay 7% faster
 * than 2^16, and 2^20 slower again (growing and its page faults). A share
 * of 1/16 grew windows that did not pay: 7 MiB more on the mt bench's
 * report, 6 MiB more and 6% slower on cc1plus's. All
 * windows together hold at most WINDOW_BUDGET slots (48 MiB); past that,
 * threads without a window use the hash table. */
#define WINDOW_MIN (1u << 10)
#define WINDOW_MAX (1u << 18)
#define WINDOW_MOVED_SHARE 8
#define WINDOW_BUDGET (1u << 21)

/* ---- the hash table (linear probing, backward-shift deletion) ---- */

static size_t slot_of(uint64_t key, size_t cap)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

/* Mapped memory, populated at once: filled page by page, a lookup first
 * mapped the shared zero page and the insertion then faulted again to copy
 * it, and with the read-ahead thread running every such fault sent a TLB
 * shootdown to the other CPU (a tenth of cc1plus's report). */
static struct mvz_block *tab_map(size_t cap)
{
    void *b = mmap(NULL, cap * sizeof(struct mvz_block), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return b == MAP_FAILED ? NULL : b;
}

static void tab_unmap(struct mvz_block *b, size_t cap)
{
    if (b)
        munmap(b, cap * sizeof(*b));
}

static int tab_grow(struct mvz_blocks *bs)
{
    size_t cap = bs->cap ? bs->cap * 2 : 1 << 14;
    if (bs->tab_limit && cap > bs->tab_limit)
        return -1;
    struct mvz_block *b = tab_map(cap);
    if (!b)
        return -1;
    for (size_t i = 0; i < bs->cap; i++) {
        if (!bs->tab[i].addr)
            continue;
        size_t j = slot_of(bs->tab[i].addr, cap);
        while (b[j].addr)
            j = (j + 1) & (cap - 1);
        b[j] = bs->tab[i];
    }
    tab_unmap(bs->tab, bs->cap);
    bs->tab = b;
    bs->cap = cap;
    return 0;
}

static struct mvz_block *tab_find(struct mvz_blocks *bs, uint64_t key)
{
    if (!bs->cap || !key) /* 0 marks an empty slot */
        return NULL;
    for (size_t j = slot_of(key, bs->cap);; j = (j + 1) & (bs->cap - 1)) {
        if (bs->tab[j].addr == key)
            return &bs->tab[j];
        if (!bs->tab[j].addr)
            return NULL;
    }
}

static struct mvz_block *tab_insert(struct mvz_blocks *bs, uint64_t key)
{
    /* At most half full: shorter probes and backward shifts. */
    if ((bs->used + 1) * 2 > bs->cap && tab_grow(bs) < 0)
        return NULL;
    size_t j = slot_of(key, bs->cap);
    while (bs->tab[j].addr)
        j = (j + 1) & (bs->cap - 1);
    bs->used++;
    bs->tab[j].addr = key;
    return &bs->tab[j];
}

static void tab_remove(struct mvz_blocks *bs, struct mvz_block *b)
{
    size_t cap = bs->cap, hole = (size_t)(b - bs->tab);
    bs->tab[hole].addr = 0;
    bs->used--;
    for (size_t j = (hole + 1) & (cap - 1); bs->tab[j].addr; j = (j + 1) & (cap - 1)) {
        size_t home = slot_of(bs->tab[j].addr, cap);
        /* move j into the hole if its home is not within (hole, j] */
        int between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!between) {
            bs->tab[hole] = bs->tab[j];
            bs->tab[j].addr = 0;
            hole = j;
        }
    }
}

/* ---- windows ---- */

static size_t tid_slot(uint32_t tid, size_t cap)
{
    return (size_t)(tid * 0x9E3779B1u) & (cap - 1);
}

static int index_grow(struct mvz_blocks *bs)
{
    size_t cap = bs->win_index_cap ? bs->win_index_cap * 2 : 64;
    uint32_t *v = calloc(cap, sizeof(*v));
    if (!v)
        return -1;
    for (size_t i = 0; i < bs->nwin; i++) {
        size_t j = tid_slot(bs->win[i].tid, cap);
        while (v[j])
            j = (j + 1) & (cap - 1);
        v[j] = (uint32_t)i + 1;
    }
    free(bs->win_index);
    bs->win_index = v;
    bs->win_index_cap = cap;
    return 0;
}

static size_t budget(const struct mvz_blocks *bs)
{
    return bs->window_budget ? bs->window_budget : WINDOW_BUDGET;
}

static struct mvz_block_window *window_make(struct mvz_blocks *bs, uint32_t tid)
{
    if (bs->window_slots + WINDOW_MIN > budget(bs) || bs->nwin >= UINT32_MAX - 1)
        return NULL;
    if ((bs->nwin + 1) * 2 > bs->win_index_cap && index_grow(bs) < 0)
        return NULL;
    if (bs->nwin == bs->win_cap) {
        size_t cap = bs->win_cap ? bs->win_cap * 2 : 8;
        struct mvz_block_window *v = realloc(bs->win, cap * sizeof(*v));
        if (!v)
            return NULL;
        bs->win = v;
        bs->win_cap = cap;
    }
    struct mvz_block *slots = calloc(WINDOW_MIN, sizeof(*slots));
    if (!slots)
        return NULL;
    struct mvz_block_window *w = &bs->win[bs->nwin];
    *w = (struct mvz_block_window){.tid = tid, .mask = WINDOW_MIN - 1, .v = slots};
    size_t j = tid_slot(tid, bs->win_index_cap);
    while (bs->win_index[j])
        j = (j + 1) & (bs->win_index_cap - 1);
    bs->win_index[j] = (uint32_t)++bs->nwin;
    bs->window_slots += WINDOW_MIN;
    return w;
}

/* Once a window could not be made, none is: a thread's names that went
 * to the hash table must not fall in a window's range later. */
static struct mvz_block_window *window_new(struct mvz_blocks *bs, uint32_t tid)
{
    struct mvz_block_window *w = bs->no_new_windows ? NULL : window_make(bs, tid);
    if (!w)
        bs->no_new_windows = 1;
    return w;
}

/* Thread tid's window, made if `make` and there is room; NULL if none.
 * The hint of tid's residue then names it. */
static struct mvz_block_window *window_for(struct mvz_blocks *bs, uint32_t tid, int make)
{
    struct mvz_block_window *w = NULL;
    for (size_t j = bs->win_index_cap ? tid_slot(tid, bs->win_index_cap) : 0;
         bs->win_index_cap && bs->win_index[j]; j = (j + 1) & (bs->win_index_cap - 1))
        if (bs->win[bs->win_index[j] - 1].tid == tid) {
            w = &bs->win[bs->win_index[j] - 1];
            break;
        }
    if (!w && make)
        w = window_new(bs, tid);
    if (w)
        bs->hint[tid % 64] = (uint32_t)(w - bs->win) + 1;
    return w;
}

/* Doubles w's slots, if that stays within the limits. */
static int window_grow(struct mvz_blocks *bs, struct mvz_block_window *w)
{
    uint64_t slots = w->mask + 1, cap = slots * 2;
    if (cap > WINDOW_MAX || bs->window_slots + slots > budget(bs))
        return -1;
    struct mvz_block *v = calloc(cap, sizeof(*v));
    if (!v)
        return -1;
    for (uint64_t s = w->base; s < w->next; s++)
        v[s & (cap - 1)] = w->v[s & w->mask];
    free(w->v);
    w->v = v;
    w->mask = cap - 1;
    bs->window_slots += slots;
    return 0;
}

/* Makes serial upto - 1 the window's newest, moving the serials that leave
 * it, if still live, to the hash table (or growing the window instead).
 * Every slot of a serial that left is empty, so the slots of the serials
 * that come in are. -1 when a live block cannot move (out of memory): it
 * stays, base stops at it, and the new serial does not come in, so the
 * caller's new block goes uncounted rather than a counted one lost. */
static int window_advance(struct mvz_blocks *bs, struct mvz_block_window *w, uint64_t upto)
{
    while (upto - w->base > w->mask + 1) {
        if (w->base >= w->next) { /* nothing live below next: jump */
            w->base = upto - (w->mask + 1);
            break;
        }
        if (w->base - w->turn > w->mask) {
            w->turn = w->base;
            w->moved = 0;
        }
        struct mvz_block *b = &w->v[w->base & w->mask];
        if (b->addr) {
            if (++w->moved > (w->mask + 1) / WINDOW_MOVED_SHARE && window_grow(bs, w) == 0) {
                w->moved = 0;
                continue;
            }
            struct mvz_block *to = tab_insert(bs, b->addr);
            if (!to)
                return -1;
            *to = *b;
            b->addr = 0;
        }
        w->base++;
    }
    if (upto > w->next)
        w->next = upto;
    return 0;
}

/* ---- the interface ---- */

struct mvz_block *mvz_blocks_find_slow(struct mvz_blocks *bs, uint64_t key, int named)
{
    struct mvz_block_window *w = named ? window_for(bs, mvz_heap_block_tid(key), 0) : NULL;
    if (w) {
        uint64_t s = mvz_heap_block_serial(key);
        if (s >= w->next)
            return NULL;
        if (s >= w->base) {
            struct mvz_block *b = &w->v[s & w->mask];
            return b->addr == key ? b : NULL;
        }
    }
    return tab_find(bs, key);
}

struct mvz_block *mvz_blocks_insert_slow(struct mvz_blocks *bs, uint64_t key, int named)
{
    struct mvz_block_window *w = named ? window_for(bs, mvz_heap_block_tid(key), 1) : NULL;
    uint64_t s = mvz_heap_block_serial(key);
    if (!w || s < w->base) /* an old serial's name given again: rare */
        return tab_insert(bs, key);
    if (s >= w->next && window_advance(bs, w, s + 1) < 0)
        return NULL;
    struct mvz_block *b = &w->v[s & w->mask];
    b->addr = key;
    return b;
}

void mvz_blocks_remove_slow(struct mvz_blocks *bs, struct mvz_block *b)
{
    tab_remove(bs, b);
}

void mvz_blocks_prefetch_slow(const struct mvz_blocks *bs, uint64_t key)
{
    if (bs->cap)
        __builtin_prefetch(&bs->tab[slot_of(key, bs->cap)]);
}

void mvz_blocks_each(struct mvz_blocks *bs, void (*fn)(void *ctx, struct mvz_block *b), void *ctx)
{
    for (size_t i = 0; i < bs->cap; i++)
        if (bs->tab[i].addr)
            fn(ctx, &bs->tab[i]);
    for (size_t i = 0; i < bs->nwin; i++) {
        struct mvz_block_window *w = &bs->win[i];
        for (uint64_t s = w->base; s < w->next; s++)
            if (w->v[s & w->mask].addr)
                fn(ctx, &w->v[s & w->mask]);
    }
}

static void count_one(void *ctx, struct mvz_block *b)
{
    (void)b;
    ++*(size_t *)ctx;
}

size_t mvz_blocks_live(const struct mvz_blocks *bs)
{
    size_t n = 0;
    mvz_blocks_each((struct mvz_blocks *)bs, count_one, &n);
    return n;
}

void mvz_blocks_free(struct mvz_blocks *bs)
{
    tab_unmap(bs->tab, bs->cap);
    for (size_t i = 0; i < bs->nwin; i++)
        free(bs->win[i].v);
    free(bs->win);
    free(bs->win_index);
    memset(bs, 0, sizeof(*bs));
}
