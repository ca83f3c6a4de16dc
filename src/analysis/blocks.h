/*
 * blocks.h - the live blocks of a replay, found by key: a block's name
 * (allocating thread and serial, trace format 3 on) or, in older traces,
 * its address.
 *
 * Blocks are found by name in the allocating thread's window: an array
 * indexed by serial that holds the thread's latest serials. Most blocks die
 * young, so most releases land in the window's recent, cache-warm end with
 * no hashing and no probing. A block still live when its serial leaves the
 * window moves to a hash table (linear probing on the key), where blocks
 * named by address live too.
 *
 * Invariant: a named key is in its thread's window if and only if the
 * thread has a window and the key's serial is in the window's range
 * [base, next); every other key is in the hash table. So a lookup reads
 * exactly one place.
 */
#ifndef MVZ_ANALYSIS_BLOCKS_H
#define MVZ_ANALYSIS_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "trace/heap_codec.h"

/* 24 bytes: the table is the analysis's working set. */
struct mvz_block {
    uint64_t addr; /* the key; 0 = empty slot */
    uint64_t size : 56;
    uint64_t entry : 7;
    uint64_t before_window : 1; /* allocated before opt.from_ns: not counted */
    uint32_t stack;
    uint32_t thread; /* index into mvz_profile.threads of the allocating thread */
};

/* Serials [base, next) of thread tid, at v[serial & mask]; next - base
 * never exceeds the slots (mask + 1). */
struct mvz_block_window {
    uint32_t tid;
    uint32_t moved; /* live blocks moved out since serial `turn` left */
    uint64_t base, next;
    uint64_t mask;
    uint64_t turn; /* a serial that left; after mask + 1 more, moved starts over */
    struct mvz_block *v;
};

struct mvz_blocks {
    struct mvz_block *tab; /* the hash table: cap slots, at most half used */
    size_t cap, used;
    struct mvz_block_window *win; /* the threads' windows */
    size_t nwin, win_cap;
    uint32_t *win_index; /* thread id -> 1 + index into win (0: none), open addressing */
    size_t win_index_cap;
    uint32_t hint[64];    /* tid % 64 -> 1 + index into win of a thread's window, or 0 */
    size_t window_slots;  /* all windows' slots: bounded, so memory stays flat */
    size_t window_budget; /* most slots of all windows; 0: the default (tests set less) */
    size_t tab_limit;     /* most hash-table slots; 0: none (tests set one) */
    int no_new_windows;   /* one could not be made: none is, so keys stay where they went */
};

/* Lookups and insertions take named = whether key is a block's name. */
struct mvz_block *mvz_blocks_find_slow(struct mvz_blocks *bs, uint64_t key, int named);

/* Key's thread's window if its hint names it, else NULL. */
static inline struct mvz_block_window *mvz_blocks_hinted(const struct mvz_blocks *bs, uint64_t key)
{
    uint32_t tid = mvz_heap_block_tid(key), i = bs->hint[tid % 64];
    struct mvz_block_window *w = i ? &bs->win[i - 1] : NULL;
    return w && w->tid == tid ? w : NULL;
}

/* Inlined: it is on every event's path. */
static inline struct mvz_block *mvz_blocks_find(struct mvz_blocks *bs, uint64_t key, int named)
{
    struct mvz_block_window *w = named ? mvz_blocks_hinted(bs, key) : NULL;
    uint64_t s = mvz_heap_block_serial(key);
    if (!w || s < w->base)
        return mvz_blocks_find_slow(bs, key, named);
    struct mvz_block *b = &w->v[s & w->mask];
    return s < w->next && b->addr == key ? b : NULL;
}
struct mvz_block *mvz_blocks_insert_slow(struct mvz_blocks *bs, uint64_t key, int named);

/* Room for key, which is not live; NULL when out of memory. The caller
 * fills in everything but addr. Inlined for the common case: the thread's
 * next serial, with its window's oldest slot free. */
static inline struct mvz_block *mvz_blocks_insert(struct mvz_blocks *bs, uint64_t key, int named)
{
    struct mvz_block_window *w = named ? mvz_blocks_hinted(bs, key) : NULL;
    uint64_t s = mvz_heap_block_serial(key);
    if (!w || s != w->next)
        return mvz_blocks_insert_slow(bs, key, named);
    if (s - w->base > w->mask) { /* full: the oldest serial leaves, if dead */
        if (w->v[w->base & w->mask].addr)
            return mvz_blocks_insert_slow(bs, key, named);
        w->base++;
    }
    struct mvz_block *b = &w->v[s & w->mask];
    b->addr = key;
    w->next = s + 1;
    return b;
}
void mvz_blocks_remove_slow(struct mvz_blocks *bs, struct mvz_block *b);

/* In a window, a release is one store. */
static inline void mvz_blocks_remove(struct mvz_blocks *bs, struct mvz_block *b)
{
    if ((uintptr_t)b - (uintptr_t)bs->tab < bs->cap * sizeof(*b))
        mvz_blocks_remove_slow(bs, b);
    else
        b->addr = 0;
}
void mvz_blocks_prefetch_slow(const struct mvz_blocks *bs, uint64_t key);

/* Brings the place key would be at into cache. */
static inline void mvz_blocks_prefetch(const struct mvz_blocks *bs, uint64_t key, int named)
{
    struct mvz_block_window *w = named ? mvz_blocks_hinted(bs, key) : NULL;
    uint64_t s = mvz_heap_block_serial(key);
    if (w && s >= w->base) /* a new block's slot too */
        __builtin_prefetch(&w->v[s & w->mask]);
    else
        mvz_blocks_prefetch_slow(bs, key);
}
/* Calls fn on every live block. */
void mvz_blocks_each(struct mvz_blocks *bs, void (*fn)(void *ctx, struct mvz_block *b), void *ctx);
size_t mvz_blocks_live(const struct mvz_blocks *bs);
void mvz_blocks_free(struct mvz_blocks *bs);

#endif
