/*
 * race_control - the positive control of tests/tsan/run_tsan.py: a data race
 * that ThreadSanitizer must report when it hosts the agent the way the test
 * runs it (gate, TSan agent and libtsan preloaded into an uninstrumented
 * program). Two threads memset the same buffer with no synchronisation
 * between them; the program is not instrumented, but TSan checks the
 * memory ranges of the memset calls it intercepts. A run of this program
 * without a data race report means TSan is not watching, and every clean
 * result of the other programs would mean nothing.
 * It also allocates (one malloc per thread, kept) so that its trace shows
 * the agent recorded in the same process.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static char shared[256];
static pthread_barrier_t barrier;
static void *kept[2];

static void *writer(void *arg)
{
    long k = (long)arg;
    pthread_barrier_wait(&barrier);
    memset(shared, (int)k, sizeof(shared)); /* the race */
    kept[k] = malloc(100);
    return NULL;
}

int main(void)
{
    pthread_t t[2];
    pthread_barrier_init(&barrier, NULL, 2);
    for (long k = 0; k < 2; k++)
        if (pthread_create(&t[k], NULL, writer, (void *)k) != 0)
            return 1;
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    return kept[0] && kept[1] ? 0 : 1;
}
