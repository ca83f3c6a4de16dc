/*
 * realloc - realloc growth and shrink, realloc(NULL, n), realloc(p, 0),
 * reallocarray, a failed realloc, malloc(0). Single-threaded, no stdio: the
 * global numbers are exact.
 *
 * A successful realloc(p, n) counts as one allocation of n bytes (entry
 * "realloc") plus a free of p; realloc(NULL, n) is an allocation only;
 * realloc(p, 0) on glibc frees p and allocates nothing; a failed realloc
 * allocates and frees nothing.
 *
 *   grow_buffer          realloc(NULL,16), then realloc to 32, 64, ..., 4096
 *                        9 allocations, 16 * (2^9 - 1) = 8,176 bytes, 8 frees
 *   shrink_buffer        realloc(p4096, 100): 1 allocation of 100, frees the 4096
 *   realloc_leak         malloc(50), realloc(.., 500): 2 allocations, 550 bytes,
 *                        frees the 50, 500 leaked
 *   reallocarray_site    reallocarray(NULL,10,8) = 80, reallocarray(..,20,8) = 160:
 *                        2 allocations, 240 bytes, frees the 80, 160 leaked
 *   zero_malloc          malloc(0), freed: 1 allocation of 0 bytes, temporary
 *   realloc_null_zero    realloc(NULL, 0) is malloc(0) on glibc (a unique
 *                        pointer), freed: 1 allocation of 0 bytes (entry
 *                        "realloc"), temporary
 *   failed_alloc         malloc(64); realloc(p, huge) fails; malloc(huge) fails;
 *                        calloc and reallocarray with n * size overflowing fail;
 *                        free(p): 1 allocation, 64 bytes, temporary (the failed
 *                        calls are not allocations)
 *   peak_block           malloc(20000), freed at once: temporary
 *   free_with_realloc_zero  realloc(p100, 0): frees the 100, allocates nothing
 *
 * Live bytes: grow_buffer ends with 4096 live (at most 2048 + 4096 = 6,144 while
 * a realloc moves a block); shrink_buffer 100; realloc_leak +500 (600);
 * reallocarray_site +160 (760); peak_block 760 + 20,000 = 20,760 <- global peak;
 * free_with_realloc_zero 660.
 * Totals: 18 allocations, 16 frees, 29,130 bytes, peak 20,760,
 * leaked 660 bytes in 2 blocks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) char *grow_buffer(void)
{
    char *p = NULL;
    for (size_t n = 16; n <= 4096; n *= 2) {
        char *q = realloc(p, n);
        if (!q)
            abort();
        memset(q, 'g', n);
        p = q;
    }
    return p;
}

__attribute__((noinline)) char *shrink_buffer(char *p)
{
    char *q = realloc(p, 100);
    if (!q)
        abort();
    return q;
}

__attribute__((noinline)) char *realloc_leak(void)
{
    char *p = malloc(50);
    if (!p)
        abort();
    memset(p, 'x', 50);
    char *q = realloc(p, 500);
    if (!q)
        abort();
    memset(q, 'y', 500);
    return q;
}

__attribute__((noinline)) long *reallocarray_site(void)
{
    long *p = reallocarray(NULL, 10, 8);
    if (!p)
        abort();
    long *q = reallocarray(p, 20, 8);
    if (!q)
        abort();
    memset(q, 0, 160);
    return q;
}

__attribute__((noinline)) void zero_malloc(void)
{
    void *p = malloc(0);
    if (!p)
        abort();
    free(p);
}

__attribute__((noinline)) void realloc_null_zero(void)
{
    void *p = realloc(NULL, 0);
    if (!p)
        abort();
    free(p);
}

__attribute__((noinline)) void failed_alloc(void)
{
    char *p = malloc(64);
    if (!p)
        abort();
    memset(p, 1, 64);
    /* Larger than PTRDIFF_MAX: glibc refuses without touching p. (volatile:
     * keeps GCC from warning about the obviously impossible size) */
    volatile size_t huge = SIZE_MAX - 4096;
    char *q = realloc(p, huge);
    if (q != NULL)
        abort();
    void *r = malloc(huge);
    if (r != NULL)
        abort();
    volatile size_t half = SIZE_MAX / 2 + 2; /* half * 4 overflows */
    if (calloc(half, 4) != NULL || reallocarray(NULL, half, 4) != NULL)
        abort();
    free(p);
}

__attribute__((noinline)) void peak_block(void)
{
    volatile char *p = malloc(20000);
    if (!p)
        abort();
    p[19999] = 1;
    free((void *)p);
}

__attribute__((noinline)) void free_with_realloc_zero(char *p)
{
    void *r = realloc(p, 0);
    if (r != NULL) /* glibc frees and returns NULL */
        abort();
}

static char *keep1;
static long *keep2;

int main(void)
{
    char *p = grow_buffer();
    p = shrink_buffer(p);
    keep1 = realloc_leak();
    keep2 = reallocarray_site();
    zero_malloc();
    realloc_null_zero();
    failed_alloc();
    peak_block();
    free_with_realloc_zero(p);
    static const char msg[] = "realloc: done\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    return 0;
}
