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
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/ring.h"

struct mvz_frames *mvz_ring_frames(struct mvz_ring *r)
{
    return &r->frames;
}

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
    if (r != MAP_FAILED) { /* counted as touched: mvz_rings_touched */
        mvz_owned_range(r, sizeof(*r), 1);
        r->mask = RING_SLOTS_START - 1;
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

static uint64_t frame_words_used(struct mvz_ring *r)
{
    return atomic_load_explicit(&r->frames.head, memory_order_relaxed) -
           atomic_load_explicit(&r->frames.tail, memory_order_acquire);
}

/* Writes out buffered events ourselves until the ring has room. */
__attribute__((noinline)) void mvz_ring_flush_for_room(struct mvz_ring *r)
{
    /* The writer's work (writes, mmap, madvise) may set errno; the
     * program's call (free, say) must not. */
    int saved_errno = errno;
    while ((used(r) >= mvz_ring_cap(r) - NESTED_HEADROOM ||
            frame_words_used(r) > MVZ_FRAME_WORDS - FRAME_RECORD_MAX) &&
           mvz_recording()) {
        mvz_tls.internal++;
        mvz_writer_flush();
        mvz_tls.internal--;
    }
    errno = saved_errno;
}

/* Events (head steps) that can come before make_room must look again,
 * with free_slots and free_words left now: each top-level event takes one
 * slot and at most FRAME_RECORD_MAX words, and a look must still find the
 * headroom for a signal handler's events. At most TAIL_LOOK_EVERY, so
 * that a thread waiting for the writer sees it catch up soon. */
static uint64_t quiet_events(uint64_t free_slots, uint64_t free_words)
{
    uint64_t k = free_slots > 2 * NESTED_HEADROOM ? (free_slots - 2 * NESTED_HEADROOM) / 2 : 0;
    if (mvz_tls.offload) {
        uint64_t kw = free_words / FRAME_RECORD_MAX;
        kw = kw > 2 ? kw - 2 : 0;
        k = kw < k ? kw : k;
    }
    return k < TAIL_LOOK_EVERY ? k : TAIL_LOOK_EVERY;
}

static uint64_t frame_room_now(struct mvz_ring *r)
{
    return mvz_tls.offload ? mvz_ring_frame_room(r) : MVZ_FRAME_WORDS;
}

/* make_room's look (ring.h). Below half full there is nothing to do until
 * head reaches half a ring past the tail seen. Above it, the writer is
 * woken (once a half ring counted towards the ring's growth), the ring
 * grows, or, when nearly full, the thread writes events out itself. */
__attribute__((noinline)) void mvz_ring_look(struct mvz_ring *r)
{
    uint64_t free_slots = mvz_ring_room(r), free_words = frame_room_now(r);
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed), half = mvz_ring_cap(r) / 2;
    if (MVZ_LIKELY(free_slots > half && free_words > MVZ_FRAME_WORDS / 2)) {
        uint64_t until = r->tail_seen + half;
        if (mvz_tls.offload) {
            uint64_t k = (free_words - MVZ_FRAME_WORDS / 2) / FRAME_RECORD_MAX;
            until = h + k < until ? h + k : until;
        }
        r->quiet_until = until;
        return;
    }
    if (MVZ_UNLIKELY(r->wakes >= mvz_agent.ring_grow_after) && r->mask < RING_SLOTS_MAX - 1) {
        mvz_ring_grow(r);
    } else if (free_slots > NESTED_HEADROOM && free_words > FRAME_RECORD_MAX) {
        /* Each half ring counts once, however many looks it takes to drain. */
        if (h - r->woke_at >= half) {
            r->woke_at = h;
            r->wakes++;
        }
        mvz_writer_wake();
        r->quiet_until = h + quiet_events(free_slots, free_words);
        return;
    } else {
        mvz_ring_flush_for_room(r);
    }
    /* After writing events out: a fresh look at the tail. */
    h = atomic_load_explicit(&r->head, memory_order_relaxed);
    r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
    r->tail_looked = h;
    r->quiet_until = h + quiet_events(mvz_ring_cap(r) - (h - r->tail_seen), frame_room_now(r));
}

/* Raw event times to ns since the agent started, as of this flush. */
static struct mvz_clock_conv clock_conv;

