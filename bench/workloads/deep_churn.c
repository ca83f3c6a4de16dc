/* Workload "deep": C malloc/free churn 30-38 frames deep.
 * For each allocation the program recurses (noinline, not a tail call) to a
 * depth of 25..33 frames of descend() below main, which with the frames
 * above it (main, libc start-up, _start) and the allocating leaf gives call
 * stacks 30..38 frames deep, then mallocs a block of a mixed size; one block
 * in 8 is kept in a 4096-slot ring (freed when its slot is reused), the rest
 * are freed at once.
 * usage: deep_churn [ALLOCATIONS]   (default 1500000)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *ring[4096];

__attribute__((noinline)) static uint64_t leaf(uint64_t i)
{
    size_t sz = 16 + (i * 2654435761u) % 496;
    if ((i & 255) == 0)
        sz = 4096 + (i % 8192);
    char *p = malloc(sz);
    p[0] = (char)i;
    __asm__ volatile("" : : "r"(p) : "memory");
    uint64_t r = (unsigned char)p[0];
    if ((i & 7) == 0) {
        size_t slot = (i >> 3) & 4095;
        free(ring[slot]);
        ring[slot] = p;
    } else {
        free(p);
    }
    return r;
}

__attribute__((noinline)) static uint64_t descend(int depth, uint64_t i)
{
    uint64_t r;
    if (depth <= 0)
        r = leaf(i);
    else
        r = descend(depth - 1, i) + 1;
    __asm__ volatile("" : "+r"(r)); /* no tail call, no folding */
    return r;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1500000;
    uint64_t sum = 0;
    for (long i = 0; i < n; i++)
        sum += descend(24 + (int)(i % 9), (uint64_t)i); /* 25..33 descend() frames */
    for (int s = 0; s < 4096; s++)
        free(ring[s]);
    return sum == 42 ? 1 : 0;
}
