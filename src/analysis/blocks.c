/*
 * blocks.c - the live blocks of a replay: each thread's pages of serials,
 * a hash table for the rest, and the classes slots name (see blocks.h).
 *
 * Measured on a trace of perl building a hash of 3 million keys (6 million
 * blocks live at the end): 24-byte entries in windows and a hash table at
 * most half full took `memviz report` to 638 MB; 4-byte slots in pages,
 * about 24 MB for the same blocks.
 */
#include "analysis/blocks.h"

#include <stdlib.h>
#include <string.h>

#include "trace/heap_codec.h"

#define PAGE_SERIALS (1u << MVZ_BLOCK_PAGE_BITS)
#define PAGE_MASK (PAGE_SERIALS - 1)
/* Serials at or past 2^32 (a thread's four billionth allocation) live in
 * the hash table: a page array for them would be too large to hold. */
#define MAX_PAGES (1u << 20)
/* A full page with fewer live blocks than this becomes sparse (6 bytes a
 * live block instead of 4 a serial), so a dense page never costs more than
 * 32 bytes a live block. A lookup in a sparse page is a binary search:
 * perl's 3 M-key hash, freed in hash order, took 0.46 s to report with
 * pages made sparse at a quarter, 0.39 s at an eighth, 0.37 s at a
 * sixteenth (the same peak memory). */
#define RETIRE_BELOW MVZ_BLOCK_SPARSE_BELOW
#define RETIRED ((struct mvz_block_page *)1)

static int real_page(const struct mvz_block_page *pg)
{
    return pg && pg != RETIRED;
}

static uint64_t mix(uint64_t x)
{
    x *= 0x9E3779B97F4A7C15ull;
    return x ^ (x >> 29);
}

/* ---- classes ---- */

static uint64_t class_hash(const struct mvz_block *b)
{
    return mix(b->size ^ mix((uint64_t)b->stack << 32 ^ (uint64_t)b->thread << 16 ^
                             (uint64_t)b->rate << 8 ^ b->entry));
}

static int class_same(const struct mvz_block_class *c, const struct mvz_block *b)
{
    return mvz_blocks_class_is(c, b);
}

static int class_index_grow(struct mvz_blocks *bs)
{
    size_t cap = bs->class_index_cap ? bs->class_index_cap * 2 : 1024;
    uint32_t *t = calloc(cap, sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = 0; i < bs->nclasses; i++) {
        struct mvz_block b = {.size = bs->classes[i].size,
                              .stack = bs->classes[i].stack,
                              .thread = bs->classes[i].thread,
                              .entry = bs->classes[i].entry,
                              .rate = bs->classes[i].rate};
        size_t j = class_hash(&b) & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)(i + 1);
    }
    free(bs->class_index);
    bs->class_index = t;
    bs->class_index_cap = cap;
    return 0;
}

/* b's class index, made if new; -1 when out of memory. */
static int64_t class_of(struct mvz_blocks *bs, const struct mvz_block *b)
{
    if (bs->last_class < bs->nclasses && class_same(&bs->classes[bs->last_class], b))
        return (int64_t)bs->last_class; /* a loop allocating the same thing */
    if (2 * (bs->nclasses + 1) > bs->class_index_cap && class_index_grow(bs) < 0)
        return -1;
    size_t mask = bs->class_index_cap - 1, j = class_hash(b) & mask;
    for (; bs->class_index[j]; j = (j + 1) & mask)
        if (class_same(&bs->classes[bs->class_index[j] - 1], b))
            return (int64_t)(bs->last_class = bs->class_index[j] - 1);
    if (bs->nclasses >= (1u << 30))
        return -1;
    if (bs->nclasses == bs->classes_cap) {
        size_t cap = bs->classes_cap ? bs->classes_cap * 2 : 1024;
        struct mvz_block_class *c = realloc(bs->classes, cap * sizeof(*c));
        if (!c)
            return -1;
        bs->classes = c;
        bs->classes_cap = cap;
    }
    bs->classes[bs->nclasses] =
        (struct mvz_block_class){b->size, b->stack, b->thread, b->entry, b->rate};
    bs->class_index[j] = (uint32_t)(bs->nclasses + 1);
    bs->last_class = bs->nclasses;
    return (int64_t)bs->nclasses++;
}

static void decode(const struct mvz_blocks *bs, uint32_t slot, struct mvz_block *out)
{
    mvz_blocks_decode(bs, slot, out);
}

/* ---- the hash table (linear probing, backward-shift deletion) ---- */

static size_t slot_of(uint64_t key, size_t cap)
{
    return (size_t)(mix(key) >> 17) & (cap - 1);
}

