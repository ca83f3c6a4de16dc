/*
 * userns - a single-threaded program that enters a new user namespace,
 * which the kernel allows only to a process with one thread (bubblewrap,
 * `unshare --user` and rootless container tools do this). Under a profiler
 * that keeps a thread of its own in the program, unshare fails with
 * EINVAL.
 *
 *   before  3 x malloc(100), kept: 300 bytes
 *   unshare(CLONE_NEWUSER); on failure prints "userns: unshare: <error>"
 *   on stderr and exits 1
 *   after   5 x malloc(200), 2 of them freed: 1,000 bytes, 600 kept
 * No stdio before the end: totals 8 allocations, 2 frees, 1,300 bytes,
 * peak 1,300, leaked 900 in 6 blocks, 1 temporary (the last block, freed
 * right after it was allocated). Exit status 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *kept[8];

__attribute__((noinline)) void before(void)
{
    for (int i = 0; i < 3; i++)
        kept[i] = malloc(100);
}

__attribute__((noinline)) void after(void)
{
    for (int i = 3; i < 8; i++)
        kept[i] = malloc(200);
    free(kept[3]);
    free(kept[7]);
}

int main(void)
{
    before();
    if (unshare(CLONE_NEWUSER) < 0) {
        fprintf(stderr, "userns: unshare: %s\n", strerror(errno));
        return 1;
    }
    after();
    return 0;
}
