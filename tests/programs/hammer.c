/*
 * hammer - allocates and frees 64-byte blocks as fast as it can for
 * argv[1] seconds (default 3), keeping one 1,000-byte block; writes the
 * number of rounds. No stdio. A program that makes events as fast as one
 * thread can, for the live server's bounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 3.0, end = now() + secs;
    void *volatile kept = malloc(1000);
    long rounds = 0;
    while (now() < end)
        for (int i = 0; i < 1000; i++, rounds++) {
            void *volatile p = malloc(64);
            free(p);
        }
    char line[64];
    int n = snprintf(line, sizeof(line), "%ld\n", rounds);
    free(kept);
    return write(1, line, (size_t)n) == n ? 0 : 1;
}
