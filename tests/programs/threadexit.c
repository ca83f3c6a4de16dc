/*
 * threadexit - exit() while other threads are busy allocating: 4 worker
 * threads run worker_churn (malloc(64); free) in an endless loop; after
 * 100 ms a fifth thread calls exit(5). Nothing here is deterministic except:
 *   the exit status (5, via exit()), worker_churn having allocated, every
 *   one of its allocations being 64 bytes, and at most one block per worker
 *   being live at the end (at most 4 x 64 = 256 bytes leaked).
 * The trace must still be complete and consistent (memviz must neither
 * crash nor hang while the workers keep allocating during exit).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void worker_churn(void)
{
    for (;;) {
        volatile char *p = malloc(64);
        if (!p)
            abort();
        p[0] = 1;
        sink += (unsigned long)p[0];
        free((void *)p);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    worker_churn();
    return NULL;
}

static void *exiter(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 100 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
    static const char msg[] = "threadexit: exiting\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        _exit(1);
    exit(5);
}

int main(void)
{
    pthread_t t;
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t, NULL, worker, NULL) != 0)
            return 1;
    if (pthread_create(&t, NULL, exiter, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    return 1; /* not reached */
}
