/*
 * test_leaks.c - unit tests of memcheck's leak kinds on hand-built snapshot
 * graphs (analysis/leaks.c): the nine cases of memcheck's manual, cycles,
 * a later clique taking an earlier one in, a block reached first through
 * an interior pointer and then a start pointer, heuristics, and blocks the
 * program asked memviz to ignore.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/leaks.h"
#include "trace/format.h"

#define MAXB 16
#define MAXE 64

/* A graph under construction: blocks by index (in address order), edges
 * given per block in any order. */
struct g {
    struct mvz_snapshot s;
    struct mvz_snap_block b[MAXB];
    size_t fe[MAXB + 1];
    struct mvz_snap_edge e[MAXE], re[MAXE];
    uint32_t from[MAXE];
    size_t ne;
};

static void g_init(struct g *g, size_t nblocks, const uint64_t *sizes)
{
    memset(g, 0, sizeof(*g));
    for (size_t i = 0; i < nblocks; i++)
        g->b[i] = (struct mvz_snap_block){.addr = 0x1000 * (i + 1), .size = sizes[i]};
    g->s.nblocks = nblocks;
}

static void edge(struct g *g, uint32_t from, uint32_t to, int kind)
{
    g->from[g->ne] = from;
    g->e[g->ne++] = (struct mvz_snap_edge){to, (uint8_t)kind, 0};
}

static void root(struct g *g, uint32_t to, int kind)
{
    g->re[g->s.nroot_edges++] = (struct mvz_snap_edge){to, (uint8_t)kind, 0};
}

/* Sorts the edges by source into the snapshot's layout. */
static const struct mvz_snapshot *g_done(struct g *g)
{
    static struct mvz_snap_edge sorted[MAXE];
    size_t k = 0;
    for (uint32_t b = 0; b < g->s.nblocks; b++) {
        g->fe[b] = k;
        for (size_t i = 0; i < g->ne; i++)
            if (g->from[i] == b)
                sorted[k++] = g->e[i];
    }
    g->fe[g->s.nblocks] = k;
    g->s.blocks = g->b;
    g->s.first_edge = g->fe;
    g->s.edges = sorted;
    g->s.nedges = k;
    g->s.root_edges = g->re;
    return &g->s;
}

static void expect(const struct mvz_snapshot *s, const int *kinds)
{
    struct mvz_leaks l;
    assert_int_equal(mvz_leaks_classify(s, &l), 0);
    for (size_t i = 0; i < s->nblocks; i++)
        assert_int_equal(l.kind[i], kinds[i]);
    mvz_leaks_free(&l);
}

enum {
    R = MVZ_LEAK_REACHABLE,
    P = MVZ_LEAK_POSSIBLE,
    I = MVZ_LEAK_INDIRECT,
    D = MVZ_LEAK_DEFINITE
};
enum { S = MVZ_EDGE_START, IN = MVZ_EDGE_INTERIOR };

/* memcheck's manual, "Leak detection": AAA is block 0, BBB block 1. */
static void test_nine_cases(void **state)
{
    (void)state;
    static const uint64_t sz[2] = {10, 20};
    struct g g;
    g_init(&g, 2, sz); /* (1) RRR ---> BBB */
    root(&g, 1, S);
    expect(g_done(&g), (int[]){D, R});
    g_init(&g, 2, sz); /* (2) RRR ---> AAA ---> BBB */
    root(&g, 0, S);
    edge(&g, 0, 1, S);
    expect(g_done(&g), (int[]){R, R});
    g_init(&g, 2, sz); /* (3) RRR BBB */
    expect(g_done(&g), (int[]){D, D});
    g_init(&g, 2, sz); /* (4) RRR AAA ---> BBB */
    edge(&g, 0, 1, S);
    expect(g_done(&g), (int[]){D, I});
    g_init(&g, 2, sz); /* (5) RRR ------?-----> BBB */
    root(&g, 1, IN);
    expect(g_done(&g), (int[]){D, P});
    g_init(&g, 2, sz); /* (6) RRR ---> AAA -?-> BBB */
    root(&g, 0, S);
    edge(&g, 0, 1, IN);
    expect(g_done(&g), (int[]){R, P});
    g_init(&g, 2, sz); /* (7) RRR -?-> AAA ---> BBB */
    root(&g, 0, IN);
    edge(&g, 0, 1, S);
    expect(g_done(&g), (int[]){P, P});
    g_init(&g, 2, sz); /* (8) RRR -?-> AAA -?-> BBB */
    root(&g, 0, IN);
    edge(&g, 0, 1, IN);
    expect(g_done(&g), (int[]){P, P});
    g_init(&g, 2, sz); /* (9) RRR AAA -?-> BBB */
    edge(&g, 0, 1, IN);
    expect(g_done(&g), (int[]){D, I});
}

