/*
 * sample.c - the production mode, `memviz run --sample BYTES`: allocations
 * are recorded as a Poisson process over the bytes allocated, as tcmalloc
 * and jemalloc sample their heaps. Each thread counts down an
 * exponentially distributed number of bytes (mean BYTES); the allocation
 * that takes the count below zero is recorded, and the count starts again.
 * An allocation of BYTES or more is always recorded. The others cost a
 * subtraction. Analysis weights each recorded allocation of s bytes by
 * 1 / (1 - exp(-s / BYTES)), its probability's inverse, which makes every
 * sum an unbiased estimate (analysis/profile.c).
 *
 * A release is recorded only for a block that was: the sampled blocks'
 * addresses are kept in a set that every release looks up (a probe or two
 * in a table sized to the sampled blocks, so it stays in cache). Lookups
 * take no lock; insertions and removals, rare, take one, and so does the
 * rebuild that clears the table of removed slots: a lookup that raced
 * with a rebuild reads the table as it was a moment before, which is
 * right for its block (its allocation and its release are its own
 * thread's business). Retired tables are kept, never reused.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"

#define TOMB ((uintptr_t)1)
#define MIN_SLOTS 4096u

struct set {
    size_t mask; /* slots - 1 */
    size_t used, tombs;
    _Atomic uintptr_t slot[];
};

uint64_t mvz_sample_bytes; /* 0: every allocation is recorded */
static _Atomic(struct set *) current;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seed;
static __thread int64_t left __attribute__((tls_model("initial-exec")));
static __thread uint64_t rng __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t thread_seq;

static struct set *set_new(size_t slots)
{
    struct set *s = mvz_map_zeroed(sizeof(*s) + slots * sizeof(s->slot[0]));
    if (s)
        s->mask = slots - 1;
    return s;
}

static size_t hash(uintptr_t p, size_t mask)
{
    return (size_t)(((uint64_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 20) & mask;
}

/* Under lock: p into s; 0, or -1 when s has no room. */
static int put(struct set *s, uintptr_t p)
{
    for (size_t i = hash(p, s->mask), n = 0; n <= s->mask; i = (i + 1) & s->mask, n++) {
        uintptr_t v = atomic_load_explicit(&s->slot[i], memory_order_relaxed);
        if (v == 0 || v == TOMB) {
            atomic_store_explicit(&s->slot[i], p, memory_order_release);
            s->used++;
            if (v == TOMB)
                s->tombs--;
            return 0;
        }
    }
    return -1;
}

/* Under lock: a table for what s holds, with room, without tombstones. */
static void rebuild(struct set *s, size_t live)
{
    size_t slots = MIN_SLOTS;
    while (slots < 8 * (live + 1))
        slots *= 2;
    struct set *n = set_new(slots);
    if (!n)
        return;
    for (size_t i = 0; s && i <= s->mask; i++) {
        uintptr_t v = atomic_load_explicit(&s->slot[i], memory_order_relaxed);
        if (v > TOMB)
            put(n, v);
    }
    atomic_store_explicit(&current, n, memory_order_release); /* s stays: a reader may be in it */
}

static int remember(uintptr_t p)
{
    pthread_mutex_lock(&lock);
    struct set *s = atomic_load_explicit(&current, memory_order_relaxed);
    if (!s || 4 * (s->used + s->tombs + 1) > s->mask + 1) {
        rebuild(s, s ? s->used : 0);
        s = atomic_load_explicit(&current, memory_order_relaxed);
    }
    int rc = s ? put(s, p) : -1;
    pthread_mutex_unlock(&lock);
    return rc;
}

int mvz_sample_forget(const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    struct set *s = atomic_load_explicit(&current, memory_order_acquire);
    if (!s)
        return 0;
    size_t i = hash(p, s->mask);
    for (size_t n = 0; n <= s->mask; i = (i + 1) & s->mask, n++) {
        uintptr_t v = atomic_load_explicit(&s->slot[i], memory_order_acquire);
        if (v == 0)
            return 0;
        if (v == p)
            break;
    }
    /* ours: remove it from the table that holds it now */
    pthread_mutex_lock(&lock);
    s = atomic_load_explicit(&current, memory_order_relaxed);
    int found = 0;
    for (size_t j = hash(p, s->mask), n = 0; n <= s->mask; j = (j + 1) & s->mask, n++) {
        uintptr_t v = atomic_load_explicit(&s->slot[j], memory_order_relaxed);
        if (v == 0)
            break;
        if (v == p) {
            atomic_store_explicit(&s->slot[j], TOMB, memory_order_release);
            s->used--;
            s->tombs++;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

void mvz_sample_restore(const void *p)
{
    remember((uintptr_t)p);
}

/* splitmix64: a seed for each thread from the run's and its number. */
static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* xorshift64*: the thread's own generator, seeded apart from the others. */
static double uniform(void)
{
    if (!rng)
        rng = mix(seed + mix(atomic_fetch_add(&thread_seq, 1) + 1)) | 1;
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0; /* [0, 1) */
}

static int64_t next_gap(void)
{
    double u = uniform();
    return (int64_t)(-log1p(-u) * (double)mvz_sample_bytes) + 1;
}

int mvz_sample_take(const void *p, size_t size)
{
    if (size < mvz_sample_bytes) {
        if (!left)
            left = next_gap();
        left -= (int64_t)size;
        if (left > 0)
            return 0;
        left = next_gap();
    }
    return remember((uintptr_t)p) == 0;
}

void mvz_sample_init(void)
{
    const char *v = getenv("MEMVIZ_SAMPLE");
    if (!v || !*v)
        return;
    mvz_sample_bytes = strtoull(v, NULL, 10);
    const char *s = getenv("MEMVIZ_SAMPLE_SEED");
    seed = s && *s ? strtoull(s, NULL, 10) : (uint64_t)mvz_now_ns() ^ (uint64_t)getpid();
}

/* The parent's set is the child's (it has the same blocks); the lock may
 * have been held by a thread the child does not have. */
void mvz_sample_after_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    rng = 0;
}
