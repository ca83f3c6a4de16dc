/*
 * ring.c - per-thread event buffers. Each thread owns one ring and is its
 * only producer; the writer (whoever holds mvz_agent.lock) is the only
 * consumer. No lock is taken on the hot path.
 *
 * A slot is published by storing its sequence number last (release); the
 * consumer takes slots in order and stops at the first unpublished one.
 * Producers reserve slots with an atomic increment, so a signal handler that
 * interrupts a producer between reservation and publication takes the next
 * slot instead of overwriting this one. Top-level producers keep
 * NESTED_HEADROOM slots free for such handlers, which never wait.
 */
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "trace/event_codec.h"

#define RING_SLOTS 8192u
#define NESTED_HEADROOM 64u
#define EVENTS_PER_RECORD 16384u

/* head is written only by the owner thread, tail only by the consumer; they
 * live on separate cache lines so that neither side's writes evict the
 * other's line on every event. */
struct mvz_ring {
    struct mvz_ring *next; /* registry, under mvz_agent.lock */
    int tid;
    _Atomic int dead; /* owner thread exited; free once drained */
    _Alignas(64) _Atomic uint64_t head;
    uint64_t tail_seen;         /* the producer's last look at tail */
    _Atomic uint64_t in_flight; /* 0, or a lower bound on the key of an unpublished event */
    uint64_t last_key;          /* key of the owner's latest top-level event */
    uint64_t emitted;           /* events written to the trace so far */
    _Atomic int nested;         /* a signal handler's event may be out of key order */
    int nested_seen;            /* the writer's copy of it, for this flush */
    unsigned to_write;          /* the current flush's share, set by the writer */
    uint64_t refs_chunk;        /* the chunk `refs` belongs to (writer only) */
    struct mvz_addr_refs refs;  /* recent addresses, for ADDR_REFS (writer only) */
    uint32_t refs_alloc_pos[MVZ_REFS_ALLOC_POS], refs_free_pos[MVZ_REFS_FREE_POS];
    _Alignas(64) _Atomic uint64_t tail;
    _Alignas(64) struct mvz_slot slots[RING_SLOTS];
};

static struct mvz_ring *rings;
_Atomic int mvz_threaded; /* a second thread has recorded events (relaxed: see record.c) */
static pthread_key_t ring_key;
static pthread_once_t ring_key_once = PTHREAD_ONCE_INIT;
static __thread int creating_ring __attribute__((tls_model("initial-exec")));

static void ring_thread_exit(void *arg)
{
    struct mvz_ring *r = arg;
    if (mvz_tls.ring == r)
        mvz_tls.ring = NULL;
    atomic_store(&r->dead, 1);
    mvz_stacks_thread_exit();
    mvz_altstack_release();
}

static void make_key(void)
{
    pthread_key_create(&ring_key, ring_thread_exit);
}

static void write_thread_record(int tid)
{
    struct mvz_buf b = {0};
    char path[64], name[64] = "";
    snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
    FILE *f = fopen(path, "re");
    if (f) {
        if (fgets(name, sizeof(name), f))
            name[strcspn(name, "\n")] = 0;
        fclose(f);
    }
    mvz_put_uvarint(&b, (uint64_t)tid);
    mvz_put_uvarint(&b, atomic_load(&mvz_agent.seq));
    mvz_put_str(&b, name);
    pthread_mutex_lock(&mvz_agent.meta_lock);
    mvz_meta_append(MVZ_REC_THREAD, &b);
    pthread_mutex_unlock(&mvz_agent.meta_lock);
    mvz_buf_free(&b);
}

/* Creates the calling thread's ring. Not reentrant: a signal handler that
 * arrives meanwhile gets NULL and its event is counted as lost. */
