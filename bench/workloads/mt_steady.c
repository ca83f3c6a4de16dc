/* Workload "mt": a long-running multi-threaded program with a steady live set.
 * THREADS threads share a table of THREADS*LIVE slots, filled at start. Each
 * operation picks a random slot, allocates a block of a mixed size (70%
 * 16-128 B, 25% 128 B-4 KiB, 4.9% 4-64 KiB, 0.1% 256 KiB-1 MiB), writes
 * into it, swaps it into the slot (atomically, so about 3/4 of the blocks are
 * freed by another thread than the one that allocated them) and frees the
 * block it took out; between operations it does a little arithmetic on the
 * data, so that the program is not only malloc. The live set stays at
 * THREADS*LIVE blocks whatever OPS is, which is what the steady-state
 * analyzer measurement relies on (10x the OPS is 10x the events, the same
 * live set).
 * usage: mt_steady [OPS_PER_THREAD [THREADS [LIVE_PER_THREAD]]]
 *        (defaults 1000000, 4, 20000)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long ops_per_thread = 1000000;
static int nthreads = 4;
static long live_per_thread = 20000;
static long nslots;
static char **slots;

static inline uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t pick_size(uint64_t *s)
{
    uint64_t r = rnd(s);
    unsigned p = (unsigned)(r % 1000);
    r >>= 10;
    if (p < 700)
        return 16 + r % 113;
    if (p < 950)
        return 128 + r % (4096 - 128);
    if (p < 999)
        return 4096 + r % (65536 - 4096);
    return 262144 + r % (1048576 - 262144);
}

static char *make(uint64_t *s)
{
    size_t sz = pick_size(s);
    char *p = malloc(sz);
    if (!p)
        abort();
    memset(p, (int)(sz & 0xff), sz < 256 ? sz : 256);
    p[sz - 1] = 1;
    return p;
}

static void *worker(void *arg)
{
    uint64_t s = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1);
    uint64_t acc = 0;
    for (long i = 0; i < ops_per_thread; i++) {
        long slot = (long)(rnd(&s) % (uint64_t)nslots);
        char *p = make(&s);
        char *old = __atomic_exchange_n(&slots[slot], p, __ATOMIC_ACQ_REL);
        for (int k = 0; k < 16; k++) /* a little work on the data */
            acc = acc * 31 + (unsigned char)old[k] + (acc >> 7);
        free(old);
    }
    return (void *)(uintptr_t)acc;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        ops_per_thread = atol(argv[1]);
    if (argc > 2)
        nthreads = atoi(argv[2]);
    if (argc > 3)
        live_per_thread = atol(argv[3]);
    if (nthreads < 1 || nthreads > 256 || live_per_thread < 1)
        return 2;
    nslots = nthreads * live_per_thread;
    slots = calloc((size_t)nslots, sizeof *slots);
    uint64_t s = 42;
    for (long i = 0; i < nslots; i++)
        slots[i] = make(&s);
    pthread_t t[256];
    for (int i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    uint64_t acc = 0;
    for (int i = 0; i < nthreads; i++) {
        void *r;
        pthread_join(t[i], &r);
        acc += (uintptr_t)r;
    }
    for (long i = 0; i < nslots; i++)
        free(slots[i]);
    free(slots);
    printf("%llu\n", (unsigned long long)(acc & 0xffff));
    return 0;
}
