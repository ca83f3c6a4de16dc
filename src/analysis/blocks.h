/*
 * blocks.h - the live blocks of a replay, found by key: a block's name
 * (allocating thread and serial, trace format 3 on) or, in older traces,
 * its address.
 *
 * A replay of a program that ends with millions of live blocks must not
 * need more memory than heaptrack_print does (it keeps nothing per block),
 * so a live block costs 4 bytes where it can: each thread's serials are
 * laid out in pages of PAGE_SERIALS slots, and a slot holds only the index
 * of the block's class, the (size, stack, thread, entry point) it shares
 * with other blocks, and whether it was allocated before the time window.
 * A page whose serials are all handed out and of which fewer than an
 * eighth are still live becomes sparse: a sorted list of its live
 * serials' offsets (2 bytes each) beside their slots, sized to fit, so
 * that a few long-lived blocks do not keep whole pages alive: a block
 * never costs more than about 32 bytes. Blocks named by address (traces
 * of format 1 and 2) and blocks no page could be made for go to a hash
 * table.
 *
 * Invariant: a named key whose thread has a page (dense or sparse) for
 * its serial is in that page (or is not live); every other key, named or
 * not, is in the hash table. So a lookup reads exactly one place.
 */
#ifndef MVZ_ANALYSIS_BLOCKS_H
#define MVZ_ANALYSIS_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "trace/heap_codec.h"

/* A live block as the replay sees it. */
struct mvz_block {
    uint64_t size;
    uint32_t stack;
    uint32_t thread; /* index into mvz_profile.threads of the allocating thread */
    uint8_t entry;
    uint8_t before_window; /* allocated before opt.from_ns: not counted */
    uint8_t rate;          /* the sampling rate it was allocated under (sampling.h's index) */
};

#define MVZ_BLOCK_PAGE_BITS 12
#define MVZ_BLOCK_SPARE_PAGES 16

/* A page: the slots of PAGE_SERIALS consecutive serials of one thread.
 * A slot is 0 (no live block) or class index + 1 shifted left once, with
 * bit 0 set for a block allocated before the window. A dense page
 * (cap 0) has PAGE_SERIALS slots, by offset; a sparse one has n entries
 * (room for cap), slots in order of their offsets, which follow the cap
 * slots as an array of uint16_t. A released block's entry stays, with
 * slot 0, until the page is made to fit again. */
struct mvz_block_page {
    uint32_t live; /* slots not 0 */
    uint32_t cap;  /* 0: dense */
    uint32_t n;    /* sparse: entries used */
    uint32_t slot[];
};

struct mvz_block_thread {
    uint32_t tid;
    uint64_t next;                 /* one past the highest serial put */
    size_t last_class;             /* the class of its latest block put (a guess for the next) */
    struct mvz_block_page **pages; /* by serial >> PAGE_BITS; NULL, a page, or retired */
    size_t npages;
    int frozen; /* the page array could not grow: serials past it go to the hash table */
};

/* The hash table's entries: key 0 marks an empty one. */
struct mvz_block_entry {
    uint64_t key;
    uint32_t slot; /* as in a page */
};

struct mvz_block_class {
    uint64_t size;
    uint32_t stack, thread;
    uint8_t entry, rate;
};

struct mvz_blocks {
    struct mvz_block_entry *tab; /* linear probing, at most 3/4 full */
    size_t cap, used;
    struct mvz_block_thread *threads;
    size_t nthreads, threads_cap;
    uint32_t *thread_index; /* tid -> 1 + index into threads (0: none), open addressing */
    size_t thread_index_cap;
    uint32_t hint[64]; /* tid % 64 -> 1 + index into threads, or 0 */
    struct mvz_block_class *classes;
    size_t nclasses, classes_cap, last_class; /* last_class: of the latest put */
    uint32_t *class_index;                    /* open addressing: 1 + class index, or 0 */
    size_t class_index_cap;
    size_t live;
    size_t pages, page_limit; /* pages held; most allowed (0: no limit; tests set one) */
    size_t page_bytes;        /* their memory */
    struct mvz_block_page *spare[MVZ_BLOCK_SPARE_PAGES]; /* empty dense pages, for reuse */
    size_t nspare;
    size_t tab_limit; /* most hash-table entries (0: no limit; tests set one) */
};

int mvz_blocks_find_slow(struct mvz_blocks *bs, uint64_t key, int named, struct mvz_block *out);
int mvz_blocks_take_slow(struct mvz_blocks *bs, uint64_t key, int named, struct mvz_block *out);
int mvz_blocks_put_slow(struct mvz_blocks *bs, uint64_t key, int named, const struct mvz_block *b);

/* A full page with fewer live blocks than this becomes sparse (blocks.c). */
#define MVZ_BLOCK_SPARSE_BELOW ((1u << MVZ_BLOCK_PAGE_BITS) / 8)

/* The paths every event takes are inline (as the windows of serials they
 * replace were: through calls, the same table was 13% slower): a named
 * key of the hinted thread in a dense page. Everything else is in
 * blocks.c. */

static inline int mvz_blocks_class_is(const struct mvz_block_class *c, const struct mvz_block *b)
{
    return c->size == b->size && c->stack == b->stack && c->thread == b->thread &&
           c->entry == b->entry && c->rate == b->rate;
}

