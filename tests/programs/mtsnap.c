/*
 * mtsnap - heap snapshots while 64 threads allocate and free as fast as
 * they can. No stdio. Each worker first allocates one 4,096-byte block that
 * only a local variable of its own holds, then churns 64-byte blocks until
 * told to stop; worker 0 blocks every signal. main takes three snapshots
 * ("busy-1" .. "busy-3", through the weak memviz_snapshot) while they run:
 * every worker's held block must be reachable through its own stack, and
 * none of the threads may have run on. Exits 0 when every worker ended.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WORKERS 64

void memviz_snapshot(const char *name) __attribute__((weak));

static volatile int stop;
static pthread_barrier_t ready;

static void *worker(void *arg)
{
    if (arg == NULL) { /* worker 0 */
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, NULL);
    }
    void *volatile held = malloc(4096);
    pthread_barrier_wait(&ready);
    while (!stop) {
        void *volatile p = malloc(64);
        free(p);
    }
    free(held);
    return NULL;
}

int main(void)
{
    pthread_t t[WORKERS];
    pthread_barrier_init(&ready, NULL, WORKERS + 1);
    for (long i = 0; i < WORKERS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i))
            return 1;
    pthread_barrier_wait(&ready);
    static const char *const names[] = {"busy-1", "busy-2", "busy-3"};
    for (int k = 0; k < 3; k++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (memviz_snapshot)
            memviz_snapshot(names[k]);
    }
    stop = 1;
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    return 0;
}
