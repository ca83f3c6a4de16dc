/*
 * test_blocks.c - unit tests of the live block table (src/analysis/blocks.c)
 * against a plain model: random allocations and releases on several
 * threads, with young and long-lived blocks, gaps in serials, names given
 * again, address keys, a page limit, and memory that runs out.
 * After every operation the table must find exactly the live blocks, each
 * with its own contents.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/blocks.h"

#define THREADS 5
#define MAX_SERIAL (1u << 22)
#define ADDRS 4096

static const uint32_t tids[THREADS] = {101, 102, 165, 7000101, 3};

struct model {
    uint8_t *alive[THREADS]; /* by serial */
    uint64_t next[THREADS];
    uint8_t addr_alive[ADDRS];
    uint64_t *live; /* keys of the live blocks, named and not */
    uint8_t *live_named;
    size_t nlive, cap;
    uint64_t rng;
};

static uint64_t rnd(struct model *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng;
}

/* What a block with this key holds: checked on every find. Blocks share
 * classes (size, stack, thread, entry), as a program's blocks do. */
static struct mvz_block payload(uint64_t key)
{
    uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> 8;
    struct mvz_block b = {.size = h % 1000 + (h % 97 == 0 ? 1ull << 40 : 0),
                          .stack = (uint32_t)(h >> 20) % 50,
                          .thread = (uint32_t)(h >> 30) % 5,
                          .entry = (uint8_t)((h >> 40) % 30),
                          .before_window = (uint8_t)((h >> 50) & 1)};
    return b;
}

static void same(const struct mvz_block *a, const struct mvz_block *b)
{
    assert_int_equal(a->size, b->size);
    assert_int_equal(a->stack, b->stack);
    assert_int_equal(a->thread, b->thread);
    assert_int_equal(a->entry, b->entry);
    assert_int_equal(a->before_window, b->before_window);
}

static uint64_t addr_key(unsigned i)
{
    return 0x7f0000000000ull + (uint64_t)i * 16;
}

static void live_add(struct model *m, uint64_t key, int named)
{
    if (m->nlive == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 1024;
        m->live = realloc(m->live, m->cap * sizeof(*m->live));
        m->live_named = realloc(m->live_named, m->cap);
        assert_non_null(m->live);
        assert_non_null(m->live_named);
    }
    m->live[m->nlive] = key;
    m->live_named[m->nlive++] = (uint8_t)named;
}

static void check_found(struct mvz_blocks *bs, uint64_t key, int named)
{
    struct mvz_block b, want = payload(key);
    assert_int_equal(mvz_blocks_find(bs, key, named, &b), 1);
    same(&b, &want);
}

static int found(struct mvz_blocks *bs, uint64_t key, int named)
{
    struct mvz_block b;
    return mvz_blocks_find(bs, key, named, &b);
}

static void insert(struct mvz_blocks *bs, uint64_t key, int named)
{
    assert_false(found(bs, key, named));
    mvz_blocks_prefetch(bs, key, named);
    struct mvz_block b = payload(key);
    assert_int_equal(mvz_blocks_put(bs, key, named, &b), 0);
}

static void alloc_named(struct mvz_blocks *bs, struct model *m, unsigned t, uint64_t gap)
{
    uint64_t s = m->next[t] + gap;
    if (s >= MAX_SERIAL)
        return;
    uint64_t key = mvz_heap_block(tids[t], s);
    insert(bs, key, 1);
    m->alive[t][s] = 1;
    m->next[t] = s + 1;
    live_add(m, key, 1);
}

static void alloc_addr(struct mvz_blocks *bs, struct model *m)
{
    unsigned i = (unsigned)(rnd(m) % ADDRS);
    if (m->addr_alive[i])
        return;
    insert(bs, addr_key(i), 0);
    m->addr_alive[i] = 1;
    live_add(m, addr_key(i), 0);
}

