/*
 * test_dominators.c - unit tests of the dominator tree
 * (analysis/dominators.c) on graphs with known answers: the example of
 * Lengauer and Tarjan's paper, a diamond, unreached nodes, and a chain of a
 * million nodes (deeper than any recursion could go); and of what a
 * snapshot's roots and sites retain (analysis/retain.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/dominators.h"
#include "analysis/retain.h"
#include "trace/format.h"

/* A graph from an edge list. */
struct eg {
    struct mvz_graph g;
    size_t *first;
    uint32_t *succ;
};

static void eg_make(struct eg *e, uint32_t n, const uint32_t (*edges)[2], size_t m)
{
    e->first = calloc((size_t)n + 1, sizeof(*e->first));
    e->succ = malloc((m ? m : 1) * sizeof(*e->succ));
    assert_non_null(e->first);
    assert_non_null(e->succ);
    for (size_t i = 0; i < m; i++)
        e->first[edges[i][0] + 1]++;
    for (uint32_t v = 0; v < n; v++)
        e->first[v + 1] += e->first[v];
    size_t *fill = malloc(((size_t)n + 1) * sizeof(*fill));
    assert_non_null(fill);
    memcpy(fill, e->first, ((size_t)n + 1) * sizeof(*fill));
    for (size_t i = 0; i < m; i++)
        e->succ[fill[edges[i][0]]++] = edges[i][1];
    free(fill);
    e->g = (struct mvz_graph){n, e->first, e->succ};
}

static void eg_free(struct eg *e)
{
    free(e->first);
    free(e->succ);
}

enum { R, A, B, C, D, E, F, G, H, I, J, K, L, NPAPER };

static void test_paper(void **state)
{
    (void)state;
    static const uint32_t edges[][2] = {
        {R, A}, {R, B}, {R, C}, {A, D}, {B, A}, {B, D}, {B, E}, {C, F}, {C, G}, {D, L}, {E, H},
        {F, I}, {G, I}, {G, J}, {H, E}, {H, K}, {I, K}, {J, I}, {K, I}, {K, R}, {L, H},
    };
    static const uint32_t want[NPAPER] = {R, R, R, R, R, R, C, C, R, R, G, R, D};
    struct eg e;
    eg_make(&e, NPAPER, edges, sizeof(edges) / sizeof(edges[0]));
    uint32_t idom[NPAPER], order[NPAPER], n = 0;
    assert_int_equal(mvz_dominators(&e.g, R, idom, order, &n), 0);
    assert_int_equal(n, NPAPER);
    for (int v = 0; v < NPAPER; v++)
        assert_int_equal(idom[v], want[v]);
    assert_int_equal(order[0], R);
    eg_free(&e);
}

static void test_diamond_and_unreached(void **state)
{
    (void)state;
    /* 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 3 -> 4; 5 -> 4 (5 unreached) */
    static const uint32_t edges[][2] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}, {5, 4}};
    struct eg e;
    eg_make(&e, 6, edges, 6);
    uint32_t idom[6], order[6], n = 0;
    assert_int_equal(mvz_dominators(&e.g, 0, idom, order, &n), 0);
    assert_int_equal(n, 5);
    assert_int_equal(idom[0], 0);
    assert_int_equal(idom[1], 0);
    assert_int_equal(idom[2], 0);
    assert_int_equal(idom[3], 0);
    assert_int_equal(idom[4], 3);
    assert_int_equal(idom[5], MVZ_DOM_NONE);
    eg_free(&e);
}

