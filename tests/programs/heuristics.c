/*
 * heuristics - blocks reached only through interior pointers that
 * memcheck's four heuristics take for real ones, and one they do not. No
 * stdio. At exit:
 *   g_len64 -> L+8,  L = [40][40 bytes]              length64: reachable
 *   g_array -> N+8,  N = [3][3 x 16 bytes]           newarray: reachable
 *   g_str   -> S+24, S = [5][10][0][11 bytes]        stdstring: reachable
 *   g_mi    -> M+8,  M = [vtable a][vtable b][...]   multipleinheritance
 *   g_plain -> P+16, P = 64 zero bytes               possibly lost
 * so reachable 48 + 56 + 35 + 32 bytes in 4 blocks, possibly lost 64 in 1.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void f0(void) {}
static void f1(void) {}
/* two vtable-like tables: pointers to code, in read-only data after
 * relocation (.data.rel.ro) */
static void (*const vtable_a[])(void) = {f0, f1};
static void (*const vtable_b[])(void) = {f1, f0};

char *g_len64, *g_array, *g_str, *g_mi, *g_plain;

static char *must(size_t n)
{
    char *p = malloc(n);
    if (!p)
        abort();
    memset(p, 0, n);
    return p;
}

__attribute__((noinline)) static void build(void)
{
    char *l = must(48);
    *(uint64_t *)l = 40;
    g_len64 = l + 8;
    char *n = must(56);
    *(size_t *)n = 3;
    g_array = n + 8;
    char *s = must(35);
    ((size_t *)s)[0] = 5;
    ((size_t *)s)[1] = 10;
    g_str = s + 24;
    char *m = must(32);
    ((const void **)m)[0] = vtable_a;
    ((const void **)m)[1] = vtable_b;
    g_mi = m + 8;
    g_plain = must(64) + 16;
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
    return 0;
}