struct mvz_ring *mvz_ring_get(void)
{
    if (mvz_tls.ring)
        return mvz_tls.ring;
    if (creating_ring)
        return NULL;
    creating_ring = 1;
    mvz_tls.internal++;
    struct mvz_ring *r =
        mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r != MAP_FAILED) {
        r->tid = (int)syscall(SYS_gettid);
        mvz_tls.tid = r->tid;
        pthread_once(&ring_key_once, make_key);
        pthread_setspecific(ring_key, r);
        pthread_mutex_lock(&mvz_agent.lock);
        if (rings)
            atomic_store_explicit(&mvz_threaded, 1, memory_order_relaxed);
        r->next = rings;
        rings = r;
        pthread_mutex_unlock(&mvz_agent.lock);
        write_thread_record(r->tid);
        mvz_altstack_setup();
        mvz_tls.ring = r;
    }
    mvz_tls.internal--;
    creating_ring = 0;
    return mvz_tls.ring;
}

static uint64_t used(struct mvz_ring *r)
{
    return atomic_load_explicit(&r->head, memory_order_relaxed) -
           atomic_load_explicit(&r->tail, memory_order_acquire);
}

/* Free slots as the producer sees them, refreshing its view of tail only
 * when the cached one says the ring is half full. */
static uint64_t room(struct mvz_ring *r)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (h - r->tail_seen >= RING_SLOTS / 2)
        r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
    return RING_SLOTS - (h - r->tail_seen);
}

/* Takes the next slot number. Only the owner thread and its signal handlers
 * increment head, so the increment needs to be one instruction (atomic with
 * respect to signals), not a bus-locked one. */
static inline uint64_t reserve_slot(struct mvz_ring *r)
{
#if defined(__x86_64__)
    uint64_t v = 1;
    __asm__ volatile("xaddq %0, %1" : "+r"(v), "+m"(*(volatile uint64_t *)&r->head)::"memory");
    return v;
#else
    return atomic_fetch_add_explicit(&r->head, 1, memory_order_relaxed);
#endif
}

/* Makes room by writing out buffered events ourselves. Called at top level
 * before the event's key is taken and its in-flight mark set: a thread that
 * flushed with its own mark up would hold the watermark back for everyone. */
void mvz_ring_make_room(struct mvz_ring *r)
{
    if (!r)
        return;
    uint64_t free_slots = room(r);
    if (MVZ_LIKELY(free_slots > RING_SLOTS / 2))
        return;
    if (free_slots > NESTED_HEADROOM) {
        mvz_writer_wake();
        return;
    }
    while (used(r) >= RING_SLOTS - NESTED_HEADROOM && mvz_recording()) {
        mvz_tls.internal++;
        mvz_writer_flush();
        mvz_tls.internal--;
    }
}

void mvz_ring_begin(struct mvz_ring *r)
{
    if (r)
        atomic_store_explicit(&r->in_flight, r->last_key + 1, memory_order_relaxed);
}

void mvz_ring_end(struct mvz_ring *r, uint64_t key)
{
    if (r) {
        r->last_key = key;
        atomic_store_explicit(&r->in_flight, 0, memory_order_release);
    }
}

int mvz_ring_push(struct mvz_ring *r, const struct mvz_slot *ev)
{
    /* Top-level callers made room first (mvz_ring_make_room); signal
     * handlers use the headroom and never wait. */
    if (room(r) == 0)
        return -1;
    if (mvz_tls.in_hook > 1)
        atomic_store_explicit(&r->nested, 1, memory_order_relaxed);
    uint64_t h = reserve_slot(r);
    struct mvz_slot *s = &r->slots[h % RING_SLOTS];
    s->ts = ev->ts;
    s->addr = ev->addr;
    s->size = ev->size;
    s->stack = ev->stack;
    s->op = ev->op;
    s->entry = ev->entry;
    atomic_store_explicit(&s->seq, atomic_load_explicit(&ev->seq, memory_order_relaxed),
                          memory_order_release);
    return 0;
}

/* An event's time in ns since the agent started; the codec writes it in
 * 2^16 ns units (COARSE_TS): finer is noise in a heap profile and costs
 * bytes that do not compress. */
static uint64_t event_time(uint64_t raw)
{
    return mvz_clock_rel_us_ns(raw);
}

/* Moves up to `count` (at most EVENTS_PER_RECORD) published events into one
 * EVENTS record; stops early at a slot not yet published (a signal
 * handler's event can overtake its interrupted thread's). Returns how many
 * it moved; *max_key is raised to the largest key moved. */
