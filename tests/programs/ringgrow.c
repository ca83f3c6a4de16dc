/*
 * ringgrow - two threads allocating flat out, so that each fills its ring
 * faster than the writer's timer drains it: their rings grow (ring.h)
 * while the other thread's events keep coming, with blocks made before
 * the growth released after it.
 *
 * main and one other thread each run churn(N) (N = 300,000 unless given):
 *   i = 0 .. N-1: p = malloc(16 + i % 64); every 1,024th p is kept,
 *   the others are freed at once; then the kept ones are freed, in the
 *   order they were made.
 * Per thread: N allocations of sum(16 + i % 64) bytes, all freed.
 * Over both threads (in churn): 2N allocations, 2N frees, nothing leaked.
 * For N = 300,000: 300,000 = 4,687 * 64 + 32, so the bytes of one thread
 * are 4,687 * (64 * 16 + 2,016) + (32 * 16 + 496) = 14,249,488.
 * pthread_create allocates internally, so global numbers are bounds.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEEP_EVERY 1024

static long n_per_thread = 300000;

__attribute__((noinline)) void *churn_alloc(long i)
{
    return malloc((size_t)(16 + i % 64));
}

__attribute__((noinline)) void churn(void)
{
    void **kept = calloc((size_t)(n_per_thread / KEEP_EVERY + 1), sizeof(*kept));
    if (!kept)
        abort();
    long k = 0;
    for (long i = 0; i < n_per_thread; i++) {
        char *p = churn_alloc(i);
        if (!p)
            abort();
        p[0] = (char)i;
        if (i % KEEP_EVERY == 0)
            kept[k++] = p;
        else
            free(p);
    }
    for (long j = 0; j < k; j++)
        free(kept[j]);
    free(kept);
}

static void *thread_main(void *arg)
{
    (void)arg;
    churn();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        n_per_thread = strtol(argv[1], NULL, 10);
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL) != 0)
        return 1;
    churn();
    pthread_join(t, NULL);
    static const char done[] = "ringgrow: done\n";
    if (write(1, done, strlen(done)) < 0)
        return 1;
    return 0;
}