static int tab_grow(struct mvz_blocks *bs)
{
    size_t cap = bs->cap ? bs->cap * 2 : 1 << 12;
    if (bs->tab_limit && cap > bs->tab_limit)
        return -1;
    struct mvz_block_entry *t = calloc(cap, sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = 0; i < bs->cap; i++) {
        if (!bs->tab[i].key)
            continue;
        size_t j = slot_of(bs->tab[i].key, cap);
        while (t[j].key)
            j = (j + 1) & (cap - 1);
        t[j] = bs->tab[i];
    }
    free(bs->tab);
    bs->tab = t;
    bs->cap = cap;
    return 0;
}

/* Room for n more entries; -1 when the table cannot grow. */
static int tab_room(struct mvz_blocks *bs, size_t n)
{
    while (4 * (bs->used + n) > 3 * bs->cap)
        if (tab_grow(bs) < 0)
            return -1;
    return 0;
}

static struct mvz_block_entry *tab_find(const struct mvz_blocks *bs, uint64_t key)
{
    if (!bs->cap || !key)
        return NULL;
    for (size_t j = slot_of(key, bs->cap);; j = (j + 1) & (bs->cap - 1)) {
        if (bs->tab[j].key == key)
            return &bs->tab[j];
        if (!bs->tab[j].key)
            return NULL;
    }
}

/* Adds key, which is not in the table, which has room. */
static void tab_add(struct mvz_blocks *bs, uint64_t key, uint32_t slot)
{
    size_t j = slot_of(key, bs->cap);
    while (bs->tab[j].key)
        j = (j + 1) & (bs->cap - 1);
    bs->tab[j] = (struct mvz_block_entry){key, slot};
    bs->used++;
}

static void tab_remove(struct mvz_blocks *bs, struct mvz_block_entry *e)
{
    size_t cap = bs->cap, hole = (size_t)(e - bs->tab);
    bs->tab[hole].key = 0;
    bs->used--;
    for (size_t j = (hole + 1) & (cap - 1); bs->tab[j].key; j = (j + 1) & (cap - 1)) {
        size_t home = slot_of(bs->tab[j].key, cap);
        /* move j into the hole if its home is not within (hole, j] */
        int between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!between) {
            bs->tab[hole] = bs->tab[j];
            bs->tab[j].key = 0;
            hole = j;
        }
    }
}

/* ---- threads ---- */

static size_t tid_slot(uint32_t tid, size_t cap)
{
    return (size_t)(mix(tid) >> 7) & (cap - 1);
}

static int thread_index_grow(struct mvz_blocks *bs)
{
    size_t cap = bs->thread_index_cap ? bs->thread_index_cap * 2 : 64;
    uint32_t *t = calloc(cap, sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = 0; i < bs->nthreads; i++) {
        size_t j = tid_slot(bs->threads[i].tid, cap);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)(i + 1);
    }
    free(bs->thread_index);
    bs->thread_index = t;
    bs->thread_index_cap = cap;
    return 0;
}

static struct mvz_block_thread *thread_hinted(const struct mvz_blocks *bs, uint32_t tid)
{
    uint32_t i = bs->hint[tid % 64];
    return i && bs->threads[i - 1].tid == tid ? &bs->threads[i - 1] : NULL;
}

/* tid's pages, made if make and new; NULL when it has none. */
static struct mvz_block_thread *thread_for(struct mvz_blocks *bs, uint32_t tid, int make)
{
    struct mvz_block_thread *t = thread_hinted(bs, tid);
    if (t)
        return t;
    size_t j = 0;
    if (bs->thread_index_cap) {
        for (j = tid_slot(tid, bs->thread_index_cap); bs->thread_index[j];
             j = (j + 1) & (bs->thread_index_cap - 1))
            if (bs->threads[bs->thread_index[j] - 1].tid == tid) {
                bs->hint[tid % 64] = bs->thread_index[j];
                return &bs->threads[bs->thread_index[j] - 1];
            }
    }
    if (!make)
        return NULL;
    if (bs->nthreads == bs->threads_cap) {
        size_t cap = bs->threads_cap ? bs->threads_cap * 2 : 16;
        struct mvz_block_thread *v = realloc(bs->threads, cap * sizeof(*v));
        if (!v)
            return NULL;
        bs->threads = v;
        bs->threads_cap = cap;
    }
    if (2 * (bs->nthreads + 1) > bs->thread_index_cap) {
        if (thread_index_grow(bs) < 0)
            return NULL;
    }
    bs->threads[bs->nthreads] = (struct mvz_block_thread){.tid = tid};
    bs->nthreads++;
    j = tid_slot(tid, bs->thread_index_cap);
    while (bs->thread_index[j])
        j = (j + 1) & (bs->thread_index_cap - 1);
    bs->thread_index[j] = (uint32_t)bs->nthreads;
    bs->hint[tid % 64] = (uint32_t)bs->nthreads;
    return &bs->threads[bs->nthreads - 1];
}