static unsigned drain_some(struct mvz_ring *r, struct mvz_chunk_writer *w, unsigned count,
                           unsigned flags, uint64_t *max_key)
{
    static struct mvz_buf events, payload;
    struct mvz_codec_state prev = {0, 0, 0, flags, &r->refs};
    if (r->refs_chunk != w->chunks + 1) { /* a new chunk: tables start empty */
        r->refs.nalloc = r->refs.nfree = 0;
        r->refs.alloc_pos = r->refs_alloc_pos;
        r->refs.free_pos = r->refs_free_pos;
        r->refs_chunk = w->chunks + 1;
    }
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    unsigned n = 0;
    events.len = 0;
    for (; n < count; n++, tail++) {
        struct mvz_slot *s = &r->slots[tail % RING_SLOTS];
        uint64_t key = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (!key)
            break;
        struct mvz_codec_event e = {key,   event_time(s->ts), s->addr, s->size, s->stack,
                                    s->op, s->entry};
        mvz_event_encode(&events, &prev, &e);
        if (key > *max_key)
            *max_key = key;
        atomic_store_explicit(&s->seq, 0, memory_order_relaxed);
    }
    if (!n)
        return 0;
    atomic_store_explicit(&r->tail, tail, memory_order_release);
    payload.len = 0;
    mvz_put_uvarint(&payload, (uint64_t)r->tid);
    mvz_put_uvarint(&payload, r->emitted); /* events of this thread written before */
    mvz_put_uvarint(&payload, n);
    mvz_put_uvarint(&payload, flags);
    mvz_put_bytes(&payload, events.data, events.len);
    mvz_cw_record(w, MVZ_REC_EVENTS, &payload);
    r->emitted += n;
    if (w->raw.len >= MVZ_CW_FLUSH_AT)
        mvz_writer_write_queued_locked();
    return n;
}

/* The key below which every event has been published: now, less a margin
 * for a producer's in-flight mark still sitting in its store buffer, and
 * less any event marked in flight. Never below the previous one. */
/* Flush state (under mvz_agent.lock): the last watermark computed, and
 * for mvz_rings_drain the largest key written with keys and the last
 * watermark written. A fork child starts them afresh with its keys. */
static uint64_t last_computed, max_keyed, last_mark;

static uint64_t watermark(void)
{
    uint64_t *last = &last_computed;
    uint64_t w = mvz_key_now();
    uint64_t margin = mvz_key_margin();
    w = w > margin ? w - margin : 0;
    for (struct mvz_ring *r = rings; r; r = r->next) {
        uint64_t v = atomic_load_explicit(&r->in_flight, memory_order_acquire);
        if (v && v < w)
            w = v;
    }
    if (w < *last)
        w = *last;
    return *last = w;
}

static uint64_t key_at(struct mvz_ring *r, uint64_t tail, unsigned i)
{
    return atomic_load_explicit(&r->slots[(tail + i) % RING_SLOTS].seq, memory_order_acquire);
}

/* The length of the longest prefix of r's reserved slots whose keys are
 * nonzero (published) and below limit. A thread publishes its slots in
 * order with growing keys, so the predicate holds on a prefix and a binary
 * search finds its end without touching every slot. (A signal handler's
 * event can break the order; drain_some stops at any unpublished slot.) */
static unsigned prefix_below(struct mvz_ring *r, uint64_t tail, unsigned n, uint64_t limit)
{
    unsigned lo = 0, hi = n;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        uint64_t key = key_at(r, tail, mid);
        if (key && key < limit)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Published events of r, and (returned) how many of them have a key below
 * mark, counted from the tail. */
static unsigned count_below(struct mvz_ring *r, uint64_t mark, unsigned *published, int *unordered)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    unsigned reserved = head - tail < RING_SLOTS ? (unsigned)(head - tail) : RING_SLOTS;
    *published = prefix_below(r, tail, reserved, UINT64_MAX);
    /* Taken, not read: a handler's event pushed from now on sets it again. */
    *unordered = 0;
    r->nested_seen = atomic_exchange_explicit(&r->nested, 0, memory_order_relaxed);
    if (!r->nested_seen)
        return prefix_below(r, tail, *published, mark);
    /* A signal handler's event may sit before a smaller key: everything up
     * to the last key below the mark must go, with keys. */
    unsigned below = 0;
    for (unsigned i = 0; i < *published; i++)
        if (key_at(r, tail, i) < mark)
            below = i + 1;
    for (unsigned i = 0; i < below && !*unordered; i++)
        *unordered = key_at(r, tail, i) >= mark;
    return below;
}

