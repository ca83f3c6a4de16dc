/*
 * ring.h - a thread's ring as its producer sees it: the layout, and the
 * steps of recording one event (make room, mark it in flight, push, end),
 * inline because every allocation and free takes them. The consumer's
 * side, and the slow paths, are in ring.c.
 */
#ifndef MVZ_AGENT_RING_H
#define MVZ_AGENT_RING_H

#include "agent/agent.h"

/* A ring starts with RING_SLOTS_START slots (256 KiB) and grows, once, to
 * RING_SLOTS_MAX (512 KiB) when its thread keeps filling it: each half ring
 * costs a wake-up of the writer and a drain, and on CPython's bench run
 * (5 M events a second) 8,192 slots meant 7,300 futex calls, 1,300
 * context switches and 0.1 s of system time (32,768: 1,200 calls, 370
 * switches, 0.05 s, but wall times within the host's noise). 16,384: 2 MB
 * less for the list churn's two threads, times within noise; the memory a
 * small program may be given is a quarter of its own plus 16 MiB.
 * A thread that allocates now and then keeps the small ring: the
 * reservation beyond it is never touched, so it takes no memory. */
#define RING_SLOTS_START 8192u
#define RING_SLOTS_MAX 16384u
/* Half rings a thread fills (writer wake-ups) before its ring grows, by
 * default (MEMVIZ_RING_GROW): a thread that made 32,768 events, each batch
 * of 4,096 faster than the writer's 20 ms timer would have drained it. */
#define RING_GROW_AFTER 8u
#define NESTED_HEADROOM 64u

/* Events the writer took out of a ring before the watermark let them go:
 * a thread stuck between taking a key and publishing its event (preempted,
 * say) holds the watermark back, and the other threads' rings must not
 * fill meanwhile. They wait here, in ring order, and join the merge once
 * the watermark passes them. Mapped memory, grown as needed. */
struct held {
    struct mvz_slot *v;
    size_t pos, n, cap; /* v[pos..n) wait */
};
/* Past this many waiting events of one thread, they go regardless (and
 * are counted late if they overtake another thread's). */
#define HELD_MAX (1u << 18) /* 10 MiB a thread; 5 ms of a thread allocating flat out */

/* head is written only by the owner thread, tail only by the consumer; they
 * live on separate cache lines so that neither side's writes evict the
 * other's line on every event. */
struct mvz_ring {
    struct mvz_ring *next; /* registry, under mvz_agent.lock */
    int tid;
    _Atomic int dead; /* owner thread exited; free once drained */
    _Alignas(64) _Atomic uint64_t head;
    uint64_t tail_seen;   /* the producer's last look at tail */
    uint64_t tail_looked; /* head at that look */
    uint32_t mask;        /* slots in use - 1; changed only by the owner, under mvz_agent.lock */
    uint32_t wakes;       /* half rings filled (wake-ups of the writer), until it grows */
    uint64_t woke_at;     /* head at the last one counted */
    /* make_room has nothing to do while head is below this: it was set
     * from a look at the ring that left room for the events up to it. */
    uint64_t quiet_until;
    _Atomic uint64_t in_flight; /* 0, or a lower bound on the key of an unpublished event */
    uint64_t last_key;          /* key of the owner's latest top-level event */
    _Atomic int nested;         /* a signal handler's event may be out of key order */
    int nested_seen;            /* the writer's copy of it, for this flush */
    _Alignas(64) _Atomic uint64_t tail;
    /* the writer's: on tail's line, away from the producer's writes */
    uint64_t *serial; /* the collector's serial counter of this thread id */
    int hold_failed;  /* the held buffer could not grow: the ring's events go as they are */
    struct held held; /* events taken out early */
    _Alignas(64) struct mvz_slot slots[RING_SLOTS_MAX]; /* [0, mask] in use */
    struct mvz_frames frames;                           /* the slots' captured frames (stacks.c) */
};

/* A frame record's largest size: make_room leaves at least that much. */
#define FRAME_RECORD_MAX (3u + MVZ_MAX_DEPTH)
_Static_assert(FRAME_RECORD_MAX < MVZ_FRAME_WORDS / 4, "room for several records");

/* Writes out buffered events ourselves until the ring has room (ring.c). */
void mvz_ring_flush_for_room(struct mvz_ring *r);
/* Gives the ring RING_SLOTS_MAX slots, if it can be emptied now (ring.c). */
void mvz_ring_grow(struct mvz_ring *r);

/* Slots in use. */
static inline uint64_t mvz_ring_cap(const struct mvz_ring *r)
{
    return (uint64_t)r->mask + 1;
}

/* Free slots as the producer sees them (never more than there are). Its
 * view of tail is refreshed only when the ring looks half full, and then
 * every TAIL_LOOK_EVERY events until it looks nearly full: tail's line is
 * the writer's, and while the writer falls behind (two threads churning a
 * std::list on two cores) a look on every event made the slow part of
 * make_room 4% of the run. */