/* ---- pages ---- */

static size_t dense_bytes(void)
{
    return sizeof(struct mvz_block_page) + PAGE_SERIALS * sizeof(uint32_t);
}

static uint16_t *sparse_off(struct mvz_block_page *pg)
{
    return (uint16_t *)(pg->slot + pg->cap);
}

/* A sparse page with room for cap entries. */
static struct mvz_block_page *sparse_new(uint32_t cap)
{
    struct mvz_block_page *pg = malloc(sizeof(*pg) + cap * (sizeof(uint32_t) + sizeof(uint16_t)));
    if (pg) {
        pg->live = pg->n = 0;
        pg->cap = cap;
    }
    return pg;
}

/* The slot of offset i in page pg, or NULL (sparse, no entry for i). *pos:
 * its entry in a sparse page, or where that entry would go. */
static uint32_t *page_slot(struct mvz_block_page *pg, uint32_t i, uint32_t *pos)
{
    if (!pg->cap)
        return &pg->slot[i];
    const uint16_t *off = sparse_off(pg);
    uint32_t lo = 0, hi = pg->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (off[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    *pos = lo;
    return lo < pg->n && off[lo] == i ? &pg->slot[lo] : NULL;
}

/* A sparse copy of pg (dense or sparse) with room for cap entries, holding
 * its live slots only; NULL when out of memory. */
static struct mvz_block_page *sparse_copy(struct mvz_block_page *pg, uint32_t cap)
{
    struct mvz_block_page *sp = sparse_new(cap);
    if (!sp)
        return NULL;
    uint16_t *off = sparse_off(sp);
    const uint16_t *from = pg->cap ? sparse_off(pg) : NULL;
    uint32_t n = pg->cap ? pg->n : PAGE_SERIALS;
    for (uint32_t j = 0; j < n; j++)
        if (pg->slot[j]) {
            sp->slot[sp->n] = pg->slot[j];
            off[sp->n++] = from ? from[j] : (uint16_t)j;
        }
    sp->live = sp->n;
    return sp;
}

/* The page of t's serial s, when t has a page for it. */
static struct mvz_block_page *page_of(const struct mvz_block_thread *t, uint64_t s)
{
    uint64_t p = s >> MVZ_BLOCK_PAGE_BITS;
    return t && p < t->npages && real_page(t->pages[p]) ? t->pages[p] : NULL;
}

/* A page for serial s of t, made if there is none and none was retired:
 * NULL when the block belongs in the hash table. A page that cannot be
 * made is retired at once, so that none is made later for serials whose
 * blocks went to the table; a page array that cannot grow stops growing. */
static struct mvz_block_page *page_make(struct mvz_blocks *bs, struct mvz_block_thread *t,
                                        uint64_t s)
{
    uint64_t p = s >> MVZ_BLOCK_PAGE_BITS;
    if (p >= MAX_PAGES || (t->frozen && p >= t->npages))
        return NULL;
    if (p >= t->npages) {
        size_t n = t->npages ? t->npages : 16;
        while (n <= p)
            n *= 2;
        struct mvz_block_page **v = realloc(t->pages, n * sizeof(*v));
        if (!v) {
            t->frozen = 1;
            return NULL;
        }
        memset(v + t->npages, 0, (n - t->npages) * sizeof(*v));
        t->pages = v;
        t->npages = n;
    }
    if (t->pages[p] == RETIRED)
        return NULL;
    if (!t->pages[p]) {
        if (bs->page_limit && bs->pages >= bs->page_limit) {
            t->pages[p] = RETIRED;
            return NULL;
        }
        if (bs->nspare) {
            t->pages[p] = bs->spare[--bs->nspare]; /* every slot 0, live 0 */
        } else if (!(t->pages[p] = calloc(1, dense_bytes()))) {
            t->pages[p] = RETIRED;
            return NULL;
        }
        bs->pages++;
        bs->page_bytes += dense_bytes();
    }
    return t->pages[p];
}

/* An empty dense page is kept for the next page made (its slots are all 0
 * already): a thread whose blocks die young fills a page every 4,096
 * allocations, and allocating and zeroing each made the list churn's
 * report 0.22 -> 0.30 s against the windows of serials before pages. */
static void page_drop(struct mvz_blocks *bs, struct mvz_block_thread *t, uint64_t p)
{
    struct mvz_block_page *pg = t->pages[p];
    bs->page_bytes -= pg->cap ? sizeof(*pg) + pg->cap * 6u : dense_bytes();
    bs->pages--;
    if (!pg->cap && !pg->live && bs->nspare < MVZ_BLOCK_SPARE_PAGES)
        bs->spare[bs->nspare++] = pg;
    else
        free(pg);
    t->pages[p] = RETIRED;
}

/* Page p of t, as it empties: once the thread has handed out a whole page
 * of serials after it (the blocks of a thread's latest few thousand
 * allocations are still dying young: making their page sparse was 5% of
 * the list churn's report, for nothing), a dense page with fewer than
 * RETIRE_BELOW live blocks becomes sparse, a
 * sparse one whose entries are three quarters released ones is made to fit,
 * and an empty one goes. Out of memory, a page stays as it is. */
static void page_thin(struct mvz_blocks *bs, struct mvz_block_thread *t, uint64_t p)
{
    struct mvz_block_page *pg = p < t->npages ? t->pages[p] : NULL;
    if (!real_page(pg) || (p + 2) << MVZ_BLOCK_PAGE_BITS > t->next)
        return;
    if (!pg->live) {
        page_drop(bs, t, p);
        return;
    }
    if (pg->cap ? 4 * pg->live > pg->n : pg->live >= RETIRE_BELOW)
        return;
    struct mvz_block_page *sp = sparse_copy(pg, pg->live);
    if (!sp)
        return;
    page_drop(bs, t, p);
    t->pages[p] = sp;
    bs->pages++;
    bs->page_bytes += sizeof(*sp) + sp->cap * 6u;
}

/* Adds an entry for offset i, which has none, at position pos of sparse
 * page *pgp, making room (a fuller copy, without released entries) when
 * there is none. -1 when out of memory. */
static int sparse_put(struct mvz_blocks *bs, struct mvz_block_page **pgp, uint32_t i, uint32_t pos,
                      uint32_t slot)
{
    struct mvz_block_page *pg = *pgp;
    if (pg->n == pg->cap) {
        struct mvz_block_page *g = sparse_copy(pg, 2 * pg->live + 4);
        if (!g)
            return -1;
        bs->page_bytes += (g->cap - pg->cap) * 6u;
        free(pg);
        *pgp = pg = g;
        page_slot(pg, i, &pos);
    }
    uint16_t *off = sparse_off(pg);
    memmove(&pg->slot[pos + 1], &pg->slot[pos], (pg->n - pos) * sizeof(uint32_t));
    memmove(&off[pos + 1], &off[pos], (pg->n - pos) * sizeof(uint16_t));
    pg->slot[pos] = slot;
    off[pos] = (uint16_t)i;
    pg->n++;
    pg->live++;
    return 0;
}

/* ---- the interface ---- */

int mvz_blocks_put_slow(struct mvz_blocks *bs, uint64_t key, int named, const struct mvz_block *b)
{
    int64_t c = class_of(bs, b);
    if (c < 0)
        return -1;
    uint32_t slot = (uint32_t)(c + 1) << 1 | (b->before_window ? 1u : 0u);
    struct mvz_block_thread *t = named ? thread_for(bs, mvz_heap_block_tid(key), 1) : NULL;
    if (t)
        t->last_class = (size_t)c;
    uint64_t s = mvz_heap_block_serial(key), p = s >> MVZ_BLOCK_PAGE_BITS;
    struct mvz_block_page *pg = t ? page_make(bs, t, s) : NULL;
    if (!pg) {
        if (tab_room(bs, 1) < 0)
            return -1;
        tab_add(bs, key, slot);
        bs->live++;
        return 0;
    }
    uint32_t pos, *at = page_slot(pg, (uint32_t)(s & PAGE_MASK), &pos);
    if (at && *at) { /* live already (the caller's mistake): replaced */
        *at = slot;
        return 0;
    }
    if (at) {
        *at = slot;
        pg->live++;
    } else if (sparse_put(bs, &t->pages[p], (uint32_t)(s & PAGE_MASK), pos, slot) < 0) {
        return -1;
    }
    bs->live++;
    uint64_t was = t->next;
    if (s + 1 > was) {
        t->next = s + 1;
        uint64_t q = was ? (was - 1) >> MVZ_BLOCK_PAGE_BITS : p;
        if (q < p && q) /* the page before the one just filled up */
            page_thin(bs, t, q - 1);
    }
    return 0;
}

static int lookup(struct mvz_blocks *bs, uint64_t key, int named, struct mvz_block *out, int take)
{
    struct mvz_block_thread *t = named ? thread_for(bs, mvz_heap_block_tid(key), 0) : NULL;
    uint64_t s = mvz_heap_block_serial(key);
    struct mvz_block_page *pg = page_of(t, s);
    if (pg) {
        uint32_t pos, *slot = page_slot(pg, (uint32_t)(s & PAGE_MASK), &pos);
        if (!slot || !*slot)
            return 0;
        decode(bs, *slot, out);
        if (take) { /* a sparse page keeps the entry, released, until it is made to fit */
            *slot = 0;
            pg->live--;
            bs->live--;
            if (pg->cap ? 4 * pg->live <= pg->n : pg->live < RETIRE_BELOW)
                page_thin(bs, t, s >> MVZ_BLOCK_PAGE_BITS);
        }
        return 1;
    }
    struct mvz_block_entry *e = tab_find(bs, key);
    if (!e)
        return 0;
    decode(bs, e->slot, out);
    if (take) {
        tab_remove(bs, e);
        bs->live--;
    }
    return 1;
}

int mvz_blocks_find_slow(struct mvz_blocks *bs, uint64_t key, int named, struct mvz_block *out)
{
    return lookup(bs, key, named, out, 0);
}

int mvz_blocks_take_slow(struct mvz_blocks *bs, uint64_t key, int named, struct mvz_block *out)
{
    return lookup(bs, key, named, out, 1);
}

void mvz_blocks_prefetch_slow(const struct mvz_blocks *bs, uint64_t key, int named)
{
    const struct mvz_block_thread *t = named ? thread_hinted(bs, mvz_heap_block_tid(key)) : NULL;
    uint64_t s = mvz_heap_block_serial(key);
    const struct mvz_block_page *pg = page_of(t, s);
    if (pg) { /* a sparse page's header (its entries start right after it), or the dense slot */
        __builtin_prefetch(pg);
        __builtin_prefetch(&pg->slot[s & PAGE_MASK]);
    } else if (bs->cap && bs->used) {
        __builtin_prefetch(&bs->tab[slot_of(key, bs->cap)]);
    }
}

void mvz_blocks_each(const struct mvz_blocks *bs,
                     void (*fn)(void *ctx, uint64_t key, const struct mvz_block *b), void *ctx)
{
    struct mvz_block b;
    for (size_t i = 0; i < bs->nthreads; i++) {
        const struct mvz_block_thread *t = &bs->threads[i];
        for (uint64_t p = 0; p < t->npages; p++) {
            struct mvz_block_page *pg = t->pages[p];
            uint32_t n = !real_page(pg) ? 0 : pg->cap ? pg->n : PAGE_SERIALS;
            for (uint32_t j = 0; j < n; j++)
                if (pg->slot[j]) {
                    uint32_t i = pg->cap ? sparse_off(pg)[j] : j;
                    decode(bs, pg->slot[j], &b);
                    fn(ctx, mvz_heap_block(t->tid, p << MVZ_BLOCK_PAGE_BITS | i), &b);
                }
        }
    }
    for (size_t i = 0; i < bs->cap; i++)
        if (bs->tab[i].key) {
            decode(bs, bs->tab[i].slot, &b);
            fn(ctx, bs->tab[i].key, &b);
        }
}

size_t mvz_blocks_live(const struct mvz_blocks *bs)
{
    return bs->live;
}

size_t mvz_blocks_bytes(const struct mvz_blocks *bs)
{
    size_t n =
        bs->page_bytes + bs->cap * sizeof(*bs->tab) + bs->threads_cap * sizeof(*bs->threads) +
        bs->thread_index_cap * sizeof(*bs->thread_index) + bs->classes_cap * sizeof(*bs->classes) +
        bs->class_index_cap * sizeof(*bs->class_index);
    for (size_t i = 0; i < bs->nthreads; i++)
        n += bs->threads[i].npages * sizeof(*bs->threads[i].pages);
    return n;
}

void mvz_blocks_free(struct mvz_blocks *bs)
{
    for (size_t i = 0; i < bs->nspare; i++)
        free(bs->spare[i]);
    for (size_t i = 0; i < bs->nthreads; i++) {
        for (size_t p = 0; p < bs->threads[i].npages; p++)
            if (real_page(bs->threads[i].pages[p]))
                free(bs->threads[i].pages[p]);
        free(bs->threads[i].pages);
    }
    free(bs->threads);
    free(bs->thread_index);
    free(bs->tab);
    free(bs->classes);
    free(bs->class_index);
    memset(bs, 0, sizeof(*bs));
}