/* Releases the live block at index i of the model's list. With `again`,
 * the same name is given to a new block at once, as the replay does when a
 * trace names a live block again (ALLOC_REUSED). */
static void release(struct mvz_blocks *bs, struct model *m, size_t i, int again)
{
    uint64_t key = m->live[i];
    int named = m->live_named[i];
    struct mvz_block b, want = payload(key);
    assert_int_equal(mvz_blocks_take(bs, key, named, &b), 1);
    same(&b, &want);
    assert_false(found(bs, key, named));
    if (again) {
        insert(bs, key, named);
        check_found(bs, key, named);
        return;
    }
    if (named) {
        unsigned t = 0;
        while (tids[t] != mvz_heap_block_tid(key))
            t++;
        m->alive[t][mvz_heap_block_serial(key)] = 0;
    } else {
        m->addr_alive[(key - addr_key(0)) / 16] = 0;
    }
    m->live[i] = m->live[--m->nlive];
    m->live_named[i] = m->live_named[m->nlive];
}

static void count_visit(void *ctx, uint64_t key, const struct mvz_block *b)
{
    size_t *n = ctx;
    struct mvz_block want = payload(key);
    assert_true(key != 0);
    same(b, &want);
    ++*n;
}

/* Every live block is found, every visited block is live, and no dead
 * name of the sample is found. */
static void check_all(struct mvz_blocks *bs, struct model *m)
{
    for (size_t i = 0; i < m->nlive; i++)
        check_found(bs, m->live[i], m->live_named[i]);
    size_t visited = 0;
    mvz_blocks_each(bs, count_visit, &visited);
    assert_int_equal(visited, m->nlive);
    assert_int_equal(mvz_blocks_live(bs), m->nlive);
    for (int k = 0; k < 2000; k++) {
        unsigned t = (unsigned)(rnd(m) % THREADS);
        uint64_t s = m->next[t] ? rnd(m) % m->next[t] : 0;
        if (!m->alive[t][s])
            assert_false(found(bs, mvz_heap_block(tids[t], s), 1));
    }
}

/* steps random operations; most releases take one of the latest blocks
 * (they die young), some a random one (they may have lived long). There
 * are a little more allocations than releases: the live set grows to tens
 * of thousands, and old blocks stay. */
static void run(struct mvz_blocks *bs, unsigned steps, uint64_t seed)
{
    struct model m = {.rng = seed};
    for (unsigned t = 0; t < THREADS; t++)
        assert_non_null(m.alive[t] = calloc(MAX_SERIAL, 1));
    for (unsigned i = 0; i < steps; i++) {
        uint64_t r = rnd(&m) % 1000;
        unsigned t = (unsigned)(rnd(&m) % THREADS);
        if (r < 498)
            alloc_named(bs, &m, t, 0);
        else if (r < 500)
            alloc_named(bs, &m, t, 1 + rnd(&m) % (r == 498 && i % 16 == 0 ? 50000 : 300));
        else if (r < 510)
            alloc_addr(bs, &m);
        else if (m.nlive && r < 900)
            release(bs, &m, m.nlive - 1 - rnd(&m) % (m.nlive < 64 ? m.nlive : 64), 0);
        else if (m.nlive && r < 985)
            release(bs, &m, rnd(&m) % m.nlive, 0);
        else if (m.nlive)
            release(bs, &m, rnd(&m) % m.nlive, 1);
        if (i % 50000 == 0)
            check_all(bs, &m);
    }
    check_all(bs, &m);
    for (unsigned t = 0; t < THREADS; t++)
        free(m.alive[t]);
    free(m.live);
    free(m.live_named);
}

