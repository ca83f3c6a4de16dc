/*
 * lowmem - runs with an address-space limit so low that malloc fails: the
 * agent's own allocations fail too, and nothing may crash.
 *
 * main sets RLIMIT_AS to its current address space plus 16 MiB, then
 * fill_up allocates 64 KiB blocks until malloc returns NULL (at most 4,096),
 * frees them all, and prints "lowmem: malloc failed after N blocks" (N > 0)
 * and exits 0. A failed malloc is not an allocation: the report counts the
 * N successful ones and their N frees in fill_up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static unsigned long vm_size_bytes(void)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return pages * 4096;
}

static void *blocks[4096];

__attribute__((noinline)) static int fill_up(void)
{
    int n = 0;
    while (n < 4096 && (blocks[n] = malloc(65536)))
        n++;
    for (int i = 0; i < n; i++)
        free(blocks[i]);
    return n;
}

int main(void)
{
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = vm_size_bytes() + (16ul << 20);
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        return 2;
    int n = fill_up();
    printf("lowmem: malloc failed after %s blocks\n", n > 0 && n < 4096 ? "N" : "unexpected");
    fprintf(stderr, "lowmem: %d\n", n);
    return n > 0 && n < 4096 ? 0 : 1;
}
