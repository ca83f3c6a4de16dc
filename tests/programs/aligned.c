/*
 * aligned - the aligned allocation entry points. Single-threaded, no stdio:
 * global numbers are exact. Sizes are the REQUESTED sizes (pvalloc(100)
 * counts 100 even though glibc rounds the block up to a page).
 *
 *   posix_memalign_site  3 x posix_memalign(&p, 64, 1000); frees the first
 *                        3 allocations, 3,000 bytes, 2,000 leaked (2 blocks),
 *                        site peak 3,000, 0 temporary (the first block is
 *                        followed by two more allocations before its free)
 *   posix_memalign_bad   posix_memalign(&p, 3, 10) -> EINVAL: no allocation
 *   aligned_alloc_site   a = aligned_alloc(64, 128); b = aligned_alloc(64, 128);
 *                        free(a); free(b): 2 allocations, 256 bytes, 0 leaked,
 *                        1 temporary (b: nothing allocated between b and free(b))
 *   memalign_site        memalign(4096, 100), leaked: 100 bytes
 *   valloc_site          valloc(5000), freed at once: temporary
 *   pvalloc_site         pvalloc(100), freed at once: temporary
 *
 * Live bytes: 3,000 -> 2,000 -> 2,256 -> 2,000 -> 2,100 -> 7,100 (global peak:
 * posix_memalign_site 2,000 + memalign_site 100 + valloc_site 5,000) -> 2,100
 * -> 2,200 -> 2,100.
 * Totals: 8 allocations, 5 frees, 8,456 bytes, peak 7,100, leaked 2,100 bytes
 * in 3 blocks, 3 temporary.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *keep[3];

__attribute__((noinline)) void posix_memalign_site(void)
{
    void *p[3];
    for (int i = 0; i < 3; i++) {
        if (posix_memalign(&p[i], 64, 1000) != 0)
            abort();
        if (((unsigned long)p[i] & 63) != 0)
            abort();
        memset(p[i], i, 1000);
    }
    free(p[0]);
    keep[0] = p[1];
    keep[1] = p[2];
}

__attribute__((noinline)) void posix_memalign_bad(void)
{
    void *p = (void *)1;
    if (posix_memalign(&p, 3, 10) != EINVAL)
        abort();
}

__attribute__((noinline)) void aligned_alloc_site(void)
{
    void *a = aligned_alloc(64, 128);
    void *b = aligned_alloc(64, 128);
    if (!a || !b || ((unsigned long)a & 63) || ((unsigned long)b & 63))
        abort();
    free(a);
    free(b);
}

__attribute__((noinline)) void memalign_site(void)
{
    keep[2] = memalign(4096, 100);
    if (!keep[2] || ((unsigned long)keep[2] & 4095))
        abort();
}

__attribute__((noinline)) void valloc_site(void)
{
    void *p = valloc(5000);
    if (!p || ((unsigned long)p & 4095))
        abort();
    free(p);
}

__attribute__((noinline)) void pvalloc_site(void)
{
    void *p = pvalloc(100);
    if (!p || ((unsigned long)p & 4095))
        abort();
    free(p);
}

int main(void)
{
    posix_memalign_site();
    posix_memalign_bad();
    aligned_alloc_site();
    memalign_site();
    valloc_site();
    pvalloc_site();
    static const char msg[] = "aligned: done\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    return 0;
}
