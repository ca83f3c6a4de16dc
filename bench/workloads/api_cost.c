/*
 * api_cost - what an instrumentation API update costs (include/memviz.h):
 * N calls of memviz_counter_add, then N of memviz_value_set, then N of
 * memviz_value_set_double, and N pairs of memviz_stopwatch_start and
 * _stop, each loop timed with CLOCK_MONOTONIC; prints one "NAME NS" line
 * each, in ns per call (per pair for the stopwatch).
 * The functions are declared weak: without memviz, the loop calls nothing
 * (a baseline of the loop itself). argv[1]: N (default 100,000,000).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct memviz_counter memviz_counter;
typedef struct memviz_value memviz_value;
memviz_counter *memviz_counter_new(const char *name) __attribute__((weak));
void memviz_counter_add(memviz_counter *c, int64_t n) __attribute__((weak));
memviz_value *memviz_value_new(const char *name) __attribute__((weak));
void memviz_value_set(memviz_value *v, int64_t x) __attribute__((weak));
memviz_value *memviz_value_new_double(const char *name) __attribute__((weak));
void memviz_value_set_double(memviz_value *v, double x) __attribute__((weak));
typedef struct memviz_stopwatch memviz_stopwatch;
memviz_stopwatch *memviz_stopwatch_new(const char *name) __attribute__((weak));
void memviz_stopwatch_start(memviz_stopwatch *s) __attribute__((weak));
void memviz_stopwatch_stop(memviz_stopwatch *s) __attribute__((weak));

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000000L;
    int have = memviz_counter_new != NULL;
    memviz_counter *c = have ? memviz_counter_new("calls") : NULL;
    memviz_value *v = have ? memviz_value_new("value") : NULL;
    memviz_value *d = have ? memviz_value_new_double("ratio") : NULL;
    double t0 = now();
    for (long i = 0; i < n; i++)
        if (have)
            memviz_counter_add(c, 1);
    double t1 = now();
    for (long i = 0; i < n; i++)
        if (have)
            memviz_value_set(v, i);
    double t2 = now();
    for (long i = 0; i < n; i++)
        if (have)
            memviz_value_set_double(d, (double)i);
    double t3 = now();
    memviz_stopwatch *s = have ? memviz_stopwatch_new("loop") : NULL;
    for (long i = 0; i < n; i++)
        if (have) {
            memviz_stopwatch_start(s);
            memviz_stopwatch_stop(s);
        }
    double t4 = now();
    printf("counter_add %.2f\nvalue_set %.2f\nvalue_set_double %.2f\nstopwatch_start_stop %.2f\n",
           (t1 - t0) / (double)n, (t2 - t1) / (double)n, (t3 - t2) / (double)n,
           (t4 - t3) / (double)n);
    return 0;
}