static void test_deep_chain(void **state)
{
    (void)state;
    const uint32_t n = 1000000;
    uint32_t(*edges)[2] = malloc((size_t)n * sizeof(*edges));
    assert_non_null(edges);
    for (uint32_t v = 0; v + 1 < n; v++) {
        edges[v][0] = v;
        edges[v][1] = v + 1;
    }
    edges[n - 1][0] = n - 1; /* and a back edge to the head */
    edges[n - 1][1] = 0;
    struct eg e;
    eg_make(&e, n, (const uint32_t(*)[2])edges, n);
    uint32_t *idom = malloc(n * sizeof(*idom)), *order = malloc(n * sizeof(*order)), got = 0;
    assert_non_null(idom);
    assert_non_null(order);
    assert_int_equal(mvz_dominators(&e.g, 0, idom, order, &got), 0);
    assert_int_equal(got, n);
    for (uint32_t v = 1; v < n; v++)
        if (idom[v] != v - 1)
            fail_msg("idom[%u] = %u", v, idom[v]);
    free(idom);
    free(order);
    free(edges);
    eg_free(&e);
}

/* retain.c on a small snapshot: five blocks, a global root and a stack
 * root; retained sizes per root, per block and per stack, suspects, and a
 * shortest path. */
static void test_retain(void **state)
{
    (void)state;
    struct mvz_snap_block blocks[5] = {
        {.addr = 0x1000, .size = 10, .stack = 7}, {.addr = 0x2000, .size = 20, .stack = 7},
        {.addr = 0x3000, .size = 30, .stack = 8}, {.addr = 0x4000, .size = 40, .stack = 9},
        {.addr = 0x5000, .size = 50, .stack = 9},
    };
    /* 0 -> 1 (+8), 0 -> 2, 0 -> 4, 1 -> 2, 3 -> 4 */
    struct mvz_snap_edge edges[5] = {{1, MVZ_EDGE_START, 8},
                                     {2, MVZ_EDGE_START, 16},
                                     {4, MVZ_EDGE_START, 24},
                                     {2, MVZ_EDGE_START, 0},
                                     {4, MVZ_EDGE_START, 0}};
    size_t first[6] = {0, 3, 4, 4, 5, 5};
    struct mvz_snap_edge root_edges[2] = {{0, MVZ_EDGE_START, 0}, {3, MVZ_EDGE_START, 8}};
    struct mvz_snapshot s = {.blocks = blocks,
                             .nblocks = 5,
                             .first_edge = first,
                             .edges = edges,
                             .nedges = 5,
                             .root_edges = root_edges,
                             .nroot_edges = 2};
    uint32_t group[2] = {0, 1};
    uint8_t weak[2] = {0, 1}; /* root 1 is a stack */
    struct mvz_retain r;
    assert_int_equal(mvz_retain_build(&s, group, 2, weak, &r), 0);
    assert_int_equal(r.retained[5], 60); /* the global: blocks 0, 1, 2 */
    assert_int_equal(r.retained_n[5], 3);
    assert_int_equal(r.retained[6], 40);  /* the stack: block 3 */
    assert_int_equal(r.retained[7], 150); /* the virtual root: everything */
    assert_int_equal(r.idom[4], 7);       /* both roots reach it: neither retains it */
    assert_int_equal(r.idom[2], 0);
    assert_int_equal(r.suspect[3], 1);
    assert_int_equal(r.suspect[4], 0);
    assert_int_equal(r.bfs_parent[1], 0); /* root -> 0 -> 1, through offset 8 */
    uint64_t off = 0;
    size_t re = 0;
    assert_int_equal(mvz_retain_path_step(&r, 1, &off, &re), 0);
    assert_int_equal(off, 8);
    assert_int_equal(mvz_retain_path_step(&r, 3, &off, &re), 1);
    assert_int_equal(re, 1);
    uint64_t bytes[10] = {0}, n[10] = {0};
    assert_int_equal(mvz_retain_by_stack(&r, bytes, n, 10), 0);
    assert_int_equal(bytes[7], 60);
    assert_int_equal(bytes[8], 30);
    assert_int_equal(bytes[9], 90);
    uint64_t rb = 0, rn = 0;
    assert_int_equal(mvz_retain_reachable(&r, 6, &rb, &rn), 0);
    assert_int_equal(rb, 90); /* the stack reaches 3 and 4 */
    mvz_retain_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paper),
        cmocka_unit_test(test_diamond_and_unreached),
        cmocka_unit_test(test_deep_chain),
        cmocka_unit_test(test_retain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
