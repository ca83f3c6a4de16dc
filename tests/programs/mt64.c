/*
 * mt64 - 64 threads churning allocations at once for a given time, each
 * counting exactly what it did, so that a profiler's per-thread and
 * per-function numbers can be checked to the block and the byte
 * (tests/integration/cases_stress.py runs it for 60 s under memviz).
 *
 *   mt64 SECONDS [THREADS [BURST [PAUSE_US]]]
 *
 * THREADS (default 64) worker threads start together (a barrier) and run
 * until main sets a stop flag SECONDS later. Each repeats bursts of BURST
 * iterations (default 8), sleeping PAUSE_US microseconds (default 2000)
 * after each, so that the threads interleave and a minute does not drown
 * the profiler in events; one burst in 1,024 (at a different time in each
 * thread) is a storm of 4,096 iterations without a pause, more events than
 * a memviz thread buffer holds. Iteration i of thread k:
 *   window_alloc: the block in window slot i % 8 is freed (free_slot) and a
 *       new one takes its place: calloc(size / 8 + 1, 8) every fifth
 *       iteration, malloc(size) otherwise, size = 16 + (i * 131 + k * 17) % 1000;
 *   temp_alloc: every fourth iteration (i % 4 == 1), malloc(24 + k) then free at once
 *       (a temporary allocation).
 * When the time is up each thread frees its window (free_window, oldest
 * slot first) and leak_blocks leaks k % 3 + 1 blocks of 1000 + 10 k bytes.
 *
 * Temporary allocations follow docs/METRICS.md: a block freed by the thread
 * that made it with no other allocation of that thread in between. Each
 * thread decides that for every free as it goes (the freed block was its
 * latest allocation), so every number it prints is exact, not a formula.
 *
 * On stdout, after all threads are joined (no stdio: it would allocate):
 *   mt64 thread K tid TID allocations A frees F bytes B temporary T
 *        leaked_bytes L leaked_blocks N             (one line per thread)
 *   mt64 function NAME allocations A bytes B temporary T leaked_bytes L
 *        leaked_blocks N                            (window_alloc, temp_alloc,
 *                                                    leak_blocks)
 *   mt64 total allocations A frees F bytes B temporary T leaked_bytes L
 *        leaked_blocks N
 * The main thread allocates nothing itself; glibc's pthread_create does
 * (thread descriptors' TLS vectors), in main, from glibc's own functions.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256
#define WINDOW 8
#define STORM_EVERY 1024      /* one burst in this many is a storm... */
#define STORM_ITERATIONS 4096 /* ...of this many iterations (over 8,192 events) */

enum { F_WINDOW, F_TEMP, F_LEAK, NFUNC };
static const char *const func_names[NFUNC] = {"window_alloc", "temp_alloc", "leak_blocks"};

struct counts {
    uint64_t allocations, frees, bytes, temporary, leaked_bytes, leaked_blocks;
};

struct worker {
    int k;
    int tid;
    struct counts total;
    struct counts func[NFUNC];
    void *window[WINDOW];
    size_t window_size[WINDOW];
    int window_func[WINDOW];
    const void *last_alloc; /* this thread's latest allocation */
    pthread_t thread;
};

static struct worker workers[MAX_THREADS];
static pthread_barrier_t start_barrier;
static atomic_int stop;
static long burst = 8, pause_us = 2000;

static void counted_alloc(struct worker *w, int func, void *p, size_t size)
{
    if (!p)
        abort();
    memset(p, w->k, size < 64 ? size : 64);
    w->total.allocations++;
    w->total.bytes += size;
    w->func[func].allocations++;
    w->func[func].bytes += size;
    w->last_alloc = p;
}

/* Counts the free of p (made by this thread at site func), then frees it. */
static void counted_free(struct worker *w, int func, void *p)
{
    w->total.frees++;
    if (p == w->last_alloc) {
        w->total.temporary++;
        w->func[func].temporary++;
    }
    free(p);
}

__attribute__((noinline)) void free_slot(struct worker *w, int slot)
{
    if (w->window[slot]) {
        counted_free(w, w->window_func[slot], w->window[slot]);
        w->window[slot] = NULL;
    }
}

__attribute__((noinline)) void window_alloc(struct worker *w, uint64_t i)
{
    int slot = (int)(i % WINDOW);
    size_t size = 16 + (size_t)((i * 131 + (uint64_t)w->k * 17) % 1000);
    void *p;
    free_slot(w, slot);
    if (i % 5 == 0) {
        size = (size / 8 + 1) * 8;
        p = calloc(size / 8, 8);
    } else {
        p = malloc(size);
    }
    counted_alloc(w, F_WINDOW, p, size);
    w->window[slot] = p;
    w->window_size[slot] = size;
    w->window_func[slot] = F_WINDOW;
}

