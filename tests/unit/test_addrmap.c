/*
 * test_addrmap.c - unit tests of the agent's address table
 * (src/agent/addrmap.c) against a plain model: blocks added in address
 * order (zones filled the way an allocator carves fresh memory) and at
 * random, released in and out of order, with every kind of block that
 * does not fit an entry (a misaligned address, a size of 4 KiB or more, a
 * stack id of 2^20 or more, more threads with live blocks than there are
 * thread indexes). After each phase every live block must be found with
 * its own contents, no released one may be, and the map's count and
 * enumeration must agree with the model.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* The map's static functions and state, for its invariants. */
#include "agent/addrmap.c"

#define BASE 0x7f0000000000ull

struct live {
    uintptr_t addr;
    struct mvz_addr_block b;
};

struct model {
    struct live *v;
    size_t n, cap;
    uint64_t rng;
};

static uint64_t rnd(struct model *md)
{
    md->rng ^= md->rng << 13;
    md->rng ^= md->rng >> 7;
    md->rng ^= md->rng << 17;
    return md->rng;
}

static void same_block(const struct mvz_addr_block *a, const struct mvz_addr_block *b)
{
    assert_int_equal(a->tid, b->tid);
    assert_int_equal(a->serial, b->serial);
    assert_int_equal(a->size, b->size);
    assert_int_equal(a->stack, b->stack);
}

static void model_add(struct model *md, uintptr_t addr, struct mvz_addr_block b)
{
    if (md->n == md->cap) {
        md->cap = md->cap ? md->cap * 2 : 1024;
        md->v = realloc(md->v, md->cap * sizeof(*md->v));
        assert_non_null(md->v);
    }
    md->v[md->n++] = (struct live){addr, b};
    assert_int_equal(mvz_addrmap_add(addr, &b), 0);
}

/* Takes the model's i-th block out of both. */
static void model_take(struct model *md, size_t i)
{
    struct mvz_addr_block got;
    assert_int_equal(mvz_addrmap_take(md->v[i].addr, &got), 1);
    same_block(&got, &md->v[i].b);
    assert_int_equal(mvz_addrmap_take(md->v[i].addr, &got), 0);
    md->v[i] = md->v[--md->n];
}

static struct mvz_addr_block block(struct model *md, uint32_t tid)
{
    struct mvz_addr_block b;
    memset(&b, 0, sizeof(b));
    b.tid = tid;
    b.serial = rnd(md) & ((1ull << 40) - 1);
    uint64_t r = rnd(md);
    b.size = r % 100 == 0 ? 4096 + r % 100000 : r % 600;
    b.stack = r % 97 == 0 ? (1u << 20) + (uint32_t)(r % 1000) : (uint32_t)(r >> 40) % 50000 + 2;
    return b;
}

static int by_addr(const void *a, const void *b)
{
    uintptr_t x = ((const struct live *)a)->addr, y = ((const struct live *)b)->addr;
    return x < y ? -1 : x > y;
}

static int find_count;
/* ctx: the model's blocks sorted by address */
static void count_each(void *ctx, uintptr_t addr, const struct mvz_addr_block *b)
{
    const struct model *sorted = ctx;
    struct live key = {.addr = addr};
    const struct live *l = bsearch(&key, sorted->v, sorted->n, sizeof(key), by_addr);
    if (!l)
        fail_msg("enumerated a block the model does not have: %#lx", (unsigned long)addr);
    same_block(b, &l->b);
    find_count++;
}

/* In address order: the i-th block enumerated is the model's i-th. */
static void ordered_each(void *ctx, uintptr_t addr, const struct mvz_addr_block *b)
{
    const struct model *sorted = ctx;
    size_t i = (size_t)find_count;
    if (i >= sorted->n || sorted->v[i].addr != addr)
        fail_msg("block %zu out of address order: %#lx", i, (unsigned long)addr);
    same_block(b, &sorted->v[i].b);
    find_count++;
}

/* Every table keeps the Robin Hood order and its load bound, and every
 * spilled block is counted in its zone. */
static void check_tables(void)
{
    size_t used = 0, spilled = 0;
    for (size_t i = 0; i < m.sp_cap; i++)
        if (m.sp[i].addr) {
            struct zone *z = zone_find(m.sp[i].addr >> ZONE_SHIFT, 0);
            assert_non_null(z);
            assert_true(z->spilled > 0);
        }
    for (size_t i = 0; i < m.dir_cap; i++) {
        const struct zone *z = &m.dir[i];
        if (!z->no1)
            continue;
        spilled += z->spilled;
        uint32_t n = 0;
        for (uint32_t p = 0; p < z->cap; p++) {
            if (!z->tab[p].thread1)
                continue;
            n++;
            uint32_t prev = p ? p - 1 : z->cap - 1;
            uint32_t d = dist(p, home(z->tab[p].off, z->cap), z->cap);
            if (d > 0) /* a displaced entry follows an occupied slot no closer to home */
                assert_true(z->tab[prev].thread1 &&
                            dist(prev, home(z->tab[prev].off, z->cap), z->cap) + 1 >= d);
            assert_int_equal(rh_find(z, z->tab[p].off), p);
        }
        assert_int_equal(n, z->used);
        assert_true(8 * (uint64_t)z->used <= 7 * (uint64_t)z->cap);
        used += n;
    }
    assert_int_equal(used + m.spilled, m.live);
    assert_int_equal(spilled, m.spilled);
}

