/*
 * doublefree - heap corruption, the case a heap profiler is for: glibc
 * detects the double free of a 2000-byte block (not a tcache size, so it is
 * found inside the arena, with the arena lock held) and aborts. The
 * profiler must let the program die of SIGABRT, promptly, and leave a
 * readable trace that says so.
 *   keep_some: 3 x malloc(300), kept
 *   victim:    malloc(2000), freed twice
 */
#include <stdlib.h>
#include <unistd.h>

static void *kept[3];

__attribute__((noinline)) void keep_some(void)
{
    for (int i = 0; i < 3; i++)
        kept[i] = malloc(300);
}

__attribute__((noinline)) void *victim(void)
{
    return malloc(2000);
}

int main(void)
{
    keep_some();
    void *p = victim();
    void *guard = malloc(64); /* keeps p from merging with the top chunk */
    (void)!write(1, "doublefree: freeing twice\n", 26);
    free(p);
    free(p);
    free(guard);
    return 0;
}
