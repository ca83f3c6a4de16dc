/*
 * phases - a heap with a known shape over time, for the views of
 * `memviz report` (--at, --from/--to, --by, trees, filters, suppressions,
 * histogram, threads), `memviz timeline`, `memviz diff` and the exports.
 *
 * "phases [SCALE]" (SCALE = 1 when absent; the diff test compares 1 and 2):
 *
 *   t ~ 0        phase_a:     4 x malloc(262,144) = 1 MiB, kept      (A)
 *   sleep 400 ms              heap = 1 MiB
 *   phase_b:     8 * SCALE x malloc(131,072) = SCALE MiB, kept       (B)
 *   sleep 400 ms              heap = 1 MiB + SCALE MiB: the peak
 *   free_a:      frees A
 *   sleep 400 ms              heap = SCALE MiB
 *   worker thread (named "worker"), in worker_main:
 *     worker_churn: 100 x { malloc(1000); free }   -> 100 temporaries
 *     worker_leak:  10 x malloc(4096), never freed  -> 40,960 B leaked
 *   small_sizes: 10 x malloc(24), 5 x malloc(100), 3 x malloc(5000), all
 *                freed at the end of the function (none temporary but the
 *                last: each is followed by the next allocation)
 *   free_b:      frees B
 *   init_cache_once: 1 x malloc(777), never freed (a one-time allocation,
 *                the target of the suppression test)
 *
 * Every allocation function is called from main directly (worker_* from
 * worker_main, itself the thread's start routine). No stdio, so nothing else
 * allocates in main's thread; pthread_create allocates internally (the DTV),
 * so whole-program totals are bounds and the tests check per function.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define A_BLOCKS 4
#define A_SIZE 262144
#define B_BLOCKS_PER_SCALE 8
#define B_SIZE 131072

static void *a_blocks[A_BLOCKS];
static void *b_blocks[8 * 64];
static int b_count;
static void *worker_leaks[10];
static void *volatile cache;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

__attribute__((noinline)) static void phase_a(void)
{
    for (int i = 0; i < A_BLOCKS; i++)
        a_blocks[i] = malloc(A_SIZE);
}

__attribute__((noinline)) static void phase_b(int scale)
{
    for (int i = 0; i < B_BLOCKS_PER_SCALE * scale; i++)
        b_blocks[b_count++] = malloc(B_SIZE);
}

__attribute__((noinline)) static void free_a(void)
{
    for (int i = 0; i < A_BLOCKS; i++)
        free(a_blocks[i]);
}

__attribute__((noinline)) static void free_b(void)
{
    for (int i = 0; i < b_count; i++)
        free(b_blocks[i]);
}

__attribute__((noinline)) static void worker_churn(void)
{
    for (int i = 0; i < 100; i++) {
        void *volatile p = malloc(1000);
        free(p);
    }
}

__attribute__((noinline)) static void worker_leak(void)
{
    for (int i = 0; i < 10; i++)
        worker_leaks[i] = malloc(4096);
}

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "worker");
    worker_churn();
    worker_leak();
    return NULL;
}

__attribute__((noinline)) static void small_sizes(void)
{
    void *p[18];
    int n = 0;
    for (int i = 0; i < 10; i++)
        p[n++] = malloc(24);
    for (int i = 0; i < 5; i++)
        p[n++] = malloc(100);
    for (int i = 0; i < 3; i++)
        p[n++] = malloc(5000);
    for (int i = n - 1; i >= 0; i--)
        free(p[i]);
}

__attribute__((noinline)) static void init_cache_once(void)
{
    cache = malloc(777);
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1 || scale > 64)
        return 2;
    phase_a();
    sleep_ms(400);
    phase_b(scale);
    sleep_ms(400);
    free_a();
    sleep_ms(400);
    pthread_t t;
    if (pthread_create(&t, NULL, worker_main, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    small_sizes();
    free_b();
    init_cache_once();
    return 0;
}