static void check_all(struct model *md)
{
    struct mvz_addr_block got;
    for (size_t i = 0; i < md->n; i++) {
        assert_int_equal(mvz_addrmap_get(md->v[i].addr, &got), 1);
        same_block(&got, &md->v[i].b);
    }
    struct mvz_addrmap_stats s;
    mvz_addrmap_stats(&s);
    assert_int_equal(s.live, md->n);
    struct model sorted = {.v = malloc((md->n + 1) * sizeof(*md->v)), .n = md->n};
    assert_non_null(sorted.v);
    memcpy(sorted.v, md->v, md->n * sizeof(*md->v));
    qsort(sorted.v, sorted.n, sizeof(*sorted.v), by_addr);
    find_count = 0;
    mvz_addrmap_each(count_each, &sorted);
    assert_int_equal(find_count, md->n);
    find_count = 0;
    assert_int_equal(mvz_addrmap_each_ordered(ordered_each, &sorted), 0);
    assert_int_equal(find_count, md->n);
    free(sorted.v);
    check_tables();
}

/* Zones filled in address order, then emptied in and out of order: every
 * table grows through every size and shrinks back, and zones go. */
static void test_in_order(void **state)
{
    (void)state;
    struct model md = {.rng = 88172645463325252ull};
    uintptr_t a = BASE;
    for (int i = 0; i < 300000; i++) {
        struct mvz_addr_block b = block(&md, 1000);
        b.size = 32 + i % 16;
        b.stack = 7;
        model_add(&md, a, b);
        a += 48 + 16 * (i % 2);
    }
    check_all(&md);
    struct mvz_addrmap_stats s;
    mvz_addrmap_stats(&s);
    assert_int_equal(s.spilled, 0);
    /* 12-byte entries, tables at least 70% full, little else */
    assert_true(s.bytes < 12.0 / 0.70 * s.live + (1u << 20));
    while (md.n > 150000)
        model_take(&md, md.n - 1);
    for (int i = 0; i < 100000; i++)
        model_take(&md, rnd(&md) % md.n);
    check_all(&md);
    while (md.n)
        model_take(&md, 0);
    check_all(&md);
    mvz_addrmap_stats(&s);
    assert_int_equal(s.zones, 0);
    free(md.v);
    mvz_addrmap_clear();
}

/* Random addresses over a few zones, many threads (more than there are
 * thread indexes), blocks that spill, misaligned addresses. */
static void test_random(void **state)
{
    (void)state;
    struct model md = {.rng = 0x9E3779B97F4A7C15ull};
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < 5000; i++) {
            uintptr_t addr = BASE + (rnd(&md) % (8u << 20));
            if (rnd(&md) % 50)
                addr &= ~(uintptr_t)7;
            struct mvz_addr_block got;
            if (mvz_addrmap_get(addr, &got))
                continue; /* live already */
            uint32_t tid = 2 + (uint32_t)(rnd(&md) % (round < 20 ? 40 : 400));
            model_add(&md, addr, block(&md, tid));
        }
        for (int i = 0; i < 3000 && md.n; i++)
            model_take(&md, rnd(&md) % md.n);
        check_all(&md);
    }
    struct mvz_addrmap_stats s;
    mvz_addrmap_stats(&s);
    assert_true(s.spilled > 0);
    mvz_addrmap_clear();
    mvz_addrmap_stats(&s);
    assert_int_equal(s.live, 0);
    for (size_t i = 0; i < md.n; i++) {
        struct mvz_addr_block got;
        assert_int_equal(mvz_addrmap_get(md.v[i].addr, &got), 0);
    }
    free(md.v);
}

/* A thread index is reused once its thread has no live block, and the
 * blocks of its new thread say so. */
static void test_thread_reuse(void **state)
{
    (void)state;
    struct model md = {.rng = 12345};
    for (uint32_t t = 0; t < 3 * MAX_THREADS; t++) {
        struct mvz_addr_block b = {.tid = 10 + t, .serial = t, .size = 16, .stack = 3};
        model_add(&md, BASE + 64 * t, b);
        if (t % 3)
            model_take(&md, md.n - 1);
    }
    check_all(&md);
    struct mvz_addrmap_stats s;
    mvz_addrmap_stats(&s);
    assert_int_equal(s.spilled, 0); /* a third live at once: fewer than the indexes */
    while (md.n)
        model_take(&md, 0);
    free(md.v);
    mvz_addrmap_clear();
}

/* An emptied zone gets a table of its old size at once when it fills
 * again, and zones left without a table do not pile up in the directory. */
static void test_zone_reuse(void **state)
{
    (void)state;
    struct model md = {.rng = 777};
    for (int i = 0; i < 5000; i++) {
        struct mvz_addr_block b = {.tid = 9, .serial = (uint64_t)i, .size = 40, .stack = 2};
        model_add(&md, BASE + 48 * (uintptr_t)i, b);
    }
    struct zone *z = zone_find(BASE >> ZONE_SHIFT, 0);
    assert_non_null(z);
    uint32_t cap = z->cap;
    while (md.n)
        model_take(&md, md.n - 1);
    z = zone_find(BASE >> ZONE_SHIFT, 0);
    assert_non_null(z);
    assert_int_equal(z->cap, 0);
    struct mvz_addr_block b = {.tid = 9, .serial = 5000, .size = 40, .stack = 2};
    model_add(&md, BASE, b);
    assert_int_equal(zone_find(BASE >> ZONE_SHIFT, 0)->cap, cap);
    model_take(&md, 0);
    for (int i = 0; i < 4000; i++) { /* a block in each of 4,000 zones, gone at once */
        b.serial = (uint64_t)i;
        model_add(&md, BASE + ((uintptr_t)(i + 1) << ZONE_SHIFT), b);
        model_take(&md, 0);
    }
    check_all(&md);
    assert_true(m.nzones <= m.ntables + 1024 + 1);
    free(md.v);
    mvz_addrmap_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_thread_reuse),
        cmocka_unit_test(test_zone_reuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
