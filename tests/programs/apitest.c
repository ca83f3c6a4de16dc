/*
 * apitest - include/memviz.h's calls, linked against libmemviz-stub.so:
 * the program runs the same with or without memviz. No stdio.
 *
 * At exit: H(48) is held only by a pointer inside R(64), a block nothing
 * points to, which the program registered as a root: H is still
 * reachable, R definitely lost. I(96) is lost but ignored: it counts as
 * still reachable, and J(32), which only I points to, too. The snapshot
 * "api-1" is taken while all of them exist.
 * Totals: definitely lost 64 in 1; still reachable 176 in 3.
 */
#include <stdlib.h>
#include <string.h>

#include "../../include/memviz.h"

static void *must(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    memset(p, 0, n);
    return p;
}

__attribute__((noinline)) static void build(void)
{
    void **r = must(64);
    r[2] = must(48);
    memviz_register_root(r, 64);
    void **i = must(96);
    i[1] = must(32);
    memviz_ignore(i);
}

__attribute__((noinline)) static void scrub(void)
{
    volatile char junk[8192];
    memset((char *)junk, 0, sizeof(junk));
}

int main(void)
{
    build();
    scrub();
    memviz_snapshot("api-1");
    return 0;
}