__attribute__((noinline)) void temp_alloc(struct worker *w)
{
    size_t size = 24 + (size_t)w->k;
    void *p = malloc(size);
    counted_alloc(w, F_TEMP, p, size);
    counted_free(w, F_TEMP, p);
}

__attribute__((noinline)) void free_window(struct worker *w, uint64_t next)
{
    /* oldest first: slot next % WINDOW was filled longest ago */
    for (int j = 0; j < WINDOW; j++)
        free_slot(w, (int)((next + (uint64_t)j) % WINDOW));
}

__attribute__((noinline)) void leak_blocks(struct worker *w)
{
    int n = w->k % 3 + 1;
    for (int j = 0; j < n; j++) {
        size_t size = 1000 + 10 * (size_t)w->k;
        counted_alloc(w, F_LEAK, malloc(size), size);
        w->total.leaked_bytes += size;
        w->total.leaked_blocks++;
        w->func[F_LEAK].leaked_bytes += size;
        w->func[F_LEAK].leaked_blocks++;
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    w->tid = (int)syscall(SYS_gettid);
    pthread_barrier_wait(&start_barrier);
    uint64_t i = 0;
    struct timespec pause = {pause_us / 1000000, (pause_us % 1000000) * 1000};
    for (uint64_t b = 0; !atomic_load_explicit(&stop, memory_order_relaxed); b++) {
        long n = b % STORM_EVERY == (uint64_t)w->k * 37 % STORM_EVERY ? STORM_ITERATIONS : burst;
        for (long j = 0; j < n; j++, i++) {
            window_alloc(w, i);
            if (i % 4 == 1)
                temp_alloc(w);
        }
        if (pause_us > 0)
            nanosleep(&pause, NULL);
    }
    free_window(w, i);
    leak_blocks(w);
    return NULL;
}

/* Output without stdio's buffer (which malloc's). */
static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(line) || write(1, line, (size_t)n) != n)
        _exit(3);
}

static void add(struct counts *a, const struct counts *b)
{
    a->allocations += b->allocations;
    a->frees += b->frees;
    a->bytes += b->bytes;
    a->temporary += b->temporary;
    a->leaked_bytes += b->leaked_bytes;
    a->leaked_blocks += b->leaked_blocks;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        static const char usage[] = "usage: mt64 SECONDS [THREADS [BURST [PAUSE_US]]]\n";
        (void)!write(2, usage, sizeof usage - 1);
        return 2;
    }
    double seconds = strtod(argv[1], NULL);
    int nthreads = argc > 2 ? atoi(argv[2]) : 64;
    if (argc > 3)
        burst = atol(argv[3]);
    if (argc > 4)
        pause_us = atol(argv[4]);
    if (seconds < 0 || nthreads < 1 || nthreads > MAX_THREADS || burst < 1 || pause_us < 0)
        return 2;

    pthread_barrier_init(&start_barrier, NULL, (unsigned)nthreads + 1);
    for (int k = 0; k < nthreads; k++) {
        workers[k].k = k;
        if (pthread_create(&workers[k].thread, NULL, worker_main, &workers[k]) != 0)
            return 1;
    }
    pthread_barrier_wait(&start_barrier);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
    atomic_store(&stop, 1);
    for (int k = 0; k < nthreads; k++)
        pthread_join(workers[k].thread, NULL);

    struct counts total = {0}, func[NFUNC] = {{0}};
    for (int k = 0; k < nthreads; k++) {
        const struct counts *c = &workers[k].total;
        out("mt64 thread %d tid %d allocations %llu frees %llu bytes %llu temporary %llu "
            "leaked_bytes %llu leaked_blocks %llu\n",
            k, workers[k].tid, (unsigned long long)c->allocations, (unsigned long long)c->frees,
            (unsigned long long)c->bytes, (unsigned long long)c->temporary,
            (unsigned long long)c->leaked_bytes, (unsigned long long)c->leaked_blocks);
        add(&total, c);
        for (int f = 0; f < NFUNC; f++)
            add(&func[f], &workers[k].func[f]);
    }
    for (int f = 0; f < NFUNC; f++)
        out("mt64 function %s allocations %llu bytes %llu temporary %llu leaked_bytes %llu "
            "leaked_blocks %llu\n",
            func_names[f], (unsigned long long)func[f].allocations,
            (unsigned long long)func[f].bytes, (unsigned long long)func[f].temporary,
            (unsigned long long)func[f].leaked_bytes, (unsigned long long)func[f].leaked_blocks);
    out("mt64 total allocations %llu frees %llu bytes %llu temporary %llu leaked_bytes %llu "
        "leaked_blocks %llu\n",
        (unsigned long long)total.allocations, (unsigned long long)total.frees,
        (unsigned long long)total.bytes, (unsigned long long)total.temporary,
        (unsigned long long)total.leaked_bytes, (unsigned long long)total.leaked_blocks);
    return 0;
}
