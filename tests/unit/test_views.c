/*
 * test_views.c - unit tests of the pieces behind the report's views:
 * LeakSanitizer-style template matching, suppression rules (built-in ones
 * match only the innermost caller pair), call trees (inclusive and self
 * costs, recursion counted once per stack), grouping and string interning.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/calltree.h"
#include "analysis/group.h"
#include "analysis/select.h"
#include "util/strtab.h"

static struct mvz_frame fr(const char *fn, const char *module)
{
    struct mvz_frame f = {.function = fn, .module = module};
    return f;
}

static void test_template(void **state)
{
    (void)state;
    assert_true(mvz_template_match("parse", "parse_header"));
    assert_true(mvz_template_match("header", "parse_header"));
    assert_true(mvz_template_match("^parse", "parse_header"));
    assert_false(mvz_template_match("^header", "parse_header"));
    assert_true(mvz_template_match("header$", "parse_header"));
    assert_false(mvz_template_match("parse$", "parse_header"));
    assert_true(mvz_template_match("^parse_header$", "parse_header"));
    assert_false(mvz_template_match("^parse_head$", "parse_header"));
    assert_true(mvz_template_match("p*h", "parse_header"));
    assert_true(mvz_template_match("^p*r$", "parse_header"));
    assert_false(mvz_template_match("^h*r$", "parse_header"));
    assert_false(mvz_template_match("r*p", "parse_header")); /* pieces in order */
    assert_true(mvz_template_match("*", "x"));
    assert_false(mvz_template_match("", "x"));
    assert_false(mvz_template_match("x", NULL));
    assert_true(mvz_template_match("^ab*ab$", "abab"));
    assert_false(mvz_template_match("^ab*ab$", "aba")); /* pieces may not overlap */
}

static void test_suppression_rules(void **state)
{
    (void)state;
    struct mvz_select s = {0};
    assert_int_equal(mvz_select_add_builtin_suppressions(&s), 0);
    const char *ld = "/lib64/ld-linux-x86-64.so.2", *cxx = "/usr/lib/libstdc++.so.6";
    /* the emergency pool: libstdc++ called directly by call_init */
    struct mvz_frame pool[] = {fr("??", cxx), fr("call_init", ld), fr("_dl_init", ld)};
    assert_non_null(mvz_select_suppression(&s, pool, 3));
    /* a user library's constructor leaking through std::string: not suppressed */
    struct mvz_frame user[] = {fr("operator new", cxx), fr("std::string::_M_create", cxx),
                               fr("init_plugin", "/opt/libplugin.so"), fr("call_init", ld)};
    assert_null(mvz_select_suppression(&s, user, 4));
    struct mvz_frame dtv[] = {fr("calloc", ld), fr("allocate_dtv", ld), fr("_dl_allocate_tls", ld)};
    struct mvz_suppression *r = mvz_select_suppression(&s, dtv, 3);
    assert_non_null(r);
    assert_string_equal(r->pattern, "_dl_allocate_tls");
    /* filters: globs on function, file, module path or file name */
    assert_int_equal(mvz_select_add_filter(&s, "libplugin*", 0), 0);
    assert_true(mvz_select_keep(&s, user, 4));
    assert_false(mvz_select_keep(&s, dtv, 3));
    assert_int_equal(mvz_select_add_filter(&s, "init_*", 1), 0);
    assert_false(mvz_select_keep(&s, user, 4));
    mvz_select_free(&s);
}

/* The rule that frames f[0..n) get when they come from addresses of
 * sizes[0..k) frames each (inlined calls expand an address into several),
 * matched address by address as a report does. */
static struct mvz_suppression *by_addresses(struct mvz_select *s, const struct mvz_frame *f,
                                            const size_t *sizes, size_t k)
{
    struct mvz_supp_bits b[8];
    for (size_t i = 0, at = 0; i < k; at += sizes[i++])
        assert_int_equal(mvz_select_supp_bits(s, f + at, sizes[i], &b[i]), 0);
    return mvz_select_suppression_bits(s, b, k);
}

/* Matching by address gives the rule matching the whole stack gives,
 * however the frames are spread over addresses. */
static void test_suppression_by_address(void **state)
{
    (void)state;
    struct mvz_select s = {0};
    assert_int_equal(mvz_select_add_builtin_suppressions(&s), 0);
    const char *ld = "/lib64/ld-linux-x86-64.so.2", *cxx = "/usr/lib/libstdc++.so.6";
    struct mvz_frame pool[] = {fr("??", cxx), fr("call_init", ld), fr("_dl_init", ld)};
    struct mvz_frame user[] = {fr("operator new", cxx), fr("std::string::_M_create", cxx),
                               fr("init_plugin", "/opt/libplugin.so"), fr("call_init", ld)};
    struct mvz_frame dtv[] = {fr("calloc", ld), fr("allocate_dtv", ld), fr("_dl_allocate_tls", ld)};
    const struct {
        const struct mvz_frame *f;
        size_t n;
    } stacks[] = {{pool, 3}, {user, 4}, {dtv, 3}};
    const size_t splits[][4] = {
        {1, 1, 1, 1}, {2, 1, 1, 0}, {1, 2, 1, 0}, {0, 1, 2, 1}, {3, 1, 0, 0}};
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < sizeof(splits) / sizeof(splits[0]); j++) {
            size_t sizes[5], k = 0, sum = 0;
            for (size_t m = 0; m < 4 && sum < stacks[i].n; m++) {
                size_t take = splits[j][m] < stacks[i].n - sum ? splits[j][m] : stacks[i].n - sum;
                sizes[k++] = take;
                sum += take;
            }
            if (sum < stacks[i].n)
                sizes[k++] = stacks[i].n - sum;
            assert_ptr_equal(by_addresses(&s, stacks[i].f, sizes, k),
                             mvz_select_suppression(&s, stacks[i].f, stacks[i].n));
        }
    /* the two-frame rule needs the pattern on the first frame */
    const size_t one_each[] = {1, 1, 1};
    assert_non_null(by_addresses(&s, pool, one_each, 3));
    struct mvz_frame late[] = {fr("f", "/opt/a.so"), fr("??", cxx), fr("call_init", ld)};
    assert_null(by_addresses(&s, late, one_each, 3));
    mvz_select_free(&s);
}

