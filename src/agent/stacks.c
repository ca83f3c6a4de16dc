/*
 * stacks.c - captures the call stack of an allocation and turns it into a
 * small id, defining each distinct stack once in the trace (STACK record).
 *
 * Unwinding uses libunwind (DWARF CFI, so it works through code built
 * without frame pointers), loaded with dlopen(RTLD_LOCAL) so that its
 * _Unwind_* and backtrace() symbols never replace the program's.
 *
 * Frames are kept outermost first here (the order the unwinder produces
 * them in and hashes them); STACK records list them innermost first.
 *
 * Consecutive stacks of a thread mostly differ in their inner frames only, so
 * a new stack's record names as its base the stack its thread captured last
 * and lists only the frames past their common outer part (format 4). The
 * base is always an id whose record is already queued: it was defined
 * before, under meta_lock, in the same epoch, and `meta` keeps its order. A
 * base from an earlier module generation is fine: readers copy its frames
 * as addresses and resolve them in the new stack's generation, and within
 * one epoch no module went away, so those addresses still mean the same
 * code. Chains of bases are cut after MAX_BASE_CHAIN links so that a damaged
 * chunk leaves only a few later stacks undefined.
 *
 * Deduplication: the thread that looks a stack up (the capturing thread,
 * or, once that has many stacks, whoever drains its ring: see "frame
 * records" below) has a direct-mapped cache from stack hash to the stack's
 * entry; on a miss, the global table (under mvz_agent.meta_lock) finds or
 * defines the stack. The cache starts small and grows while it misses
 * often. Cache hits are verified by comparing frames,
 * so two stacks never share an id. Entries (id, frames) live in an
 * append-only arena and are never moved or changed. `epoch` changes when
 * ids must be defined afresh (a module was unloaded, so an address may now
 * mean different code; or we are a new fork child with a new trace);
 * caches compare it and the table is emptied.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/agent.h"

/* A thread's cache (and the writer's, for the threads that hand it their
 * stacks) starts at CACHE_MIN slots and grows fourfold, up to CACHE_MAX, when more
 * than 1/CACHE_MISS_SHARE of its latest CACHE_TURN lookups missed.
 * cc1plus's 44,000 stacks missed 37% of 2.4 M lookups in 1,024 slots, 15%
 * in 4,096 and 6% in 16,384; CPython and sqlite3 miss too seldom to grow
 * and keep 8 KiB (1,024 one-word slots). */
#define CACHE_MIN 1024u
#define CACHE_MAX 16384u
#define CACHE_TURN 65536u
#define CACHE_MISS_SHARE 8u
#define AGENT_FRAMES_MAX 16 /* our own frames on top of every stack */
#define MAX_BASE_CHAIN 256
#define MIN_SHARED 2 /* fewer shared frames cost more than they save */

_Static_assert(MVZ_MAX_DEPTH <= MVZ_STACK_MAX_FRAMES, "readers reject deeper stacks");

/* A stack once defined: immutable, in the arena, never freed while
 * recording. The caches and the table point at it. */
struct stack_entry {
    uint64_t hash;
    uint32_t id;
    uint32_t depth;
    uint32_t epoch;
    uint32_t chain; /* bases behind this stack's record */
    uintptr_t frames[];
};

/* A cache slot is an entry's address with the top 16 bits of its hash in
 * the (unused) top 16 bits of the word, 0 when empty: 8 bytes, so that
 * cc1plus's grown cache is 128 KiB and mostly stays in L2 next to the
 * program's data (32-byte slots with the fields inline missed there on
 * most lookups: two thirds of the lookup's time). A tag that differs
 * settles a miss without touching the entry. */
typedef uintptr_t cache_slot;
#define SLOT_PTR_BITS 48
#define SLOT_PTR_MASK ((UINT64_C(1) << SLOT_PTR_BITS) - 1)

static inline uintptr_t slot_tag(uint64_t hash)
{
    return (uintptr_t)(hash >> SLOT_PTR_BITS) << SLOT_PTR_BITS;
}

struct mvz_stack_cache {
    uint32_t mask;                  /* slots - 1 */
    uint32_t lookups, misses;       /* in the current turn */
    const struct stack_entry *prev; /* looked up last: the base of the next new stack */
    cache_slot slots[];             /* mask + 1 */
};

static size_t cache_bytes(uint32_t slots)
{
    return sizeof(struct mvz_stack_cache) + slots * sizeof(cache_slot);
}