static inline void mvz_blocks_decode(const struct mvz_blocks *bs, uint32_t slot,
                                     struct mvz_block *out)
{
    const struct mvz_block_class *c = &bs->classes[(slot >> 1) - 1];
    out->size = c->size;
    out->stack = c->stack;
    out->thread = c->thread;
    out->entry = c->entry;
    out->rate = c->rate;
    out->before_window = slot & 1;
}

/* The dense page of a named key's serial, when its thread is the one the
 * hint names; NULL otherwise (the slow paths then decide). */
static inline struct mvz_block_page *mvz_blocks_dense(const struct mvz_blocks *bs, uint64_t key,
                                                      int named, struct mvz_block_thread **thread)
{
    uint32_t tid = mvz_heap_block_tid(key), i = named ? bs->hint[tid % 64] : 0;
    if (!i)
        return NULL;
    struct mvz_block_thread *t = &bs->threads[i - 1];
    uint64_t p = mvz_heap_block_serial(key) >> MVZ_BLOCK_PAGE_BITS;
    if (t->tid != tid || p >= t->npages)
        return NULL;
    struct mvz_block_page *pg = t->pages[p];
    *thread = t;
    return (uintptr_t)pg > 1 && !pg->cap ? pg : NULL; /* 1: a retired page */
}

/* The block live under key: 1 with *out filled in, or 0. */
static inline int mvz_blocks_find(struct mvz_blocks *bs, uint64_t key, int named,
                                  struct mvz_block *out)
{
    struct mvz_block_thread *t;
    struct mvz_block_page *pg = mvz_blocks_dense(bs, key, named, &t);
    if (!pg)
        return mvz_blocks_find_slow(bs, key, named, out);
    uint32_t slot = pg->slot[mvz_heap_block_serial(key) & ((1u << MVZ_BLOCK_PAGE_BITS) - 1)];
    if (slot)
        mvz_blocks_decode(bs, slot, out);
    return slot != 0;
}

/* The same, and the block is no longer live. */
static inline int mvz_blocks_take(struct mvz_blocks *bs, uint64_t key, int named,
                                  struct mvz_block *out)
{
    struct mvz_block_thread *t;
    struct mvz_block_page *pg = mvz_blocks_dense(bs, key, named, &t);
    if (!pg || pg->live <= MVZ_BLOCK_SPARSE_BELOW) /* it may have to become sparse */
        return mvz_blocks_take_slow(bs, key, named, out);
    uint32_t *slot = &pg->slot[mvz_heap_block_serial(key) & ((1u << MVZ_BLOCK_PAGE_BITS) - 1)];
    if (!*slot)
        return 0;
    mvz_blocks_decode(bs, *slot, out);
    *slot = 0;
    pg->live--;
    bs->live--;
    return 1;
}

/* Makes b live under key, which is not live. 0, or -1 when out of memory
 * (the block is not kept). */
static inline int mvz_blocks_put(struct mvz_blocks *bs, uint64_t key, int named,
                                 const struct mvz_block *b)
{
    struct mvz_block_thread *t;
    struct mvz_block_page *pg = mvz_blocks_dense(bs, key, named, &t);
    uint64_t s = mvz_heap_block_serial(key);
    size_t c = pg ? t->last_class : 0;
    /* within the page of the thread's latest serial (no page fills up) */
    if (!pg || (s >= t->next && (!t->next || (s ^ (t->next - 1)) >> MVZ_BLOCK_PAGE_BITS)) ||
        c >= bs->nclasses || !mvz_blocks_class_is(&bs->classes[c], b))
        return mvz_blocks_put_slow(bs, key, named, b);
    uint32_t *slot = &pg->slot[s & ((1u << MVZ_BLOCK_PAGE_BITS) - 1)];
    if (*slot)
        return mvz_blocks_put_slow(bs, key, named, b);
    *slot = (uint32_t)(c + 1) << 1 | (b->before_window ? 1u : 0u);
    pg->live++;
    bs->live++;
    if (s >= t->next)
        t->next = s + 1;
    return 0;
}

void mvz_blocks_prefetch_slow(const struct mvz_blocks *bs, uint64_t key, int named);

/* Brings the place key would be at into cache. */
static inline void mvz_blocks_prefetch(const struct mvz_blocks *bs, uint64_t key, int named)
{
    struct mvz_block_thread *t;
    const struct mvz_block_page *pg = mvz_blocks_dense(bs, key, named, &t);
    if (pg)
        __builtin_prefetch(
            &pg->slot[mvz_heap_block_serial(key) & ((1u << MVZ_BLOCK_PAGE_BITS) - 1)]);
    else
        mvz_blocks_prefetch_slow(bs, key, named);
}
/* Calls fn on every live block. */
void mvz_blocks_each(const struct mvz_blocks *bs,
                     void (*fn)(void *ctx, uint64_t key, const struct mvz_block *b), void *ctx);
size_t mvz_blocks_live(const struct mvz_blocks *bs);
/* Memory held, in bytes (pages, tables, classes). */
size_t mvz_blocks_bytes(const struct mvz_blocks *bs);
void mvz_blocks_free(struct mvz_blocks *bs);

#endif
