/*
 * threadchurn - 3,000 short-lived threads, one after another, each making
 * 10 allocations and freeing them (as a thread-per-request server does).
 * Whatever the profiler keeps per thread must go when the thread does:
 * the program fails (exit 1) if its resident memory ends above 48 MiB
 * (without a profiler it is about 2 MiB).
 *   churn_in_thread: 30,000 x malloc(100), each freed at once (temporary)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 3000

__attribute__((noinline)) void churn_in_thread(void)
{
    for (int i = 0; i < 10; i++) {
        volatile char *p = malloc(100);
        p[0] = 1;
        free((void *)p);
    }
}

static void *thread_main(void *arg)
{
    (void)arg;
    churn_in_thread();
    return NULL;
}

static long rss_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

int main(void)
{
    for (int i = 0; i < THREADS; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, thread_main, NULL) != 0)
            return 2;
        pthread_join(t, NULL);
    }
    long kib = rss_kib();
    return kib < 0 || kib > 48 * 1024;
}