/* The hash is the entry's, kept here too so that a probe passes other
 * stacks without touching their entries. */
struct table_entry {
    uint64_t hash;
    const struct stack_entry *e; /* NULL = empty */
};

static int (*unw_backtrace_fn)(void **, int);
static _Atomic uint32_t epoch = 1;
static uint32_t next_id = MVZ_STACK_FIRST;
static struct table_entry *table;
static size_t table_cap, table_used;
static struct mvz_buf meta; /* encoded records waiting for the writer */

void mvz_stacks_thread_exit(void)
{
    if (mvz_tls.cache)
        mvz_unmap(mvz_tls.cache, cache_bytes(mvz_tls.cache->mask + 1));
    mvz_tls.cache = NULL;
    mvz_tls.offload = 0;
    mvz_tls.last_stack_epoch = 0;
    mvz_unwind_thread_exit();
}

uint32_t mvz_stacks_epoch(void)
{
    return atomic_load_explicit(&epoch, memory_order_relaxed);
}

static void load_libunwind(void)
{
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    typedef int (*set_policy_fn)(void *, int);
    set_policy_fn set_policy = (set_policy_fn)dlsym(h, "_ULx86_64_set_caching_policy");
    void **space = dlsym(h, "_ULx86_64_local_addr_space");
    if (set_policy && space)
        set_policy(*space, 2 /* UNW_CACHE_PER_THREAD */);
    unw_backtrace_fn = (int (*)(void **, int))dlsym(h, "unw_backtrace");
}

void mvz_stacks_init(void)
{
    mvz_tls.internal++;
    load_libunwind();
    if (!unw_backtrace_fn) {
        static const char msg[] = "memviz: libunwind.so.8 not found; stacks not recorded\n";
        (void)!write(2, msg, sizeof(msg) - 1);
    }
    mvz_tls.internal--;
}

/* ---- arena of entries: append-only, never freed while recording ---- */
static uintptr_t *arena_pos, *arena_end;

/* A new entry for frames[0..n), its id and links still to be set; NULL
 * when out of memory. */
static struct stack_entry *arena_entry(const uintptr_t *frames, uint32_t n)
{
    size_t words = sizeof(struct stack_entry) / sizeof(uintptr_t) + n;
    if (!arena_pos || (size_t)(arena_end - arena_pos) < words) {
        size_t chunk = (1u << 20) / sizeof(uintptr_t);
        if (chunk < words)
            chunk = words;
        arena_pos = mvz_map_zeroed(chunk * sizeof(uintptr_t));
        if (!arena_pos)
            return NULL;
        arena_end = arena_pos + chunk;
    }
    struct stack_entry *e = (struct stack_entry *)arena_pos;
    memcpy(e->frames, frames, n * sizeof(*frames));
    e->depth = n;
    arena_pos += words;
    return e;
}

/* ---- global table ---- */
static int table_grow(void)
{
    size_t cap = table_cap ? table_cap * 2 : 4096;
    struct table_entry *t = mvz_map_table(cap * sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = 0; i < table_cap; i++) {
        if (!table[i].e)
            continue;
        size_t j = table[i].hash & (cap - 1);
        while (t[j].e)
            j = (j + 1) & (cap - 1);
        t[j] = table[i];
    }
    if (table)
        mvz_unmap(table, table_cap * sizeof(*table));
    /* stored atomically: lookup reads them without the lock, to prefetch */
    __atomic_store_n(&table, t, __ATOMIC_RELAXED);
    __atomic_store_n(&table_cap, cap, __ATOMIC_RELAXED);
    return 0;
}

/* How many outer frames the new stack takes from base; 0 when base cannot
 * serve: none, from another epoch (its record may be in another process's
 * trace, or in none), too long a chain, or too little in common. */
static uint32_t shared_with(const struct stack_entry *base, uint32_t ep, const uintptr_t *frames,
                            uint32_t n)
{
    if (!base || base->epoch != ep || base->chain >= MAX_BASE_CHAIN)
        return 0;
    uint32_t max = n < base->depth ? n : base->depth, k = 0;
    while (k < max && frames[k] == base->frames[k])
        k++;
    return k >= MIN_SHARED ? k : 0;
}