#define TAIL_LOOK_EVERY 64u

static inline uint64_t mvz_ring_room(struct mvz_ring *r)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed), used = h - r->tail_seen;
    uint64_t cap = mvz_ring_cap(r);
    if (used >= cap / 2 &&
        (h - r->tail_looked >= TAIL_LOOK_EVERY || used >= cap - 2 * NESTED_HEADROOM)) {
        r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
        r->tail_looked = h;
    }
    return cap - (h - r->tail_seen);
}

/* Free words of the frame area as the producer sees them (as mvz_ring_room()). */
static inline uint64_t mvz_ring_frame_room(struct mvz_ring *r)
{
    struct mvz_frames *f = &r->frames;
    uint64_t h = atomic_load_explicit(&f->head, memory_order_relaxed);
    if (h - f->tail_seen >= MVZ_FRAME_WORDS / 2)
        f->tail_seen = atomic_load_explicit(&f->tail, memory_order_acquire);
    return MVZ_FRAME_WORDS - (h - f->tail_seen);
}

/* Takes the next slot number. Only the owner thread and its signal handlers
 * increment head, so the increment needs to be one instruction (atomic with
 * respect to signals), not a bus-locked one. */
static inline uint64_t mvz_ring_reserve_slot(struct mvz_ring *r)
{
#if defined(__x86_64__)
    uint64_t v = 1;
    __asm__ volatile("xaddq %0, %1" : "+r"(v), "+m"(*(volatile uint64_t *)&r->head)::"memory");
    return v;
#else
    return atomic_fetch_add_explicit(&r->head, 1, memory_order_relaxed);
#endif
}

/* Looks at the ring when make_room's quiet stretch is over (ring.c). */
void mvz_ring_look(struct mvz_ring *r);

/* Makes room by writing out buffered events ourselves. Called at top level
 * before the event's key is taken and its in-flight mark set: a thread that
 * flushed with its own mark up would hold the watermark back for everyone.
 * Most events only compare head with quiet_until: a look at the ring tells
 * how many events can come before the next look could find anything to
 * do (below half full: until half full; above: TAIL_LOOK_EVERY events). On
 * CPython's bench run half the events came while the ring was above half
 * full, and looking on each of them was 38 instructions an event. */
static inline void mvz_ring_make_room(struct mvz_ring *r)
{
    if (r && atomic_load_explicit(&r->head, memory_order_relaxed) >= r->quiet_until)
        mvz_ring_look(r);
}

static inline void mvz_ring_begin(struct mvz_ring *r)
{
    if (r)
        atomic_store_explicit(&r->in_flight, r->last_key + 1, memory_order_relaxed);
}

static inline void mvz_ring_end(struct mvz_ring *r, uint64_t key)
{
    if (r) {
        r->last_key = key;
        atomic_store_explicit(&r->in_flight, 0, memory_order_release);
    }
}

/* The slots a thread fills next were last written by the writer thread
 * (it empties the slots it takes), mostly on the other CPU. Fetched this
 * many events ahead, their lines are here when the events come; fetched
 * by the event's own stores, they held up the program's next locked
 * instruction (its allocator's, or mt_steady's atomic exchange), which
 * waits for earlier stores: mt_steady's memviz run took 2.25 s instead of
 * 2.44 s (plain 1.8 s). A prefetch for writing did no better. */
#define SLOT_FETCH_AHEAD 16u

/* Appends one event; returns 0, or -1 when it had to be dropped. Its
 * fields go straight into the slot, the key last. */
static inline int mvz_ring_push(struct mvz_ring *r, uint64_t key, uint8_t op, uint8_t entry,
                                uint64_t addr, uint64_t size, uint32_t stack, uint8_t stack_kind)
{
    /* Top-level callers made room first (mvz_ring_make_room); signal
     * handlers use the headroom and never wait. */
    uint64_t seen = atomic_load_explicit(&r->head, memory_order_relaxed) - r->tail_seen;
    if (MVZ_UNLIKELY(seen >= mvz_ring_cap(r)) && mvz_ring_room(r) == 0) /* a fresh look */
        return -1;
    if (mvz_tls.in_hook > 1)
        atomic_store_explicit(&r->nested, 1, memory_order_relaxed);
    uint64_t h = mvz_ring_reserve_slot(r);
    struct mvz_slot *s = &r->slots[h & r->mask];
    __builtin_prefetch(&r->slots[(h + SLOT_FETCH_AHEAD) & r->mask]);
    s->addr = addr;
    s->size = size;
    s->stack = stack;
    s->op = op;
    s->entry = entry;
    s->stack_kind = stack_kind;
    atomic_store_explicit(&s->seq, key, memory_order_release);
    return 0;
}

#endif
