/*
 * threads - 8 threads churning and leaking known amounts each.
 *
 * Thread k (k = 0..7) runs thread_main(k):
 *   thread_churn(k): 100 x { malloc(48); free } -> 100 temporaries
 *   thread_leak(k):  5 x malloc(100 * (k + 1)), never freed
 * All 8 threads are alive at once (a barrier), so 9 threads (with main) exist.
 * Per function over all threads:
 *   thread_churn: 800 allocations, 800 * 48 = 38,400 bytes, 800 temporary, 0 leaked
 *   thread_leak:  40 allocations, 5 * 100 * (1 + ... + 8) = 18,000 bytes,
 *                 all leaked (40 blocks), 0 temporary (each is followed by the next
 *                 allocation of the same thread, the last one is never freed)
 * pthread_create allocates internally (the DTV), so global numbers are bounds.
 *
 * "threads N" makes thread_churn loop N times instead of 100 (a stress run:
 * 8 x N temporaries of 48 bytes; thread_leak is unchanged).
 * "threads N varied" gives each temporary a pseudo-random size of 48 to
 * 4,143 bytes instead: a trace that compresses poorly, for tests that need
 * a large one (a full disk, cuts at many points).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NTHREADS 8

static pthread_barrier_t barrier;
static int churn_iterations = 100;
static int varied_sizes;
static void *leaks[NTHREADS][5];

__attribute__((noinline)) void thread_churn(int k)
{
    uint32_t x = 2463534242u + (uint32_t)k;
    for (int i = 0; i < churn_iterations; i++) {
        size_t size = 48;
        if (varied_sizes) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            size += x % 4096;
        }
        volatile char *p = malloc(size);
        if (!p)
            abort();
        p[0] = (char)(i + k);
        free((void *)p);
    }
}

__attribute__((noinline)) void thread_leak(int k)
{
    for (int j = 0; j < 5; j++) {
        leaks[k][j] = malloc((size_t)100 * (size_t)(k + 1));
        if (!leaks[k][j])
            abort();
        memset(leaks[k][j], k, (size_t)100 * (size_t)(k + 1));
    }
}

__attribute__((noinline)) void *thread_main(void *arg)
{
    int k = (int)(intptr_t)arg;
    pthread_barrier_wait(&barrier);
    thread_churn(k);
    thread_leak(k);
    pthread_barrier_wait(&barrier);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        churn_iterations = atoi(argv[1]);
    varied_sizes = argc > 2 && strcmp(argv[2], "varied") == 0;
    pthread_t t[NTHREADS];
    pthread_barrier_init(&barrier, NULL, NTHREADS);
    for (int k = 0; k < NTHREADS; k++)
        if (pthread_create(&t[k], NULL, thread_main, (void *)(intptr_t)k) != 0)
            return 1;
    for (int k = 0; k < NTHREADS; k++)
        pthread_join(t[k], NULL);
    static const char msg[] = "threads: done\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    return 0;
}
