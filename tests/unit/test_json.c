/*
 * test_json.c - the JSON writer (src/util/json.h) stays valid however deep
 * a document nests: a call tree of the deepest stack a trace keeps nests
 * two levels a frame, past any small fixed limit. Each document is read
 * back with jansson and compared with what was written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "util/json.h"

/* A chain `depth` objects deep, each {"name": i, "children": [child, i]}:
 * every level has siblings, so every level's comma state counts. */
static void write_chain(struct mvz_json *j, int i, int depth)
{
    mvz_json_begin_object(j);
    mvz_json_key(j, "name");
    mvz_json_int(j, i);
    mvz_json_key(j, "children");
    mvz_json_begin_array(j);
    if (i + 1 < depth)
        write_chain(j, i + 1, depth);
    mvz_json_int(j, i);
    mvz_json_end_array(j);
    mvz_json_end_object(j);
}

static void check_chain(json_t *o, int depth)
{
    for (int i = 0; i < depth; i++) {
        assert_true(json_is_object(o));
        assert_int_equal(json_integer_value(json_object_get(o, "name")), i);
        json_t *c = json_object_get(o, "children");
        assert_int_equal(json_array_size(c), i + 1 < depth ? 2 : 1);
        assert_int_equal(json_integer_value(json_array_get(c, json_array_size(c) - 1)), i);
        o = json_array_get(c, 0);
    }
}

static void deep(int depth)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct mvz_json j;
    mvz_json_init(&j, f);
    mvz_json_begin_array(&j);
    write_chain(&j, 0, depth);
    mvz_json_string(&j, "after");
    mvz_json_end_array(&j);
    fclose(f);
    json_error_t err;
    json_t *doc = json_loadb(buf, len, 0, &err);
    if (!doc)
        fail_msg("depth %d: invalid JSON: %s at %d", depth, err.text, err.position);
    assert_int_equal(json_array_size(doc), 2);
    check_chain(json_array_get(doc, 0), depth);
    assert_string_equal(json_string_value(json_array_get(doc, 1)), "after");
    json_decref(doc);
    free(buf);
}

static void test_shallow(void **state)
{
    (void)state;
    deep(3);
}

/* 1,800 levels: the deepest jansson reads back (2,048 at most), far past
 * the 64 levels the writer once kept, and a call tree of 900 frames. */
static void test_as_deep_as_a_call_tree(void **state)
{
    (void)state;
    deep(900);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shallow),
        cmocka_unit_test(test_as_deep_as_a_call_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
