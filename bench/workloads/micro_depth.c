/* Microbenchmark: the cost of one malloc+free pair at a controlled stack depth.
 * usage: micro_depth DEPTH N OUTFILE
 * Recurses (noinline, not a tail call) so that the function calling malloc is
 * frame 0 of a stack of exactly DEPTH frames up to and including _start
 * (loop, descend x (DEPTH-6+1), main, __libc_start_call_main,
 * __libc_start_main, _start), does 1000 warm-up pairs, then times N
 * malloc+free pairs with CLOCK_MONOTONIC and writes the elapsed nanoseconds
 * of the timed loop to OUTFILE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long N;

__attribute__((noinline)) static long loop(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++) {
        void *p = malloc(32 + (i & 63));
        __asm__ volatile("" : : "r"(p) : "memory");
        s += (long)(p != NULL);
        free(p);
    }
    return s;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long elapsed;

__attribute__((noinline)) static long descend(int d)
{
    long r;
    if (d <= 0) {
        loop(1000); /* warm-up: first capture of this stack */
        long long t0 = now_ns();
        r = loop(N);
        elapsed = now_ns() - t0;
    } else {
        r = descend(d - 1) + 1;
    }
    __asm__ volatile("" : "+r"(r));
    return r;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: micro_depth DEPTH N OUTFILE\n");
        return 2;
    }
    int depth = atoi(argv[1]);
    N = atol(argv[2]);
    if (depth < 7) {
        fprintf(stderr, "micro_depth: DEPTH must be at least 7\n");
        return 2;
    }
    long r = descend(depth - 6); /* descend(k) is k+1 frames */
    FILE *f = fopen(argv[3], "w");
    if (!f)
        return 3;
    fprintf(f, "%lld\n", elapsed);
    fclose(f);
    return r == 42 ? 1 : 0;
}