static void test_calltree(void **state)
{
    (void)state;
    struct mvz_calltree t;
    assert_int_equal(mvz_calltree_init(&t, 1), 0);
    /* main -> f -> f -> g allocates 100 (f recursive); main -> h allocates 5 */
    struct mvz_frame s1[] = {fr("g", "m"), fr("f", "m"), fr("f", "m"), fr("main", "m")};
    struct mvz_frame s2[] = {fr("h", "m"), fr("main", "m")};
    uint64_t c1[MVZ_COST_COUNT] = {100, 0, 1, 100, 0}, c2[MVZ_COST_COUNT] = {5, 5, 1, 5, 0};
    assert_int_equal(mvz_calltree_add(&t, s1, 4, c1), 0);
    assert_int_equal(mvz_calltree_add(&t, s2, 2, c2), 0);
    mvz_calltree_sort(&t, MVZ_COST_PEAK);
    const struct mvz_tree_node *root = &t.nodes[0];
    assert_int_equal(root->incl[MVZ_COST_PEAK], 105);
    const struct mvz_tree_node *main_ = &t.nodes[root->first_child];
    assert_string_equal(mvz_strtab_get(&t.names, main_->func), "main");
    assert_int_equal(main_->incl[MVZ_COST_PEAK], 105);
    assert_int_equal(main_->self[MVZ_COST_PEAK], 0);
    const struct mvz_tree_node *f = &t.nodes[main_->first_child]; /* sorted: f (100) before h */
    assert_string_equal(mvz_strtab_get(&t.names, f->func), "f");
    assert_int_equal(f->incl[MVZ_COST_PEAK], 100);
    const struct mvz_tree_node *h = &t.nodes[f->next_sibling];
    assert_string_equal(mvz_strtab_get(&t.names, h->func), "h");
    assert_int_equal(h->self[MVZ_COST_LEAKED], 5);
    const struct mvz_tree_node *f2 = &t.nodes[f->first_child];
    const struct mvz_tree_node *g = &t.nodes[f2->first_child];
    assert_int_equal(f2->incl[MVZ_COST_PEAK], 100);
    assert_int_equal(g->self[MVZ_COST_PEAK], 100);
    assert_int_equal(t.n, 6); /* root, main, f, f, g, h */
    mvz_calltree_free(&t);

    /* bottom-up: g is a root child, its caller chain f, f, main */
    assert_int_equal(mvz_calltree_init(&t, 0), 0);
    assert_int_equal(mvz_calltree_add(&t, s1, 4, c1), 0);
    assert_int_equal(mvz_calltree_add(&t, s2, 2, c2), 0);
    mvz_calltree_sort(&t, MVZ_COST_ALLOCATIONS);
    int roots = 0;
    for (uint32_t k = t.nodes[0].first_child; k; k = t.nodes[k].next_sibling)
        roots++;
    assert_int_equal(roots, 2);
    mvz_calltree_free(&t);
}

static void test_group_and_strtab(void **state)
{
    (void)state;
    struct mvz_strtab st = {0};
    char name[32];
    uint32_t first = mvz_strtab_intern(&st, "x0");
    for (int i = 0; i < 5000; i++) { /* grows past several rehashes */
        snprintf(name, sizeof(name), "x%d", i);
        assert_int_equal(mvz_strtab_intern(&st, name), first + (uint32_t)i);
    }
    assert_string_equal(mvz_strtab_get(&st, first + 4999), "x4999");
    assert_int_equal(mvz_strtab_intern(&st, "x17"), first + 17);
    mvz_strtab_free(&st);

    struct mvz_grouping g = {.by = MVZ_BY_FUNCTION};
    struct mvz_frame a[] = {fr("alloc_node", "/bin/p"), fr("main", "/bin/p")};
    struct mvz_frame b[] = {fr("alloc_node", "/bin/p"), fr("other", "/bin/p")};
    struct mvz_site s1 = {.stack = 2, .allocations = 3, .leaked_bytes = 10, .peak_bytes = 7};
    struct mvz_site s2 = {.stack = 3, .allocations = 4, .leaked_bytes = 1, .peak_bytes = 9};
    assert_int_equal(mvz_group_add(&g, a, 2, &s1), 0);
    assert_int_equal(mvz_group_add(&g, b, 2, &s2), 0);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.groups[0].nsites, 2);
    assert_int_equal(g.groups[0].s.allocations, 7);
    assert_int_equal(g.groups[0].s.leaked_bytes, 11);
    assert_int_equal(g.groups[0].s.peak_bytes, 0); /* does not add up */
    assert_string_equal(mvz_group_name(&g, &g.groups[0]), "alloc_node  [p]");
    mvz_grouping_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template),
        cmocka_unit_test(test_suppression_rules),
        cmocka_unit_test(test_suppression_by_address),
        cmocka_unit_test(test_calltree),
        cmocka_unit_test(test_group_and_strtab),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