static void write_stack_record(const struct stack_entry *e, uint32_t gen,
                               const struct stack_entry *base, uint32_t shared)
{
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, e->id);
    mvz_put_uvarint(&b, gen);
    mvz_put_uvarint(&b, e->depth);
    mvz_put_uvarint(&b, shared ? e->id - base->id : 0); /* ids only grow */
    mvz_put_uvarint(&b, shared);
    uintptr_t prev = 0;
    for (uint32_t i = e->depth; i-- > shared;) {
        mvz_put_svarint(&b, (int64_t)(e->frames[i] - prev));
        prev = e->frames[i];
    }
    mvz_meta_append(MVZ_REC_STACK, &b);
    mvz_buf_free(&b);
}

/* Caller holds meta_lock. The stack was captured in epoch ep and module
 * generation gen: a stack resolved after a module went away (a later
 * epoch) still gets an id of its own epoch, whose record names the
 * generation its addresses belong to. */
static const struct stack_entry *table_find_or_add(uint64_t hash, const uintptr_t *frames,
                                                   uint32_t n, uint32_t ep, uint32_t gen,
                                                   const struct stack_entry *base)
{
    if ((table_used + 1) * 2 > table_cap && table_grow() < 0)
        return NULL;
    size_t j = hash & (table_cap - 1);
    for (; table[j].e; j = (j + 1) & (table_cap - 1)) {
        const struct stack_entry *e = table[j].e;
        if (table[j].hash == hash && e->depth == n && e->epoch == ep &&
            !memcmp(e->frames, frames, n * sizeof(*frames)))
            return e;
    }
    struct stack_entry *e = arena_entry(frames, n);
    if (!e)
        return NULL;
    e->hash = hash;
    e->id = next_id++;
    e->epoch = ep;
    uint32_t shared = shared_with(base, ep, frames, n);
    e->chain = shared ? base->chain + 1 : 0;
    table[j] = (struct table_entry){hash, e};
    table_used++;
    write_stack_record(e, gen, base, shared);
    return e;
}

/* A fresh cache of `slots` slots that remembers old's previous stack, or
 * NULL when out of memory. */
static struct mvz_stack_cache *cache_new(uint32_t slots, const struct mvz_stack_cache *old)
{
    struct mvz_stack_cache *c = mvz_map_zeroed(cache_bytes(slots));
    if (!c)
        return NULL;
    c->mask = slots - 1;
    if (old)
        c->prev = old->prev;
    return c;
}

/* Ends a turn of lookups: a cache that missed often grows (empty: it is
 * only a cache). It stays as it is when memory is short. */
static void cache_turn_end(void)
{
    struct mvz_stack_cache *c = mvz_tls.cache, *bigger;
    uint32_t slots = c->mask + 1;
    int grow = c->misses > CACHE_TURN / CACHE_MISS_SHARE && slots < CACHE_MAX;
    c->lookups = c->misses = 0;
    if (grow && (bigger = cache_new(slots * 4, c))) {
        mvz_unmap(c, cache_bytes(slots));
        mvz_tls.cache = bigger;
    }
    /* A thread with that many stacks hands them to the drainer from now on. */
    if (grow)
        mvz_tls.offload = 1;
}

static inline cache_slot *cache_slot_for(uint64_t hash)
{
    if (MVZ_UNLIKELY(!mvz_tls.cache) && !(mvz_tls.cache = cache_new(CACHE_MIN, NULL)))
        return NULL;
    if (MVZ_UNLIKELY(++mvz_tls.cache->lookups == CACHE_TURN))
        cache_turn_end();
    return &mvz_tls.cache->slots[hash & mvz_tls.cache->mask];
}

/* Frames outermost first, hashed in that order, as unwind.c does. */
static uint64_t hash_frames(const uintptr_t *f, uint32_t n)
{
    uint64_t h = MVZ_HASH_SEED;
    for (uint32_t i = 0; i < n; i++)
        h = mvz_hash_step(h, f[i]);
    return mvz_hash_finish(h, n);
}

/* Short stacks compared inline: a call into libc's memcmp was 1% of the
 * mt bench's time (stacks of five frames); it is faster on deep ones. */
