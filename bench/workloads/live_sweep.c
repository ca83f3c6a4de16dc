/* Workloads "sweep" and "lag": a live set of a chosen size, and frees at a
 * chosen distance from their allocation.
 *
 *   live_sweep N [R]      allocates N blocks (sizes 32..47 bytes, cycling),
 *                         keeps all N live at once, then frees them all in
 *                         allocation order; R times (default 1): 2NR
 *                         allocation events, N live blocks at the peak.
 *                         With R, small live sets run as many events as
 *                         large ones, so their cost per event is not
 *                         mostly start-up (first stacks, first tables).
 *   live_sweep lag N L    makes N allocations (same sizes); block i is freed
 *                         right after allocation i+L (a FIFO of L blocks),
 *                         the last L at the end, oldest first: 2N events,
 *                         L+1 live blocks at the peak, every free L
 *                         allocations after its block's allocation (or,
 *                         for the last L, at the end).
 *
 * Each block's first word is written (the block is used). Prints one line
 * on stdout: "loop_ns=T blocks=N peak_live=P checksum=C", T being the
 * monotonic time from before the first malloc to after the last free (the
 * per-event cost without process start-up and exit).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long parse(const char *s, const char *what)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 1) {
        fprintf(stderr, "live_sweep: bad %s: %s\n", what, s);
        exit(2);
    }
    return v;
}

static void usage(void)
{
    fprintf(stderr, "usage: live_sweep N [ROUNDS]\n       live_sweep lag N L\n");
    exit(2);
}

int main(int argc, char **argv)
{
    long n, lag = 0, rounds = 1;
    if (argc == 2 || argc == 3) {
        n = parse(argv[1], "N");
        rounds = argc == 3 ? parse(argv[2], "ROUNDS") : 1;
    } else if (argc == 4 && strcmp(argv[1], "lag") == 0) {
        n = parse(argv[2], "N");
        lag = parse(argv[3], "L");
        if (lag > n)
            lag = n;
    } else {
        usage();
    }
    long slots = lag ? lag : n;
    /* the table of pointers: the program's own memory, not one of the
     * traced blocks (calloc'ed before the timed loop) */
    void **tab = calloc((size_t)slots, sizeof *tab);
    if (!tab) {
        perror("live_sweep: calloc");
        return 1;
    }
    uint64_t sum = 0;
    uint64_t t0 = now_ns();
    for (long r = 0; !lag && r < rounds; r++) {
        for (long i = 0; i < n; i++) {
            long *p = malloc(32 + (size_t)(i & 15));
            if (!p)
                abort();
            *p = i;
            tab[i] = p;
        }
        for (long i = 0; i < n; i++) {
            sum += *(long *)tab[i];
            free(tab[i]);
        }
    }
    if (lag) {
        for (long i = 0; i < n; i++) {
            long *p = malloc(32 + (size_t)(i & 15));
            if (!p)
                abort();
            *p = i;
            long s = i % lag;
            void *old = tab[s]; /* block i-L, allocated L allocations ago */
            tab[s] = p;
            if (old) {
                sum += *(long *)old;
                free(old);
            }
        }
        /* the remaining L blocks, oldest first */
        for (long k = 0; k < lag; k++) {
            long s = (n + k) % lag;
            if (tab[s]) {
                sum += *(long *)tab[s];
                free(tab[s]);
            }
        }
    }
    uint64_t t1 = now_ns();
    free(tab);
    printf("loop_ns=%llu blocks=%ld rounds=%ld peak_live=%ld checksum=%llu\n",
           (unsigned long long)(t1 - t0), n, rounds, lag && lag < n ? lag + 1 : n,
           (unsigned long long)sum);
    return 0;
}