/*
 * One flush. Each thread's events below the watermark are written; so are
 * the rest of a thread's published events when the watermark holds back
 * much of a nearly full ring (a thread stuck mid-event must not block the
 * others). When only one
 * thread has events to write and nothing written before is above the
 * previous watermark, the events need no keys: their order is their place in
 * the file (MVZ_EVENTS_NO_KEYS), which is most of a single-threaded trace's
 * size saved. (Merging several threads' events into one keyless stream
 * was tried: 18% smaller traces of a two-thread run, but the writer's merge
 * made the run 75% slower on two cores.) The final flush writes
 * everything. Caller holds mvz_agent.lock.
 */
void mvz_rings_drain(struct mvz_chunk_writer *w, enum mvz_flush how)
{
    /* While a key at or above the last watermark written is in the trace,
     * readers may hold events a keyless record would have to follow, so
     * keys stay. */
    uint64_t mark = how == MVZ_FLUSH_FINAL ? UINT64_MAX : watermark();
    unsigned writers = 0, forced = 0;
    for (struct mvz_ring *r = rings; r; r = r->next) {
        int unordered;
        unsigned published, below = count_below(r, mark, &published, &unordered);
        /* Written regardless of the watermark when it holds back most of a
         * filling ring (a thread stuck mid-event): the writer must free room. */
        int stalled = published > RING_SLOTS / 2 && below < published / 2;
        r->to_write = stalled || how != MVZ_FLUSH_NORMAL ? published : below;
        forced += r->to_write > below || unordered;
        if (r->nested_seen && r->to_write < published)
            atomic_store_explicit(&r->nested, 1, memory_order_relaxed); /* some stay */
        writers += r->to_write > 0;
    }
    unsigned flags = MVZ_EVENTS_COARSE_TS | MVZ_EVENTS_ADDR_REFS;
    if (!forced && writers <= 1 && max_keyed < last_mark)
        flags |= MVZ_EVENTS_NO_KEYS;
    struct mvz_ring **link = &rings;
    while (*link) {
        struct mvz_ring *r = *link;
        uint64_t max_key = 0;
        while (r->to_write) {
            unsigned n = r->to_write < EVENTS_PER_RECORD ? r->to_write : EVENTS_PER_RECORD;
            unsigned moved = drain_some(r, w, n, flags, &max_key);
            r->to_write = moved == n ? r->to_write - n : 0;
        }
        if (!(flags & MVZ_EVENTS_NO_KEYS) && max_key > max_keyed)
            max_keyed = max_key;
        if (atomic_load(&r->dead) && used(r) == 0) {
            *link = r->next;
            munmap(r, sizeof(*r));
            continue;
        }
        link = &r->next;
    }
    last_mark = mark;
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, mark);
    mvz_cw_record(w, MVZ_REC_WATERMARK, &b);
    mvz_buf_free(&b);
}

void mvz_rings_after_fork_child(void)
{
    last_computed = max_keyed = last_mark = 0;
    struct mvz_ring *mine = mvz_tls.ring;
    for (struct mvz_ring *r = rings, *next; r; r = next) {
        next = r->next;
        if (r != mine)
            munmap(r, sizeof(*r));
    }
    rings = NULL;
    if (!mine)
        return;
    for (unsigned i = 0; i < RING_SLOTS; i++)
        atomic_store_explicit(&mine->slots[i].seq, 0, memory_order_relaxed);
    atomic_store(&mine->head, 0);
    atomic_store(&mine->tail, 0);
    mine->tail_seen = 0;
    mine->emitted = 0;
    mine->refs_chunk = 0; /* the child's trace starts its own chunks */
    mine->last_key = 0;
    atomic_store(&mine->in_flight, 0);
    mine->tid = (int)syscall(SYS_gettid);
    mvz_tls.tid = mine->tid;
    mine->next = NULL;
    rings = mine;
    write_thread_record(mine->tid);
}