static inline int same_frames(const uintptr_t *a, const uintptr_t *b, uint32_t n)
{
    if (n > 8)
        return !memcmp(a, b, n * sizeof(*a));
    for (uint32_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

/* The entry a slot holds when it is this stack's, else NULL. */
static inline const struct stack_entry *slot_match(cache_slot s, uint64_t hash, uint32_t ep,
                                                   const uintptr_t *frames, uint32_t n)
{
    if (!s || (s & ~SLOT_PTR_MASK) != slot_tag(hash))
        return NULL;
    const struct stack_entry *e = (const struct stack_entry *)(s & SLOT_PTR_MASK);
    if (e->hash == hash && e->epoch == ep && e->depth == n && same_frames(e->frames, frames, n))
        return e;
    return NULL;
}

static void cache_fill(cache_slot *c, const struct stack_entry *e)
{
    /* An address above the tag's bits (5-level paging) is not cached. */
    uintptr_t p = (uintptr_t)e;
    *c = p & ~SLOT_PTR_MASK ? 0 : slot_tag(e->hash) | p;
}

/* A stack the thread's cache does not hold: from the shared table, under
 * the lock, added if new. */
static __attribute__((noinline)) uint32_t lookup_shared(const uintptr_t *frames, uint32_t n,
                                                        uint64_t hash, uint32_t ep, uint32_t gen,
                                                        const struct stack_entry **base,
                                                        cache_slot *c)
{
    if (c)
        mvz_tls.cache->misses++;
    mvz_tls.internal++;
    pthread_mutex_lock(&mvz_agent.meta_lock);
    const struct stack_entry *e = table_find_or_add(hash, frames, n, ep, gen, *base);
    if (e && c)
        cache_fill(c, e);
    pthread_mutex_unlock(&mvz_agent.meta_lock);
    mvz_tls.internal--;
    *base = e;
    return e ? e->id : MVZ_STACK_NONE;
}

/* The id of a stack captured in epoch ep and generation gen; *base is
 * the stack its thread had before (the base of a new stack's record) and
 * becomes this one. Inline: most lookups hit the thread's cache. */
static inline __attribute__((always_inline)) uint32_t lookup(const uintptr_t *frames, uint32_t n,
                                                             uint64_t hash, uint32_t ep,
                                                             uint32_t gen,
                                                             const struct stack_entry **base)
{
    /* The shared table's entry is fetched while the thread's cache is
     * checked: on a miss both loads miss (cc1plus). Not once the cache is
     * as large as it gets: it then misses seldom (6% on cc1plus), and the
     * fetch cost more than it saved (overhead x0.98 without it). A stale
     * table or size, read without the lock, only makes the prefetch
     * useless: prefetches never fault. */
    struct table_entry *tab = __atomic_load_n(&table, __ATOMIC_RELAXED);
    if (tab && (!mvz_tls.cache || mvz_tls.cache->mask + 1 < CACHE_MAX))
        __builtin_prefetch(&tab[hash & (__atomic_load_n(&table_cap, __ATOMIC_RELAXED) - 1)]);
    cache_slot *c = cache_slot_for(hash);
    const struct stack_entry *e = c ? slot_match(*c, hash, ep, frames, n) : NULL;
    if (e) {
        *base = e;
        return e->id;
    }
    return lookup_shared(frames, n, hash, ep, gen, base, c);
}

/* ---- frame records: from the thread that captured them to the drainer ----
 *
 * A thread whose cache has grown (mvz_tls.offload) does not look its
 * stacks up: on cc1plus that lookup (a cache slot and an entry among
 * 44,000, missing cache next to the compiler's data) was a third of what
 * memviz added. It writes the frames that differ from its previous stack
 * to its ring's frame area instead, and whoever drains the ring (the
 * writer thread, mostly on another CPU) looks them up, in ring order,
 * against its copy of that previous stack. Threads with few stacks keep
 * looking them up themselves: for them a record costs more than a lookup
 * that hits (CPython x1.12 when every thread wrote records).
 *
 * A record: word 0 = n | shared << 16 | serial << 32, word 1 = the hash,
 * word 2 = epoch | generation << 32, then frames shared..n-1 (outermost
 * first). `shared` outer frames are the previous record's; `serial` counts
 * the thread's records, so that a record whose predecessor never arrived
 * (its event was dropped) cannot borrow the wrong frames. */
#define RECORD_HEADER 3u
#define FRAME_MASK (MVZ_FRAME_WORDS - 1)
_Static_assert(MVZ_MAX_DEPTH < 0x10000, "n and shared take 16 bits");
_Static_assert((MVZ_FRAME_WORDS & FRAME_MASK) == 0, "a power of two");

/* Appends a record; returns its position, or -1 when the area is full. */
static int64_t push_record(struct mvz_frames *f, const uintptr_t *frames, uint32_t n,
                           uint32_t shared, uint64_t hash, uint32_t ep)
{
    uint64_t words = RECORD_HEADER + n - shared;
    uint64_t p = atomic_load_explicit(&f->head, memory_order_relaxed);
    if (MVZ_FRAME_WORDS - (p - f->tail_seen) < words) {
        f->tail_seen = atomic_load_explicit(&f->tail, memory_order_acquire);
        if (MVZ_FRAME_WORDS - (p - f->tail_seen) < words)
            return -1;
    }
    f->w[p & FRAME_MASK] = n | shared << 16 | (uint64_t)++f->records << 32;
    f->w[(p + 1) & FRAME_MASK] = hash;
    f->w[(p + 2) & FRAME_MASK] = ep | (uint64_t)mvz_modules_generation() << 32;
    for (uint32_t i = shared; i < n; i++)
        f->w[(p + RECORD_HEADER + i - shared) & FRAME_MASK] = frames[i];
    atomic_store_explicit(&f->head, p + words, memory_order_relaxed);
    return (int64_t)p;
}

uint32_t mvz_stack_resolve(struct mvz_frames *f, uint32_t stack, uint8_t kind)
{
    if (kind == MVZ_SK_ID)
        return stack;
    if (kind == MVZ_SK_SAME)
        return f->valid ? f->id : MVZ_STACK_NONE;
    /* The record is at or after tail, less than the area's size ahead. */
    uint64_t tail = atomic_load_explicit(&f->tail, memory_order_relaxed);
    uint64_t p = tail + (uint32_t)(stack - (uint32_t)tail);
    uint64_t w0 = f->w[p & FRAME_MASK];
    uint32_t n = w0 & 0xffff, shared = (w0 >> 16) & 0xffff, serial = (uint32_t)(w0 >> 32);
    uint64_t hash = f->w[(p + 1) & FRAME_MASK], eg = f->w[(p + 2) & FRAME_MASK];
    int ok = n <= MVZ_MAX_DEPTH && shared <= n &&
             p - tail + RECORD_HEADER + n - shared <= MVZ_FRAME_WORDS &&
             (shared == 0 || (f->valid && shared <= f->n && serial == f->serial + 1));
    f->serial = serial;
    f->valid = ok;
    if (!ok) { /* cannot happen short of a bug; the stack is lost, not wrong */
        atomic_store_explicit(&f->tail, p + RECORD_HEADER, memory_order_release);
        return MVZ_STACK_NONE;
    }
    for (uint32_t i = shared; i < n; i++)
        f->stack[i] = f->w[(p + RECORD_HEADER + i - shared) & FRAME_MASK];
    f->n = n;
    atomic_store_explicit(&f->tail, p + RECORD_HEADER + n - shared, memory_order_release);
    const struct stack_entry *base = f->entry;
    f->id =
        n ? lookup(f->stack, n, hash, (uint32_t)eg, (uint32_t)(eg >> 32), &base) : MVZ_STACK_NONE;
    f->entry = base;
    return f->id;
}

void mvz_stack_dropped(uint8_t kind)
{
    if (kind == MVZ_SK_FRAMES) /* its record never reaches the drainer */
        mvz_unwind_forget();
}

static int unwind_check = -1; /* MEMVIZ_UNWIND_CHECK=1: compare with libunwind */
static int unwind_mode = -1;  /* MEMVIZ_UNWIND=libunwind: never the fast path */
static int ids_by_drainer;    /* MEMVIZ_STACK_IDS=writer: every thread hands over */

static void read_unwind_env(void)
{
    const char *c = getenv("MEMVIZ_UNWIND_CHECK");
    const char *m = getenv("MEMVIZ_UNWIND");
    unwind_check = c && *c == '1';
    unwind_mode = m && !strcmp(m, "libunwind");
    const char *ids = getenv("MEMVIZ_STACK_IDS");
    ids_by_drainer = ids && !strcmp(ids, "writer");
}

/* libunwind's view of the same stack, our frames removed, outermost first. */
static int unwind_general(uintptr_t *out, int max)
{
    if (!unw_backtrace_fn)
        return 0;
    void *buf[MVZ_MAX_DEPTH + AGENT_FRAMES_MAX];
    /* The first unwind of a thread sets up libunwind's per-thread cache,
     * which allocates; later unwinds do not. */
    int first = !mvz_tls.unwound_once;
    mvz_tls.unwound_once = 1;
    mvz_tls.internal += first;
    int n = unw_backtrace_fn(buf, max + AGENT_FRAMES_MAX);
    mvz_tls.internal -= first;
    int depth = 0;
    for (int i = 0; i < n && depth < max; i++)
        if (!mvz_modules_is_agent((uintptr_t)buf[i]))
            depth++;
    for (int i = 0, d = depth; i < n && d > 0; i++)
        if (!mvz_modules_is_agent((uintptr_t)buf[i]))
            out[--d] = (uintptr_t)buf[i];
    return depth;
}

static void report_mismatch(const uintptr_t *a, int na, const uintptr_t *b, int nb)
{
    static _Atomic int reported;
    if (atomic_fetch_add(&reported, 1) >= 5)
        return;
    int i = 0;
    while (i < na && i < nb && a[i] == b[i])
        i++;
    char msg[200];
    int len =
        snprintf(msg, sizeof(msg),
                 "memviz: unwinder mismatch at frame %d (from the outermost) of %d/%d: fast %#lx, "
                 "libunwind %#lx\n",
                 i, na, nb, i < na ? (unsigned long)a[i] : 0ul, i < nb ? (unsigned long)b[i] : 0ul);
    if (len > 0)
        (void)!write(2, msg, (size_t)len);
}

/* A lookup by the capturing thread itself, its own previous stack as the
 * base: what threads with few stacks do (their cache hits, and cheaply). */
static inline __attribute__((always_inline)) uint32_t
own_lookup(const uintptr_t *frames, uint32_t n, uint64_t hash, uint32_t ep)
{
    const struct stack_entry *base = mvz_tls.cache ? mvz_tls.cache->prev : NULL;
    uint32_t id = lookup(frames, n, hash, ep, mvz_modules_generation(), &base);
    if (mvz_tls.cache) /* the lookup may have grown it */
        mvz_tls.cache->prev = base;
    return id;
}

/* The id (or frame record) of a walk's stack for a slot of ring r. */
static inline __attribute__((always_inline)) uint32_t
stack_of_walk(struct mvz_ring *r, uint8_t *kind, const uintptr_t *frames, int n, uint64_t hash,
              int shared, int same, int fast)
{
    *kind = MVZ_SK_ID;
    if (n <= 0)
        return MVZ_STACK_NONE;
    uint32_t ep = atomic_load_explicit(&epoch, memory_order_relaxed);
    if (mvz_tls.offload) {
        if (same) {
            *kind = MVZ_SK_SAME;
            return 0;
        }
        int64_t pos =
            r ? push_record(mvz_ring_frames(r), frames, (uint32_t)n, (uint32_t)shared, hash, ep)
              : -1;
        if (pos >= 0) {
            *kind = MVZ_SK_FRAMES;
            return (uint32_t)pos;
        }
        /* No room (recording is ending) or no ring: looked up here. */
        mvz_unwind_forget();
        mvz_tls.last_stack_epoch = 0;
        return own_lookup(frames, (uint32_t)n, hash, ep);
    }
    /* last_stack belongs to the fast unwinder's previous walk; only a fast
     * unwind that found the same walk may reuse it. */
    if (same && mvz_tls.last_stack_epoch == ep)
        return mvz_tls.last_stack;
    uint32_t id = own_lookup(frames, (uint32_t)n, hash, ep);
    if (mvz_tls.offload) /* just switched: its first record shares nothing */
        mvz_unwind_forget();
    mvz_tls.last_stack = id;
    mvz_tls.last_stack_epoch = fast ? ep : 0;
    return id;
}

/* The stack by libunwind: out of line, so that the fast path's frame stays
 * small (this buffer would put the hook's frames 8 KiB further down the
 * program's stack, on lines of their own). */
static __attribute__((noinline)) uint32_t capture_general(struct mvz_ring *r, uint8_t *kind,
                                                          int max)
{
    uintptr_t general[MVZ_MAX_DEPTH];
    int n = unwind_general(general, max);
    uint64_t hash = hash_frames(general, (uint32_t)(n > 0 ? n : 0));
    mvz_unwind_forget(); /* the next record must not lean on the fast walk */
    return stack_of_walk(r, kind, general, n, hash, 0, 0, 0);
}

/* A remembered walk's stack that a new walk does not confirm
 * (MEMVIZ_UNWIND_CHECK=1 makes the walk anyway). */
static void report_site_mismatch(uint32_t remembered, uint32_t walked)
{
    static _Atomic int reported;
    if (atomic_fetch_add(&reported, 1) >= 5)
        return;
    char msg[160];
    int len = snprintf(msg, sizeof(msg),
                       "memviz: unwinder mismatch: remembered walk gave stack %u, a new walk %u\n",
                       remembered, walked);
    if (len > 0)
        (void)!write(2, msg, (size_t)len);
}

/* libunwind's walk, compared with the fast one's (MEMVIZ_UNWIND_CHECK=1). */
static __attribute__((noinline)) void check_fast_walk(const uintptr_t *frames, int n, int max)
{
    uintptr_t general[MVZ_MAX_DEPTH];
    int m = unwind_general(general, max);
    if (m != n || memcmp(frames, general, (size_t)n * sizeof(*frames)))
        report_mismatch(frames, n, general, m);
}

uint32_t mvz_stack_of_frames(struct mvz_ring *r, uint8_t *kind, const uintptr_t *frames, int n)
{
    uint64_t hash = hash_frames(frames, (uint32_t)n);
    mvz_unwind_forget(); /* the next fast walk must not lean on this one */
    return stack_of_walk(r, kind, frames, n, hash, 0, 0, 0);
}

uint32_t mvz_stack_capture(struct mvz_ring *r, uint8_t *kind, const void *hook_frame)
{
    int max = mvz_agent.depth, n = 0, shared = 0, same = 0;
    uint64_t hash = 0;
    uint32_t cg_id;
    if (MVZ_UNLIKELY(mvz_cg_on) && mvz_callgraph_stack(r, kind, hook_frame, &cg_id))
        return cg_id;
    if (MVZ_UNLIKELY(unwind_check < 0))
        read_unwind_env();
    if (MVZ_UNLIKELY(ids_by_drainer) && !mvz_tls.offload) {
        mvz_tls.offload = 1; /* before the walk: its first record shares nothing */
        mvz_unwind_forget();
    }
    /* Threads that hand their stacks over send frames, not ids. */
    int by_site = !unwind_mode && !mvz_tls.offload;
    uint32_t ep = atomic_load_explicit(&epoch, memory_order_relaxed), site_id = 0;
    int found = by_site && mvz_unwind_site_find(hook_frame, ep, &site_id);
    if (found && !unwind_check) {
        *kind = MVZ_SK_ID;
        return site_id;
    }
    const uintptr_t *frames =
        unwind_mode ? NULL : mvz_unwind_fast(hook_frame, max, &n, &hash, &shared, &same);
    if (!frames)
        return capture_general(r, kind, max);
    if (MVZ_UNLIKELY(unwind_check))
        check_fast_walk(frames, n, max);
    uint32_t id = stack_of_walk(r, kind, frames, n, hash, shared, same, 1);
    if (MVZ_UNLIKELY(found) && id != site_id)
        report_site_mismatch(site_id, id);
    if (by_site && !mvz_tls.offload && *kind == MVZ_SK_ID && id >= MVZ_STACK_FIRST)
        mvz_unwind_site_keep(ep, id);
    return id;
}

/* Called with mvz_agent.meta_lock held. */
void mvz_stacks_new_generation(void)
{
    if (table)
        memset(table, 0, table_cap * sizeof(*table));
    table_used = 0;
    atomic_fetch_add(&epoch, 1);
}

void mvz_stacks_after_fork_child(void)
{
    mvz_stacks_new_generation();
    meta.len = 0;
    mvz_unwind_forget(); /* the child's ring starts without a previous stack */
}

/* Caller holds mvz_agent.meta_lock. */
void mvz_meta_append(uint8_t kind, const struct mvz_buf *payload)
{
    mvz_tls.internal++;
    mvz_put_record(&meta, kind, payload);
    mvz_tls.internal--;
}

/* Caller holds mvz_agent.lock (the writer), not meta_lock. */
void mvz_meta_drain(struct mvz_chunk_writer *w)
{
    pthread_mutex_lock(&mvz_agent.meta_lock);
    if (meta.len) {
        mvz_put_bytes(&w->queued.raw, meta.data, meta.len);
        meta.len = 0;
    }
    pthread_mutex_unlock(&mvz_agent.meta_lock);
}
