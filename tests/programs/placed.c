/*
 * placed - blocks whose addresses the program prints, for the heap map at
 * any moment and the heat map (`memviz run --addresses`, docs/UI.md).
 *
 *   grow:    64 x malloc(8192), kept; a worker thread at the same time
 *            32 x malloc(4096), kept              -> phase "grown"
 *   thin:    frees the even ones of the 64        -> phase "thinned"
 *   move:    realloc(8 of the odd ones, 65,536)   -> phase "moved"
 *   exit:    nothing freed
 *
 * Each line of standard output names a block: "A addr size" (allocated),
 * "F addr" (freed), "R old new size" (moved by realloc), written with
 * write(2) so that stdio allocates nothing. A test replays the trace to
 * each phase and checks the blocks live there, by address, against these.
 * memviz_phase is declared weak: without memviz it is not called.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void memviz_phase(const char *name) __attribute__((weak));

#define MAIN_BLOCKS 64
#define WORKER_BLOCKS 32
#define MOVED 8

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void say(const char *fmt, unsigned long a, unsigned long b, unsigned long c)
{
    char line[96];
    int n = snprintf(line, sizeof(line), fmt, a, b, c);
    pthread_mutex_lock(&out_lock);
    if (write(1, line, (size_t)n) != n)
        _exit(3);
    pthread_mutex_unlock(&out_lock);
}

static void phase(const char *name)
{
    if (memviz_phase)
        memviz_phase(name);
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
}

static void *worker(void *arg)
{
    void **keep = arg;
    for (int i = 0; i < WORKER_BLOCKS; i++) {
        keep[i] = malloc(4096);
        memset(keep[i], i, 4096);
        say("A %lx %lu%.0lu\n", (unsigned long)keep[i], 4096, 0);
    }
    return NULL;
}

int main(void)
{
    static void *blocks[MAIN_BLOCKS], *theirs[WORKER_BLOCKS];
    pthread_t t;
    if (pthread_create(&t, NULL, worker, theirs) != 0)
        return 2;
    for (int i = 0; i < MAIN_BLOCKS; i++) {
        blocks[i] = malloc(8192);
        memset(blocks[i], i, 8192);
        say("A %lx %lu%.0lu\n", (unsigned long)blocks[i], 8192, 0);
    }
    pthread_join(t, NULL);
    phase("grown");
    for (int i = 0; i < MAIN_BLOCKS; i += 2) {
        say("F %lx%.0lu%.0lu\n", (unsigned long)blocks[i], 0, 0);
        free(blocks[i]);
    }
    phase("thinned");
    for (int i = 1; i < 2 * MOVED; i += 2) {
        void *old = blocks[i];
        blocks[i] = realloc(old, 65536);
        if (!blocks[i])
            return 2;
        say("R %lx %lx %lu\n", (unsigned long)old, (unsigned long)blocks[i], 65536);
    }
    phase("moved");
    return 0;
}