static void test_pages(void **state)
{
    (void)state;
    struct mvz_blocks bs = {0};
    run(&bs, 1500000, 0x1234567);
    /* the test is void without both kinds of page */
    assert_true(bs.nthreads == THREADS);
    size_t dense = 0, sparse = 0;
    for (size_t i = 0; i < bs.nthreads; i++)
        for (size_t p = 0; p < bs.threads[i].npages; p++) {
            const struct mvz_block_page *pg = bs.threads[i].pages[p];
            if (pg && pg != (const struct mvz_block_page *)1) {
                dense += !pg->cap;
                sparse += !!pg->cap;
            }
        }
    assert_true(dense > 0 && sparse > 0);
    mvz_blocks_free(&bs);
}

/* Room for two pages: the other serials go to the hash table. */
static void test_page_limit(void **state)
{
    (void)state;
    struct mvz_blocks bs = {.page_limit = 2};
    run(&bs, 600000, 0x9abcdef);
    assert_true(bs.pages <= 2);
    mvz_blocks_free(&bs);
}

/* A million blocks of one thread, all live: 4 bytes each; pages that
 * empty out become sparse. */
static void test_compact(void **state)
{
    (void)state;
    struct mvz_blocks bs = {0};
    const uint32_t tid = 77;
    const uint64_t n = 1000000;
    for (uint64_t s = 0; s < n; s++) {
        struct mvz_block b = {.size = 32 + s % 16, .stack = 5};
        assert_int_equal(mvz_blocks_put(&bs, mvz_heap_block(tid, s), 1, &b), 0);
    }
    assert_int_equal(mvz_blocks_live(&bs), n);
    assert_true(mvz_blocks_bytes(&bs) < 4 * n + (1u << 20));
    for (uint64_t s = 0; s < n; s++) /* keep one in 64 */
        if (s % 64) {
            struct mvz_block b;
            assert_int_equal(mvz_blocks_take(&bs, mvz_heap_block(tid, s), 1, &b), 1);
        }
    assert_int_equal(mvz_blocks_live(&bs), (n + 63) / 64);
    /* the full pages became sparse: a few bytes a block, and a page's header */
    assert_true(mvz_blocks_bytes(&bs) < 8 * (n / 64) + 64 * (n >> 12) + (1u << 20));
    for (uint64_t s = 0; s < n; s += 64) {
        struct mvz_block b;
        assert_int_equal(mvz_blocks_find(&bs, mvz_heap_block(tid, s), 1, &b), 1);
        assert_int_equal(b.size, 32 + s % 16);
        assert_int_equal(b.stack, 5);
    }
    mvz_blocks_free(&bs);
}

/* Out of memory (a hash table that may not grow, one page), a block that
 * finds no room is refused, and every block ever accepted stays found. */
static void test_out_of_memory(void **state)
{
    (void)state;
    struct mvz_blocks bs = {.page_limit = 1, .tab_limit = 1 << 12};
    const uint32_t tid = 42;
    uint64_t accepted = 0, s = 0;
    for (; s < 20000; s++) {
        struct mvz_block b = payload(mvz_heap_block(tid, s));
        if (mvz_blocks_put(&bs, mvz_heap_block(tid, s), 1, &b) < 0)
            break;
        accepted++;
    }
    assert_true(accepted > 4096 && accepted < 20000); /* the table filled up */
    for (uint64_t i = 0; i < accepted; i++)
        check_found(&bs, mvz_heap_block(tid, i), 1);
    assert_int_equal(mvz_blocks_live(&bs), accepted);
    /* a block in the table dies: there is room again */
    struct mvz_block b;
    assert_int_equal(mvz_blocks_take(&bs, mvz_heap_block(tid, accepted - 1), 1, &b), 1);
    b = payload(mvz_heap_block(tid, s + 1));
    assert_int_equal(mvz_blocks_put(&bs, mvz_heap_block(tid, s + 1), 1, &b), 0);
    check_found(&bs, mvz_heap_block(tid, s + 1), 1);
    mvz_blocks_free(&bs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages),
        cmocka_unit_test(test_page_limit),
        cmocka_unit_test(test_compact),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