static void test_cliques(void **state)
{
    (void)state;
    static const uint64_t sz[4] = {100, 200, 300, 400};
    struct g g;
    struct mvz_leaks l;
    /* a cycle: the lower address leads */
    g_init(&g, 2, sz);
    edge(&g, 0, 1, S);
    edge(&g, 1, 0, S);
    assert_int_equal(mvz_leaks_classify(g_done(&g), &l), 0);
    assert_int_equal(l.kind[0], D);
    assert_int_equal(l.kind[1], I);
    assert_int_equal(l.indirect_bytes[0], 200);
    assert_int_equal(l.t.bytes[D], 100);
    assert_int_equal(l.t.bytes[I], 200);
    mvz_leaks_free(&l);
    /* 3 -> 0 -> 1, 2 alone: 0 leads {1} first, then 3 takes 0 and its clique */
    g_init(&g, 4, sz);
    edge(&g, 3, 0, S);
    edge(&g, 0, 1, S);
    assert_int_equal(mvz_leaks_classify(g_done(&g), &l), 0);
    assert_int_equal(l.kind[0], I);
    assert_int_equal(l.kind[1], I);
    assert_int_equal(l.kind[2], D);
    assert_int_equal(l.kind[3], D);
    assert_int_equal(l.indirect_bytes[3], 300);
    assert_int_equal(l.indirect_blocks[3], 2);
    assert_int_equal(l.indirect_bytes[0], 0);
    assert_int_equal(l.leader[1], 3);
    assert_int_equal(l.t.bytes[D], 300 + 400);
    assert_int_equal(l.t.blocks[I], 2);
    mvz_leaks_free(&l);
}

static void test_upgrade_and_heuristics(void **state)
{
    (void)state;
    static const uint64_t sz[3] = {10, 20, 30};
    struct g g;
    struct mvz_leaks l;
    /* reached through an interior pointer first, then a start pointer:
     * reachable, and what it points to too */
    g_init(&g, 3, sz);
    root(&g, 0, IN);
    root(&g, 0, S);
    edge(&g, 0, 1, S);
    expect(g_done(&g), (int[]){R, R, D});
    /* an interior pointer a heuristic accepts reaches like a start pointer */
    g_init(&g, 3, sz);
    root(&g, 1, MVZ_EDGE_STDSTRING);
    edge(&g, 1, 2, S);
    assert_int_equal(mvz_leaks_classify(g_done(&g), &l), 0);
    assert_int_equal(l.kind[1], R);
    assert_int_equal(l.kind[2], R);
    assert_int_equal(l.t.heuristic_blocks[0], 1);
    assert_int_equal(l.t.heuristic_bytes[0], 20);
    mvz_leaks_free(&l);
    /* an ignored block is held, and so is what it points to */
    g_init(&g, 3, sz);
    g.b[0].flags = MVZ_SNAP_BLOCK_IGNORED;
    edge(&g, 0, 2, S);
    expect(g_done(&g), (int[]){R, D, R});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nine_cases),
        cmocka_unit_test(test_cliques),
        cmocka_unit_test(test_upgrade_and_heuristics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
