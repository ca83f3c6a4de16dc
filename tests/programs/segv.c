/*
 * segv - allocates, frees some, then dies of SIGSEGV (writes through NULL).
 *   seg_alloc  5 x malloc(1000); frees blocks 0 and 1: 5 allocations,
 *              5,000 bytes, site peak 5,000, 3,000 live when the process dies
 *              (3 blocks), 0 temporary (both freed blocks were followed by other
 *              allocations)
 * Single-threaded, no stdio: totals 5 allocations, 2 frees, 5,000 bytes,
 * peak 5,000, leaked 3,000 in 3 blocks. Exit: signal 11 (memviz run: 139).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *blocks[5];

__attribute__((noinline)) void seg_alloc(void)
{
    for (int i = 0; i < 5; i++) {
        blocks[i] = malloc(1000);
        if (!blocks[i])
            abort();
        memset(blocks[i], i, 1000);
    }
    free(blocks[0]);
    free(blocks[1]);
}

__attribute__((noinline)) void crash(int *volatile where)
{
    *where = 42;
}

int main(void)
{
    seg_alloc();
    static const char msg[] = "segv: crashing\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    crash(NULL);
    return 0;
}
