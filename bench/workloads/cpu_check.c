/*
 * cpu_check - whether this machine can run two threads at once right now.
 *
 * Times a fixed amount of arithmetic on one thread, then the same amount on
 * each of two threads at once, and prints the second time over the first:
 * about 1.0 when two CPUs are free, about 2.0 when the two threads had to
 * share one (a busy neighbour, a host that took a CPU away). bench/run runs
 * it next to memviz's runs and reports, which use two CPUs (the writer
 * thread; the report's decoder), to tell rounds where they had only one.
 *
 * usage: cpu_check [ITERATIONS]    (default 20,000,000: about 20 ms a thread)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long iterations = 20000000ul;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *spin(void *arg)
{
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < iterations; i++)
        x += i;
    (void)arg;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        iterations = strtoul(argv[1], NULL, 10);
    double t0 = now();
    spin(NULL);
    double one = now() - t0;
    pthread_t a, b;
    t0 = now();
    if (pthread_create(&a, NULL, spin, NULL) || pthread_create(&b, NULL, spin, NULL))
        return 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    double two = now() - t0;
    printf("%.3f\n", one > 0 ? two / one : 0.0);
    return 0;
}
