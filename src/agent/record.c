/*
 * record.c - the hot path shared by every hook: give the event its order
 * key, attach a stack id, and append it to the calling thread's ring.
 *
 * Order keys (see agent.h): with an invariant time-stamp counter the key is
 * the counter itself, read after the real allocator returned (an allocation)
 * or before the block goes back (a release), fenced so that the read cannot
 * drift across the allocator's own memory accesses; it doubles as the
 * timestamp. Without one, keys come from a global atomic counter that
 * keeps up with the monotonic clock, so that they are timestamps too.
 *
 * While a thread is between taking a key and publishing the event, its ring
 * carries an "in flight" lower bound on that key, so the writer never
 * declares a key range complete while an event in it is still on its way.
 *
 * A hook entered again on the same thread while recording (only a signal
 * handler can do that) records its event without a stack and without
 * touching the in-flight mark, rather than re-entering the unwinder or the
 * stack table, which are not reentrant.
 */
#include <time.h>

#include "agent/agent.h"
#include "agent/ring.h"

/* Without the counter, keys come from one atomic variable, whose order of
 * changes agrees with every happens-before edge between the events. Each
 * key is the larger of the previous key plus one and the monotonic clock
 * now, so the key is also the event's time in ns, within the nanosecond
 * or so that a burst of events in one clock tick pushes it ahead. */
uint64_t mvz_next_seq(void)
{
    uint64_t now = mvz_now_ns();
    uint64_t prev = atomic_load_explicit(&mvz_agent.seq, memory_order_relaxed), key;
    do
        key = now > prev ? now : prev + 1;
    while (!atomic_compare_exchange_weak_explicit(&mvz_agent.seq, &prev, key, memory_order_relaxed,
                                                  memory_order_relaxed));
    return key;
}

/* The allocator's loads that handed us the block must be done first: the
 * fence keeps the counter read from running ahead of them out of order.
 * Only another thread's release can be overtaken that way, so a process
 * that never had a second thread skips the fence. */
static inline uint64_t key_after_alloc(void)
{
#if defined(__x86_64__)
    if (MVZ_LIKELY(mvz_tsc_ok)) {
        /* Relaxed is enough: a release by another thread that this
         * allocation could overtake happened after that thread set the flag
         * (before its first event), and the allocator's own synchronisation
         * with that release makes the store visible here. */
        if (atomic_load_explicit(&mvz_threaded, memory_order_relaxed))
            __builtin_ia32_lfence();
        return __builtin_ia32_rdtsc();
    }
#endif
    return mvz_next_seq();
}

/* The allocator's stores that release the block must come after. No fence:
 * a store becomes visible only after it retires, instructions retire in
 * order, and the counter is read before the read retires. */
static inline uint64_t key_before_release(void)
{
#if defined(__x86_64__)
    if (MVZ_LIKELY(mvz_tsc_ok))
        return __builtin_ia32_rdtsc();
#endif
    return mvz_next_seq();
}

static inline __attribute__((always_inline)) void emit(struct mvz_ring *r, uint64_t key, int op,
                                                       int entry, const void *addr, size_t size,
                                                       uint32_t stack, uint8_t stack_kind)
{
    if (!r || mvz_ring_push(r, key, (uint8_t)op, (uint8_t)entry, (uint64_t)(uintptr_t)addr, size,
                            stack, stack_kind) < 0) {
        __atomic_fetch_add(&mvz_agent.lost_events, 1, __ATOMIC_RELAXED);
        mvz_stack_dropped(stack_kind);
    }
}

static inline struct mvz_ring *ring(void)
{
    return mvz_tls.ring ? mvz_tls.ring : mvz_ring_get();
}

/* A block recorded in full mode while a client switched the run to
 * sampling: its release must be recorded as well (the collector may drop
 * the allocation as a straggler; the release then names no block). */
static inline void after_full_alloc(void *p)
{
    if (MVZ_UNLIKELY(atomic_load_explicit(&mvz_sample_bytes, memory_order_relaxed)))
        mvz_sample_restore(p);
}

void mvz_record_alloc(void *p, size_t size, int entry, const void *hook_frame, uint64_t rate)
{
    if (MVZ_UNLIKELY(rate)) {
        if (!mvz_sample_take(p, size, rate))
            return;
        entry |= MVZ_ENTRY_SAMPLED;
    }
    struct mvz_ring *r = ring();
    if (mvz_tls.in_hook) {
        mvz_tls.in_hook++;
        emit(r, key_after_alloc(), MVZ_OP_ALLOC, entry, p, size, MVZ_STACK_NESTED, MVZ_SK_ID);
        mvz_tls.in_hook--;
        if (!rate)
            after_full_alloc(p);
        return;
    }
    mvz_tls.in_hook = 1;
    /* The in-flight mark goes up before anything a signal handler could
     * interrupt: a nested event's key is then covered by it too. */
    mvz_ring_make_room(r);
    mvz_ring_begin(r);
    uint8_t kind;
    uint32_t stack = mvz_stack_capture(r, &kind, hook_frame);
    uint64_t key = key_after_alloc();
    emit(r, key, MVZ_OP_ALLOC, entry, p, size, stack, kind);
    mvz_ring_end(r, key);
    mvz_tls.in_hook = 0;
    if (!rate)
        after_full_alloc(p);
}

void mvz_record_free(void *p, int entry)
{
    struct mvz_ring *r = ring();
    int top = mvz_tls.in_hook++ == 0;
    if (top) {
        mvz_ring_make_room(r);
        mvz_ring_begin(r);
    }
    uint64_t key = key_before_release();
    emit(r, key, MVZ_OP_FREE, entry, p, 0, MVZ_STACK_NONE, MVZ_SK_ID);
    if (top)
        mvz_ring_end(r, key);
    mvz_tls.in_hook--;
}

void mvz_on_tag(const void *p, uint32_t tag)
{
    struct mvz_ring *r = ring();
    int top = mvz_tls.in_hook++ == 0;
    if (top) {
        mvz_ring_make_room(r);
        mvz_ring_begin(r);
    }
    uint64_t key = key_after_alloc();
    emit(r, key, MVZ_OP_TAG, 0, p, tag, MVZ_STACK_NONE, MVZ_SK_ID);
    if (top)
        mvz_ring_end(r, key);
    mvz_tls.in_hook--;
}

/* realloc of a non-NULL block: the release's key must be taken before the
 * real call (the old address may be reused by another thread the moment it
 * returns), and the in-flight mark must hold until that release is
 * published. in_hook stays raised across the real call so that a signal
 * handler allocating meanwhile records as nested and leaves the mark alone. */
uint64_t mvz_realloc_begin(void)
{
    struct mvz_ring *r = ring();
    if (mvz_tls.in_hook++ == 0) {
        mvz_ring_make_room(r); /* for both events: the headroom covers the second */
        mvz_ring_begin(r);
    }
    return key_before_release();
}

void mvz_realloc_end(void *old, size_t size, void *p, uint64_t key, int entry,
                     const void *hook_frame)
{
    struct mvz_ring *r = ring();
    /* A failed realloc leaves the old block alive: the key is spent on a no-op. */
    int op = !p && size != 0 ? MVZ_OP_NOP : MVZ_OP_FREE;
    emit(r, key, op, entry, old, 0, MVZ_STACK_NONE, MVZ_SK_ID);
    if (mvz_tls.in_hook == 1)
        mvz_ring_end(r, key);
    mvz_tls.in_hook--;
    if (p)
        mvz_on_alloc(p, size, entry, hook_frame);
}