/* The watermark: the key below which every event has been published: now,
 * less a margin for a producer's in-flight mark still sitting in its store
 * buffer, and less any event marked in flight. Never below the previous
 * one. Under mvz_agent.lock; a fork child starts afresh with its keys. */
static uint64_t last_computed;

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
    return atomic_load_explicit(&r->slots[(tail + i) & r->mask].seq, memory_order_acquire);
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
static unsigned count_below(struct mvz_ring *r, uint64_t mark, unsigned *published)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t cap = mvz_ring_cap(r);
    unsigned reserved = (unsigned)(head - tail < cap ? head - tail : cap);
    *published = prefix_below(r, tail, reserved, UINT64_MAX);
    /* Taken, not read: a handler's event pushed from now on sets it again. */
    r->nested_seen = atomic_exchange_explicit(&r->nested, 0, memory_order_relaxed);
    if (!r->nested_seen)
        return prefix_below(r, tail, *published, mark);
    /* A signal handler's event may sit before a smaller key: everything up
     * to the last key below the mark must go. */
    unsigned below = 0;
    for (unsigned i = 0; i < *published; i++)
        if (key_at(r, tail, i) < mark)
            below = i + 1;
    return below;
}

/* ---- held events ---- */
static int held_push(struct held *h, const struct mvz_slot *ev)
{
    if (h->pos && h->pos >= h->n / 2) { /* the waiting ones move down */
        memmove(h->v, h->v + h->pos, (h->n - h->pos) * sizeof(*h->v));
        h->n -= h->pos;
        h->pos = 0;
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 4096;
        void *v = h->v ? mremap(h->v, h->cap * sizeof(*h->v), cap * sizeof(*h->v), MREMAP_MAYMOVE)
                       : mmap(NULL, cap * sizeof(*h->v), PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (v == MAP_FAILED)
            return -1;
        if (h->v)
            mvz_owned_unmap(h->v, h->cap * sizeof(*h->v));
        mvz_owned_map(v, cap * sizeof(*h->v));
        h->v = v;
        h->cap = cap;
    }
    h->v[h->n++] = *ev;
    return 0;
}

static void held_free(struct held *h)
{
    if (h->v)
        mvz_unmap(h->v, h->cap * sizeof(*h->v));
    memset(h, 0, sizeof(*h));
}

static uint64_t held_key(const struct held *h, size_t i)
{
    return atomic_load_explicit(&h->v[i].seq, memory_order_relaxed);
}

/* How many waiting events go in this flush: those below mark (all of them
 * past HELD_MAX). Held events are in ring order, nearly key order. */
static size_t held_below(const struct held *h, uint64_t mark)
{
    if (h->n - h->pos > HELD_MAX)
        return h->n - h->pos;
    size_t below = 0;
    for (size_t i = h->pos; i < h->n; i++)
        if (held_key(h, i) < mark)
            below = i + 1 - h->pos;
    return below;
}

/* Gives a published slot its stack id, in place: the slots of a ring are
 * resolved in ring order, each once (stacks.c keeps the thread's latest
 * stack between them). */
static inline void slot_resolve(struct mvz_ring *r, struct mvz_slot *s)
{
    if (s->stack_kind != MVZ_SK_ID) {
        s->stack = mvz_stack_resolve(&r->frames, s->stack, s->stack_kind);
        s->stack_kind = MVZ_SK_ID;
    }
}

/* Moves r's published events into its held events, so that the ring has
 * room; on failure they stay in the ring. */
static void hold_rest(struct mvz_ring *r)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t cap = mvz_ring_cap(r);
    unsigned reserved = (unsigned)(head - tail < cap ? head - tail : cap);
    unsigned published = prefix_below(r, tail, reserved, UINT64_MAX), moved = 0;
    for (; moved < published; moved++, tail++) {
        struct mvz_slot *s = &r->slots[tail & r->mask];
        /* The binary search behind `published` can step over a slot a
         * signal handler's event overtook: never take an unpublished one. */
        if (!atomic_load_explicit(&s->seq, memory_order_acquire))
            break;
        slot_resolve(r, s);
        if (held_push(&r->held, s) < 0) {
            r->hold_failed = 1;
            break;
        }
        atomic_store_explicit(&s->seq, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&r->tail, tail, memory_order_release);
}

/* Grows the ring of a thread that keeps filling it (ring.h). Slots sit at
 * their key's position under the mask, so the mask changes only while the
 * ring is empty: under mvz_agent.lock, after a flush has taken what it
 * could and the rest has moved to the held events, with the thread's
 * signals blocked (a handler's event would take a slot meanwhile). The
 * consumer reads the mask only under the lock. If the ring cannot be
 * emptied, it is tried again after another RING_GROW_AFTER half rings. */
__attribute__((noinline)) void mvz_ring_grow(struct mvz_ring *r)
{
    int saved_errno = errno;
    sigset_t all, old;
    sigfillset(&all);
    mvz_tls.internal++;
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_mutex_lock(&mvz_agent.lock);
    if (mvz_recording()) {
        mvz_writer_flush_locked();
        if (used(r))
            hold_rest(r);
        if (!used(r))
            r->mask = RING_SLOTS_MAX - 1;
    }
    pthread_mutex_unlock(&mvz_agent.lock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    r->wakes = 0;
    mvz_tls.internal--;
    errno = saved_errno;
    /* Not grown (its held events could not grow): it may still be full,
     * and this call stands in for make_room's. */
    mvz_ring_flush_for_room(r);
}

/* ---- the merge: every ring's share of a flush, in key order ---- */
/* A ring's share: first `hleft` of its held events, then `left` slots. */
struct source {
    struct mvz_ring *r;
    uint64_t tail, key; /* key of the next event */
    size_t hleft;
    unsigned left;
};

static struct mvz_slot *source_slot(struct source *s)
{
    if (s->hleft)
        return &s->r->held.v[s->r->held.pos];
    return &s->r->slots[s->tail & s->r->mask];
}

/* Loads the key of the source's next event; 0 when its share is done (or
 * its next slot is not published: a signal handler's event can overtake
 * the event it interrupted). */
static uint64_t source_key(struct source *s)
{
    if (s->hleft)
        return s->key = held_key(&s->r->held, s->r->held.pos);
    s->key =
        s->left ? atomic_load_explicit(&s->r->slots[s->tail & s->r->mask].seq, memory_order_acquire)
                : 0;
    if (!s->key)
        atomic_store_explicit(&s->r->tail, s->tail, memory_order_release);
    return s->key;
}

#define PREFETCH_AHEAD 8
#define TAIL_PUBLISH_EVERY 1024u

/* Hands an event of r (a slot, resolved, or a held event) to the
 * collector. ahead: the address of an event coming soon, or 0. */
static inline void collect_event(struct mvz_chunk_writer *w, struct mvz_ring *r,
                                 const struct mvz_slot *slot, uint64_t key, uint64_t ahead)
{
    if (MVZ_UNLIKELY(!r->serial) && !(r->serial = mvz_collect_serial((uint32_t)r->tid))) {
        /* out of memory: no name to give its blocks */
        __atomic_fetch_add(&mvz_agent.lost_events, 1, __ATOMIC_RELAXED);
        return;
    }
    mvz_collect(w, (uint32_t)r->tid, r->serial, key, slot, mvz_clock_ns(&clock_conv, key), ahead);
}

/* The address of the slot PREFETCH_AHEAD after tail, if within the share
 * (published: its key was read with acquire), else 0. */
static inline uint64_t addr_ahead(const struct mvz_ring *r, uint64_t tail, unsigned left)
{
    return left > PREFETCH_AHEAD ? r->slots[(tail + PREFETCH_AHEAD) & r->mask].addr : 0;
}

/* Frees a slot taken. A drain takes a millisecond or more: its thread
 * sees the room it makes every TAIL_PUBLISH_EVERY slots, not only at the
 * end. */
static inline void release_slot(struct mvz_ring *r, struct mvz_slot *slot, uint64_t next_tail)
{
    atomic_store_explicit(&slot->seq, 0, memory_order_relaxed);
    if (!(next_tail & (TAIL_PUBLISH_EVERY - 1)))
        atomic_store_explicit(&r->tail, next_tail, memory_order_release);
}

/* Hands the source's next event to the collector and moves on. */
static uint64_t source_take(struct mvz_chunk_writer *w, struct source *s)
{
    struct mvz_slot *slot = source_slot(s);
    if (s->hleft) {
        collect_event(w, s->r, slot, s->key, 0);
        s->hleft--;
        s->r->held.pos++;
    } else {
        slot_resolve(s->r, slot);
        collect_event(w, s->r, slot, s->key, addr_ahead(s->r, s->tail, s->left));
        release_slot(s->r, slot, ++s->tail);
        s->left--;
    }
    return source_key(s);
}

/* The share of the only source of a flush (a single-threaded program's):
 * source_take's steps, with the ring's slots taken in a loop that keeps
 * its state in registers rather than in the source (on CPython's bench
 * run the calls were a fifth of the merge's instructions). */
static void take_alone(struct mvz_chunk_writer *w, struct source *s)
{
    while (s->hleft)
        if (!source_take(w, s))
            return;
    struct mvz_ring *r = s->r;
    uint64_t tail = s->tail, key = s->key;
    unsigned left = s->left;
    while (key) {
        struct mvz_slot *slot = &r->slots[tail & r->mask];
        slot_resolve(r, slot);
        collect_event(w, r, slot, key, addr_ahead(r, tail, left));
        release_slot(r, slot, ++tail);
        key =
            --left ? atomic_load_explicit(&r->slots[tail & r->mask].seq, memory_order_acquire) : 0;
    }
    s->tail = tail;
    s->left = left;
    s->key = 0;
    atomic_store_explicit(&r->tail, tail, memory_order_release);
}

static void heap_sift_down(struct source **h, unsigned n, unsigned i)
{
    for (;;) {
        unsigned m = i, l = 2 * i + 1, r = l + 1;
        if (l < n && h[l]->key < h[m]->key)
            m = l;
        if (r < n && h[r]->key < h[m]->key)
            m = r;
        if (m == i)
            return;
        struct source *t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Merges the shares of the n sources by key into the collector. */
static void merge(struct mvz_chunk_writer *w, struct source *src, unsigned n)
{
    static struct source **heap;
    static unsigned heap_cap;
    if (n == 1) {
        take_alone(w, &src[0]);
        return;
    }
    if (n > heap_cap) {
        struct source **v = realloc(heap, n * sizeof(*v));
        if (!v) { /* out of memory: one ring after the other */
            for (unsigned i = 0; i < n; i++)
                while (source_take(w, &src[i]))
                    ;
            return;
        }
        heap = v;
        heap_cap = n;
    }
    unsigned live = 0;
    for (unsigned i = 0; i < n; i++)
        heap[live++] = &src[i];
    for (unsigned i = live / 2; i-- > 0;)
        heap_sift_down(heap, live, i);
    while (live) {
        /* The top source goes on while its next key is no larger than the
         * smallest of the others (its children's), as a sift would leave
         * it on top. */
        uint64_t bound = UINT64_MAX;
        if (live > 1)
            bound = heap[1]->key;
        if (live > 2 && heap[2]->key < bound)
            bound = heap[2]->key;
        uint64_t key;
        while ((key = source_take(w, heap[0])) && key <= bound)
            ;
        if (!key)
            heap[0] = heap[--live];
        heap_sift_down(heap, live, 0);
    }
}

/* Sets r's share of a flush against mark; returns whether it has one. */
static int plan_share(struct mvz_ring *r, uint64_t mark, enum mvz_flush how, struct source *s)
{
    unsigned published, below = count_below(r, mark, &published);
    size_t held = r->held.n - r->held.pos;
    /* Out of memory to hold them, a full ring's events go regardless
     * (late): its thread must not wait for a watermark that may never come. */
    int force = how != MVZ_FLUSH_NORMAL || r->hold_failed;
    r->hold_failed = 0;
    size_t hbelow = force ? held : held_below(&r->held, mark);
    if (force)
        below = published;
    /* Ring events come after every held one. */
    if (hbelow < held)
        below = 0;
    if (r->nested_seen && below < published)
        atomic_store_explicit(&r->nested, 1, memory_order_relaxed); /* some stay */
    *s = (struct source){r, atomic_load_explicit(&r->tail, memory_order_relaxed), 0, hbelow, below};
    return hbelow || below;
}

/*
 * One flush. Each thread's events below the watermark are merged by key
 * into the collector: every event below it is published, so the merge
 * gives the events in the order they happened. When the watermark holds
 * back much of a filling ring (another thread is stuck mid-event), the
 * rest of its published events wait in the writer's memory instead
 * (struct held). The final flush takes everything. Caller holds
 * mvz_agent.lock.
 */
/* The latest drain's watermark and clock: a USER record's time is taken
 * as its events' were (user.c). */
static uint64_t last_mark;

uint64_t mvz_rings_drained_below(void)
{
    return last_mark;
}

uint64_t mvz_rings_key_ns(uint64_t key)
{
    return mvz_clock_ns(&clock_conv, key);
}

void mvz_rings_drain(struct mvz_chunk_writer *w, enum mvz_flush how)
{
    static struct source *src;
    static unsigned src_cap;
    uint64_t mark = how == MVZ_FLUSH_FINAL ? UINT64_MAX : watermark();
    last_mark = mark;
    unsigned n = 0;
    mvz_clock_conv(&clock_conv);
    for (struct mvz_ring *r = rings; r; r = r->next)
        n++;
    if (n > src_cap) {
        struct source *v = realloc(src, n * sizeof(*v));
        if (v) {
            src = v;
            src_cap = n;
        }
    }
    unsigned k = 0;
    for (struct mvz_ring *r = rings; r && k < src_cap; r = r->next)
        if (plan_share(r, mark, how, &src[k]) && source_key(&src[k]))
            k++;
    if (k)
        merge(w, src, k);
    struct mvz_ring **link = &rings;
    while (*link) {
        struct mvz_ring *r = *link;
        if (how == MVZ_FLUSH_NORMAL &&
            (used(r) > mvz_ring_cap(r) / 2 || frame_words_used(r) > MVZ_FRAME_WORDS / 2))
            hold_rest(r);
        if (atomic_load(&r->dead) && used(r) == 0 && r->held.pos == r->held.n) {
            *link = r->next;
            held_free(&r->held);
            mvz_owned_range(r, sizeof(*r), 0);
            munmap(r, sizeof(*r));
            continue;
        }
        link = &r->next;
    }
}

uint64_t mvz_rings_watermark(void)
{
    return watermark();
}

static uint64_t page_up(uint64_t bytes)
{
    return (bytes + 4095) & ~(uint64_t)4095;
}

/* A ring's pages are touched in order, slots and frame words alike, and
 * stay resident once touched: a thread that allocated little has a few
 * pages of its ring in memory, not all 776 KiB. */
uint64_t mvz_rings_touched(void)
{
    uint64_t sum = 0;
    for (struct mvz_ring *r = rings; r; r = r->next) {
        uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
        uint64_t slots = head < (uint64_t)r->mask + 1 ? head : (uint64_t)r->mask + 1;
        uint64_t words = atomic_load_explicit(&r->frames.head, memory_order_relaxed);
        words = words < MVZ_FRAME_WORDS ? words : MVZ_FRAME_WORDS;
        sum += page_up(offsetof(struct mvz_ring, slots) + slots * sizeof(struct mvz_slot)) +
               page_up(offsetof(struct mvz_frames, w) + words * sizeof(uint64_t));
    }
    return sum;
}

void mvz_rings_after_fork_child(void)
{
    last_computed = 0;
    mvz_collect_after_fork_child();
    struct mvz_ring *mine = mvz_tls.ring;
    for (struct mvz_ring *r = rings, *next; r; r = next) {
        next = r->next;
        held_free(&r->held);
        if (r != mine) {
            mvz_owned_range(r, sizeof(*r), 0);
            munmap(r, sizeof(*r));
        }
    }
    rings = NULL;
    if (!mine)
        return;
    for (uint64_t i = 0; i < mvz_ring_cap(mine); i++)
        atomic_store_explicit(&mine->slots[i].seq, 0, memory_order_relaxed);
    atomic_store(&mine->head, 0);
    atomic_store(&mine->tail, 0);
    mine->tail_seen = mine->tail_looked = mine->quiet_until = mine->woke_at = 0;
    memset(&mine->frames, 0, offsetof(struct mvz_frames, w));
    mine->serial = NULL;
    mine->last_key = 0;
    atomic_store(&mine->in_flight, 0);
    mine->tid = (int)syscall(SYS_gettid);
    mvz_tls.tid = mine->tid;
    mine->next = NULL;
    rings = mine;
    write_thread_record(mine->tid);
}
