/*
 * mvzplugin - the shared library that the "dlopen" test program loads,
 * calls and unloads. Built -shared -fPIC -g -O0 into
 * build/tests/programs/libmvzplugin.so (rule in tests/programs/flags.mk).
 *
 *   plugin_init  malloc(1000) in the library's constructor, never freed:
 *                it runs inside dlopen, so memviz's own dlopen wrapper is on
 *                the stack between main and the constructor (the unwinder
 *                must leave it out)
 *   plugin_leak  4 x malloc(512), never freed: 4 allocations, 2,048 bytes,
 *                all leaked (4 blocks)
 *   plugin_temp  malloc(300), freed at once: 1 allocation, temporary
 */
#include <stdlib.h>
#include <string.h>

static void *kept[4];
static void *at_load;

__attribute__((constructor, noinline)) static void plugin_init(void)
{
    at_load = malloc(1000);
    if (!at_load)
        abort();
    memset(at_load, 1, 1000);
}

__attribute__((noinline)) void plugin_leak(void)
{
    for (int i = 0; i < 4; i++) {
        kept[i] = malloc(512);
        if (!kept[i])
            abort();
        memset(kept[i], i, 512);
    }
}

__attribute__((noinline)) int plugin_temp(void)
{
    volatile char *p = malloc(300);
    if (!p)
        abort();
    p[0] = 3;
    int r = p[0];
    free((void *)p);
    return r;
}

int plugin_run(void)
{
    plugin_leak();
    return plugin_temp();
}
