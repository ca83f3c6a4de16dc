/*
 * tidreuse - threads whose kernel thread ids are reused, with blocks that
 * outlive the thread that allocated them. Run in a pid namespace with a
 * small pid_max (the test does), the ids come round again within a few
 * hundred threads.
 *
 * 1,000 threads, one after another; thread i allocates in keep_block one
 * block of 1,000 + i % 7 bytes and hands it to main, and makes one
 * temporary allocation in temp_block. main then frees the blocks of the
 * odd threads and leaks those of the even ones:
 *   keep_block: 1,000 allocations, 500 leaked, bytes as computed below
 *   temp_block: 1,000 allocations, all temporary
 * It prints "tidreuse: reused N" (N = threads whose id an earlier thread
 * had) and the leaked bytes on stderr.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#define THREADS 1000

static void *blocks[THREADS];
static int tids[THREADS];

__attribute__((noinline)) static void *keep_block(int i)
{
    char *p = malloc(1000 + (size_t)(i % 7));
    if (p)
        p[0] = (char)i;
    return p;
}

__attribute__((noinline)) static void temp_block(void)
{
    volatile char *p = malloc(64);
    if (p)
        p[0] = 1;
    free((void *)p);
}

static void *thread_main(void *arg)
{
    int i = (int)(long)arg;
    tids[i] = gettid();
    blocks[i] = keep_block(i);
    temp_block();
    return NULL;
}

int main(void)
{
    for (long i = 0; i < THREADS; i++) {
        pthread_t t;
        int rc, tries = 0;
        /* with pid_max this small, a loaded machine may not have released
         * the last thread's id yet: EAGAIN, for a moment */
        while ((rc = pthread_create(&t, NULL, thread_main, (void *)i)) == EAGAIN && tries++ < 2000)
            usleep(1000);
        if (rc != 0)
            return 1;
        pthread_join(t, NULL);
    }
    int reused = 0;
    for (int i = 1; i < THREADS; i++)
        for (int j = 0; j < i; j++)
            if (tids[j] == tids[i]) {
                reused++;
                break;
            }
    unsigned long leaked = 0;
    for (int i = 0; i < THREADS; i++) {
        if (i % 2)
            free(blocks[i]);
        else
            leaked += 1000 + (unsigned long)(i % 7);
    }
    printf("tidreuse: done\n");
    fprintf(stderr, "tidreuse: reused %d leaked %lu\n", reused, leaked);
    return 0;
}
