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
 * in a table sized to the sampled blocks, so it stays in cache), inline in
 * the hook (agent.h), as is the countdown: an allocation or release that
 * is not recorded costs no call into this file. Lookups
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

#include "agent/addrmap.h"
#include "agent/agent.h"

#define TOMB MVZ_SAMPLE_TOMB
/* 2 KiB: a table this small stays in the level-1 cache beside the
 * program's own data; at 4096 slots, releases on the list workload cost
 * 4% more (bench/sample). */
#define MIN_SLOTS 256u

_Atomic uint64_t mvz_sample_bytes; /* 0: every allocation is recorded */
_Atomic int mvz_sample_all_frees;
_Atomic int mvz_sample_ever;
_Atomic(struct mvz_sample_set *) mvz_sample_current;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seed;
__thread int64_t mvz_sample_left __attribute__((tls_model("initial-exec")));
static __thread uint64_t rng __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t thread_seq;

static struct mvz_sample_set *set_new(size_t slots)
{
    struct mvz_sample_set *s = mvz_map_zeroed(sizeof(*s) + slots * sizeof(s->slot[0]));
    if (s)
        s->mask = slots - 1;
    return s;
}

/* Under lock: p into s; 0, or -1 when s has no room. */
static int put(struct mvz_sample_set *s, uintptr_t p)
{
    for (size_t i = mvz_sample_hash(p, s->mask), n = 0; n <= s->mask; i = (i + 1) & s->mask, n++) {
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
static void rebuild(struct mvz_sample_set *s, size_t live)
{
    size_t slots = MIN_SLOTS;
    while (slots < 8 * (live + 1))
        slots *= 2;
    struct mvz_sample_set *n = set_new(slots);
    if (!n)
        return;
    for (size_t i = 0; s && i <= s->mask; i++) {
        uintptr_t v = atomic_load_explicit(&s->slot[i], memory_order_relaxed);
        if (v > TOMB)
            put(n, v);
    }
    /* s stays: a reader may be in it */
    atomic_store_explicit(&mvz_sample_current, n, memory_order_release);
}

/* Under lock: p into the current table, rebuilt first when a quarter full. */
static int put_current(uintptr_t p)
{
    struct mvz_sample_set *s = atomic_load_explicit(&mvz_sample_current, memory_order_relaxed);
    if (!s || 4 * (s->used + s->tombs + 1) > s->mask + 1) {
        rebuild(s, s ? s->used : 0);
        s = atomic_load_explicit(&mvz_sample_current, memory_order_relaxed);
    }
    return s ? put(s, p) : -1;
}

static int remember(uintptr_t p)
{
    pthread_mutex_lock(&lock);
    int rc = put_current(p);
    pthread_mutex_unlock(&lock);
    return rc;
}

int mvz_sample_forget(const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    if (!mvz_sample_holds(p))
        return 0;
    /* ours: remove it from the table that holds it now */
    pthread_mutex_lock(&lock);
    struct mvz_sample_set *s = atomic_load_explicit(&mvz_sample_current, memory_order_relaxed);
    int found = 0;
    for (size_t j = mvz_sample_hash(p, s->mask), n = 0; n <= s->mask; j = (j + 1) & s->mask, n++) {
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

static int64_t next_gap(uint64_t rate)
{
    double u = uniform();
    return (int64_t)(-log1p(-u) * (double)rate) + 1;
}

int mvz_sample_take(const void *p, size_t size, uint64_t rate)
{
    if (size < rate) {
        if (!mvz_sample_left)
            mvz_sample_left = next_gap(rate);
        mvz_sample_left -= (int64_t)size;
        if (mvz_sample_left > 0)
            return 0;
        mvz_sample_left = next_gap(rate);
    }
    return remember((uintptr_t)p) == 0;
}

static void seed_rng(void)
{
    const char *s = getenv("MEMVIZ_SAMPLE_SEED");
    seed = s && *s ? strtoull(s, NULL, 10) : (uint64_t)mvz_now_ns() ^ (uint64_t)getpid();
}

void mvz_sample_init(void)
{
    const char *v = getenv("MEMVIZ_SAMPLE");
    if (!v || !*v)
        return;
    atomic_store(&mvz_sample_bytes, strtoull(v, NULL, 10));
    atomic_store(&mvz_sample_ever, atomic_load(&mvz_sample_bytes) != 0);
    seed_rng();
}

/* The parent's set is the child's (it has the same blocks); the lock may
 * have been held by a thread the child does not have. */
void mvz_sample_after_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    rng = 0;
}

/* ---- a live client's switch of the mode (run page; docs/LIVE.md) ----
 *
 * The switch takes an order key S, then publishes the rate: an event keyed
 * before S was decided under the old rate, one keyed after it under the
 * new one, except a thread caught between its decision and its key (the
 * collector tells those by MVZ_ENTRY_SAMPLED). The collector writes a
 * SAMPLING record before the first event at or after S.
 *
 * From full to sampled, the blocks recorded before must still have their
 * releases recorded: every release is, until the writer has drained past S
 * (the address table then holds every block allocated before it) and put
 * every live block of the table into a fresh set. */
static uint64_t transition_key; /* the writer's: S of the switch to sampled, while all_frees */
static uint32_t seen_gen;       /* the writer's: the page's request last served */

static void seed_one(void *ctx, uintptr_t addr, const struct mvz_addr_block *b)
{
    (void)ctx;
    (void)b;
    put_current(addr);
}

/* Under mvz_agent.lock (the address table is the writer's). */
static void end_transition(void)
{
    pthread_mutex_lock(&lock);
    mvz_addrmap_each(seed_one, NULL);
    pthread_mutex_unlock(&lock);
    atomic_store(&mvz_sample_all_frees, 0);
}

static void switch_to(uint64_t rate)
{
    uint64_t was = atomic_load(&mvz_sample_bytes);
    if (rate == was)
        return;
    uint64_t key = mvz_key_now(); /* before the rate is published: see above */
    if (!was) {
        pthread_mutex_lock(&lock);
        atomic_store_explicit(&mvz_sample_current, set_new(MIN_SLOTS), memory_order_release);
        pthread_mutex_unlock(&lock); /* the old table stays for lookups still in it */
        if (!seed)
            seed_rng();
        atomic_store(&mvz_sample_all_frees, 1);
        transition_key = key;
    }
    if (rate)
        atomic_store(&mvz_sample_ever, 1);
    mvz_collect_switch(key, rate);
    atomic_store(&mvz_sample_bytes, rate);
}

/* The trace's first SAMPLING record, when it starts sampled (--sample,
 * or a fork child of a sampled run). */
void mvz_sample_write_record(void)
{
    uint64_t rate = atomic_load(&mvz_sample_bytes);
    mvz_collect_set_rate(rate);
    if (!rate)
        return;
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, rate);
    mvz_put_uvarint(&b, 0);
    mvz_write_record(MVZ_REC_SAMPLING, &b);
    mvz_buf_free(&b);
}

void mvz_sample_poll_locked(void)
{
    uint32_t gen;
    uint64_t rate;
    if (mvz_runpage_sample_request(&gen, &rate) && gen != seen_gen) {
        seen_gen = gen;
        switch_to(rate);
        mvz_runpage_sample_done(gen, rate);
    }
    mvz_collect_switch_due(&mvz_agent.writer, mvz_rings_drained_below());
    if (atomic_load(&mvz_sample_all_frees) && !mvz_collect_switch_pending() &&
        mvz_rings_drained_below() > transition_key)
        end_transition();
}
