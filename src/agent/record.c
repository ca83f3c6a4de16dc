/*
 * record.c - the hot path shared by every hook: number the event, stamp it,
 * attach a stack id, and append it to the calling thread's ring.
 *
 * A hook that is entered again on the same thread while recording (only a
 * signal handler can do that) records its event without a stack rather than
 * re-entering the unwinder or the stack table, which are not reentrant.
 */
#include <time.h>

#include "agent/agent.h"

uint64_t mvz_next_seq(void)
{
    return atomic_fetch_add_explicit(&mvz_agent.seq, 1, memory_order_relaxed);
}

void mvz_emit(uint64_t seq, int op, int entry, const void *addr, size_t size, uint32_t stack)
{
    struct mvz_ring *r = mvz_tls.ring ? mvz_tls.ring : mvz_ring_get();
    struct mvz_slot ev;
    ev.ts = mvz_clock_raw();
    ev.addr = (uint64_t)(uintptr_t)addr;
    ev.size = size;
    ev.stack = stack;
    ev.op = (uint8_t)op;
    ev.entry = (uint8_t)entry;
    atomic_init(&ev.seq, seq);
    if (!r || mvz_ring_push(r, &ev) < 0)
        __atomic_fetch_add(&mvz_agent.lost_events, 1, __ATOMIC_RELAXED);
}

void mvz_on_alloc(void *p, size_t size, int entry)
{
    if (mvz_tls.in_hook) {
        mvz_tls.in_hook++;
        mvz_emit(mvz_next_seq(), MVZ_OP_ALLOC, entry, p, size, MVZ_STACK_NESTED);
        mvz_tls.in_hook--;
        return;
    }
    mvz_tls.in_hook = 1;
    uint32_t stack = mvz_stack_capture();
    mvz_emit(mvz_next_seq(), MVZ_OP_ALLOC, entry, p, size, stack);
    mvz_tls.in_hook = 0;
}

void mvz_on_free(void *p, int entry)
{
    mvz_tls.in_hook++;
    mvz_emit(mvz_next_seq(), MVZ_OP_FREE, entry, p, 0, MVZ_STACK_NONE);
    mvz_tls.in_hook--;
}
