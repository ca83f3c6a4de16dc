/*
 * heap_codec.h - the encoding of HEAP records (format 3), shared by the
 * agent's collector (encoder) and the replay (decoder).
 *
 * A HEAP record holds heap events of every thread in the order they
 * happened: the agent's writer merges the threads' buffers by key, so the
 * file order is the event order and no keys are stored. Blocks are named by
 * who allocated them, not by address: a thread's allocations are numbered
 * 0, 1, 2, ... (its serials), and a release names its block by the
 * allocating thread and serial, usually as an age: how many allocations
 * its thread made since (1 = its latest). The writer knows which block
 * lives at each address; readers keep no address table, and a release
 * costs a byte or two instead of an address.
 *
 * Payload:
 *   uvarint first   heap events written before this record, to count events
 *                   lost to damage
 *   uvarint n       heap events in this record (THREAD codes not counted)
 *   uvarint late    events of this record that the writer merged after a
 *                   later event of another thread (a stalled thread's)
 *   then codes, each starting with u8 code = op | entry << 3:
 *   THREAD: uvarint i; the events that follow are the thread's with record
 *     thread index i. i = the number of threads named so far in the record
 *     names a new one: uvarint tid, uvarint serial (the allocations it made
 *     before). Every record starts with a THREAD code.
 *   ALLOC: svarint time delta, uvarint size, uvarint stack. The block is the
 *     thread's next serial.
 *   FREE: svarint time delta, uvarint age: the block the current thread
 *     allocated `age` allocations ago (1 = its latest).
 *   FREE_NEXT: svarint time delta, svarint d: the current thread's block
 *     with serial p + 1 + d, where p is the serial of the last of its own
 *     blocks it released with FREE or FREE_NEXT in this record (0 before
 *     any): blocks released in the order they
 *     were made (a container's elements) cost a 0 each. The agent writes
 *     FREE_NEXT when d is 0 or shorter than the age, except for age 1.
 *   FREE_OTHER: svarint time delta, uvarint i, then: when i is the record
 *     index of a thread named in the record, uvarint age: the block that
 *     thread allocated `age` allocations ago; else (i = the number of
 *     threads named) uvarint tid, uvarint serial. A block allocated by
 *     another thread than the current one, or by this one before a reuse
 *     (below).
 *   FREE_UNKNOWN: svarint time delta; a release of an address that holds no
 *     block (a double free, a block from before the agent started).
 *   ALLOC_REUSED: svarint time delta, uvarint size, uvarint stack, uvarint
 *     tid, uvarint serial: an allocation at the address of a live block
 *     whose release the trace missed; the new block takes that block's name
 *     (readers see the name reused and count it). Takes no serial.
 * Times are in units of 2^16 ns since the agent started, each a delta
 * against the previous event of the record (0 before the first). All the
 * reference state starts afresh with each record, so a damaged chunk never
 * misleads the decoding of a later one.
 */
#ifndef MVZ_TRACE_HEAP_CODEC_H
#define MVZ_TRACE_HEAP_CODEC_H

#include <stdint.h>

#include "trace/buf.h"
#include "trace/format.h"

enum mvz_heap_op {
    MVZ_HEAP_ALLOC = 0,
    MVZ_HEAP_FREE = 1,
    MVZ_HEAP_FREE_OTHER = 2,
    MVZ_HEAP_FREE_UNKNOWN = 3,
    MVZ_HEAP_ALLOC_REUSED = 4,
    MVZ_HEAP_FREE_NEXT = 5,
    MVZ_HEAP_THREAD = 7,
};
#define MVZ_HEAP_OP_MASK 7u
#define MVZ_HEAP_ENTRY_SHIFT 3
#define MVZ_HEAP_TS_SHIFT 16
/* Threads one record can name; a writer starts a new record before more. */
#define MVZ_HEAP_MAX_THREADS 256
/* Serials fit in 40 bits, thread ids in 24: a block's name is one number. */
#define MVZ_HEAP_SERIAL_BITS 40

/* A block's name as one nonzero number: readers key their tables by it. */
static inline uint64_t mvz_heap_block(uint32_t tid, uint64_t serial)
{
    return ((uint64_t)tid << MVZ_HEAP_SERIAL_BITS |
            (serial & ((1ull << MVZ_HEAP_SERIAL_BITS) - 1))) +
           1;
}

/* Reference state of one record, the same on both sides. */
struct mvz_heap_state {
    uint64_t ts;  /* time of the previous event, in 2^16 ns units */
    uint32_t cur; /* record thread index of the current thread */
    uint32_t nthreads;
    uint32_t tids[MVZ_HEAP_MAX_THREADS];
    uint64_t serial[MVZ_HEAP_MAX_THREADS]; /* per thread: its next serial */
    uint64_t freed[MVZ_HEAP_MAX_THREADS];  /* per thread: serial it released last */
};

static inline void mvz_heap_state_reset(struct mvz_heap_state *s)
{
    s->ts = 0;
    s->cur = 0;
    s->nthreads = 0;
}

/* ---- encoder ----
 * Each code is written through a raw pointer after one reservation of
 * MVZ_HEAP_CODE_MAX bytes: the writer encodes tens of millions of codes a
 * second. On a failed reservation (out of memory) the code is dropped and
 * the buffer is marked (mvz_buf.oom). */
#define MVZ_HEAP_CODE_MAX 64

static inline unsigned mvz_uvarint_len(uint64_t v)
{
    unsigned n = 1;
    for (; v >= 0x80; v >>= 7)
        n++;
    return n;
}

static inline uint8_t *mvz_heap_uv(uint8_t *p, uint64_t v)
{
    return p + mvz_uvarint_encode(p, v);
}

static inline uint8_t *mvz_heap_room(struct mvz_buf *b)
{
    return mvz_buf_reserve(b, MVZ_HEAP_CODE_MAX) < 0 ? NULL : b->data + b->len;
}

static inline void mvz_heap_done(struct mvz_buf *b, uint8_t *p)
{
    b->len = (size_t)(p - b->data);
}

/* Makes tid (whose next serial is `serial`) the current thread; -1 when
 * the record has no room for another thread (start a new record). */
static inline int mvz_heap_put_thread(struct mvz_buf *b, struct mvz_heap_state *s, uint32_t tid,
                                      uint64_t serial)
{
    if (s->nthreads && s->tids[s->cur] == tid)
        return 0;
    uint32_t i = 0;
    while (i < s->nthreads && s->tids[i] != tid)
        i++;
    if (i == MVZ_HEAP_MAX_THREADS)
        return -1;
    uint8_t *p = mvz_heap_room(b);
    if (!p)
        return 0;
    *p++ = MVZ_HEAP_THREAD;
    p = mvz_heap_uv(p, i);
    if (i == s->nthreads) {
        p = mvz_heap_uv(p, tid);
        p = mvz_heap_uv(p, serial);
        s->tids[i] = tid;
        s->serial[i] = serial;
        s->freed[i] = 0;
        s->nthreads++;
    }
    mvz_heap_done(b, p);
    s->cur = i;
    return 0;
}

/* The code byte and the time delta; p has room (mvz_heap_room). */
static inline uint8_t *mvz_heap_head(uint8_t *p, struct mvz_heap_state *s, unsigned op,
                                     unsigned entry, uint64_t ts_ns)
{
    uint64_t ts = ts_ns >> MVZ_HEAP_TS_SHIFT;
    *p++ = (uint8_t)(op | entry << MVZ_HEAP_ENTRY_SHIFT);
    p = mvz_heap_uv(p, mvz_zigzag((int64_t)(ts - s->ts)));
    s->ts = ts;
    return p;
}

/* A code of its own without operands: FREE_UNKNOWN. */
static inline void mvz_heap_put_head(struct mvz_buf *b, struct mvz_heap_state *s, unsigned op,
                                     unsigned entry, uint64_t ts_ns)
{
    uint8_t *p = mvz_heap_room(b);
    if (p)
        mvz_heap_done(b, mvz_heap_head(p, s, op, entry, ts_ns));
}

/* An allocation by the current thread; it takes the thread's next serial. */
static inline void mvz_heap_put_alloc(struct mvz_buf *b, struct mvz_heap_state *s, uint64_t ts_ns,
                                      unsigned entry, uint64_t size, uint32_t stack)
{
    uint8_t *p = mvz_heap_room(b);
    if (!p)
        return;
    p = mvz_heap_head(p, s, MVZ_HEAP_ALLOC, entry, ts_ns);
    p = mvz_heap_uv(p, size);
    p = mvz_heap_uv(p, stack);
    mvz_heap_done(b, p);
    s->serial[s->cur]++;
}

/* An allocation at the address of the live block (tid, serial), whose
 * release was missed: the new block takes its name. */
static inline void mvz_heap_put_alloc_reused(struct mvz_buf *b, struct mvz_heap_state *s,
                                             uint64_t ts_ns, unsigned entry, uint64_t size,
                                             uint32_t stack, uint32_t tid, uint64_t serial)
{
    uint8_t *p = mvz_heap_room(b);
    if (!p)
        return;
    p = mvz_heap_head(p, s, MVZ_HEAP_ALLOC_REUSED, entry, ts_ns);
    p = mvz_heap_uv(p, size);
    p = mvz_heap_uv(p, stack);
    p = mvz_heap_uv(p, tid);
    p = mvz_heap_uv(p, serial);
    mvz_heap_done(b, p);
}

/* A release, by the current thread, of the block (tid, serial). */
static inline void mvz_heap_put_free(struct mvz_buf *b, struct mvz_heap_state *s, uint64_t ts_ns,
                                     unsigned entry, uint32_t tid, uint64_t serial)
{
    uint8_t *p = mvz_heap_room(b);
    if (!p)
        return;
    uint32_t i = s->cur;
    if (tid == s->tids[i] && serial < s->serial[i]) {
        uint64_t age = s->serial[i] - serial;
        uint64_t next = mvz_zigzag((int64_t)(serial - s->freed[i] - 1));
        s->freed[i] = serial;
        if (age > 1 && (next == 0 || mvz_uvarint_len(next) < mvz_uvarint_len(age))) {
            p = mvz_heap_head(p, s, MVZ_HEAP_FREE_NEXT, entry, ts_ns);
            p = mvz_heap_uv(p, next);
        } else {
            p = mvz_heap_head(p, s, MVZ_HEAP_FREE, entry, ts_ns);
            p = mvz_heap_uv(p, age);
        }
        mvz_heap_done(b, p);
        return;
    }
    p = mvz_heap_head(p, s, MVZ_HEAP_FREE_OTHER, entry, ts_ns);
    uint32_t owner = 0;
    while (owner < s->nthreads && s->tids[owner] != tid)
        owner++;
    if (owner < s->nthreads && serial < s->serial[owner]) {
        p = mvz_heap_uv(p, owner);
        p = mvz_heap_uv(p, s->serial[owner] - serial);
    } else { /* by thread id and serial: i is the number of threads named */
        p = mvz_heap_uv(p, s->nthreads);
        p = mvz_heap_uv(p, tid);
        p = mvz_heap_uv(p, serial);
    }
    mvz_heap_done(b, p);
}

/* ---- decoder ---- */

struct mvz_heap_event {
    uint64_t ts; /* ns */
    uint64_t size;
    uint64_t block; /* mvz_heap_block(); 0 for FREE_UNKNOWN */
    uint32_t stack, tid;
    uint8_t op, entry;
};

/* Reads THREAD codes; returns the code of the event that follows them. */
static inline int mvz_heap_decode_threads(struct mvz_cursor *c, struct mvz_heap_state *s)
{
    uint8_t code = mvz_get_u8(c);
    while (!c->bad && code == MVZ_HEAP_THREAD) {
        uint64_t i = mvz_get_uvarint(c);
        if (i > s->nthreads || i >= MVZ_HEAP_MAX_THREADS)
            return -1;
        if (i == s->nthreads) {
            uint64_t tid = mvz_get_uvarint(c), serial = mvz_get_uvarint(c);
            if (tid >> 24 || serial >> MVZ_HEAP_SERIAL_BITS)
                return -1; /* names could not hold them */
            s->tids[i] = (uint32_t)tid;
            s->serial[i] = serial;
            s->freed[i] = 0;
            s->nthreads++;
        }
        s->cur = (uint32_t)i;
        code = mvz_get_u8(c);
    }
    return c->bad || !s->nthreads ? -1 : code;
}

/* Decodes the next heap event. Returns 0, or -1 when the bytes do not form
 * a valid event (damage). */
static inline int mvz_heap_decode(struct mvz_cursor *c, struct mvz_heap_state *s,
                                  struct mvz_heap_event *e)
{
    int code = mvz_heap_decode_threads(c, s);
    if (code < 0)
        return -1;
    e->op = code & MVZ_HEAP_OP_MASK;
    e->entry = (uint8_t)(code >> MVZ_HEAP_ENTRY_SHIFT);
    e->tid = s->tids[s->cur];
    s->ts += (uint64_t)mvz_get_svarint(c);
    e->ts = s->ts << MVZ_HEAP_TS_SHIFT;
    e->size = 0;
    e->stack = 0;
    e->block = 0;
    uint64_t *serial = &s->serial[s->cur];
    switch (e->op) {
    case MVZ_HEAP_ALLOC:
    case MVZ_HEAP_ALLOC_REUSED:
        e->size = mvz_get_uvarint(c);
        e->stack = (uint32_t)mvz_get_uvarint(c);
        if (e->op == MVZ_HEAP_ALLOC) {
            e->block = mvz_heap_block(e->tid, (*serial)++);
        } else { /* the reused block's name */
            uint64_t tid = mvz_get_uvarint(c), b = mvz_get_uvarint(c);
            if (tid < 1u << 24 && !(b >> MVZ_HEAP_SERIAL_BITS))
                e->block = mvz_heap_block((uint32_t)tid, b);
        }
        break;
    case MVZ_HEAP_FREE_OTHER: {
        uint64_t i = mvz_get_uvarint(c);
        if (i < s->nthreads) {
            uint64_t age = mvz_get_uvarint(c);
            if (age && age <= s->serial[i])
                e->block = mvz_heap_block(s->tids[i], s->serial[i] - age);
            break;
        }
        uint64_t tid = mvz_get_uvarint(c), b = mvz_get_uvarint(c);
        if (i == s->nthreads && tid < 1u << 24 && !(b >> MVZ_HEAP_SERIAL_BITS))
            e->block = mvz_heap_block((uint32_t)tid, b);
        break;
    }
    case MVZ_HEAP_FREE: {
        uint64_t age = mvz_get_uvarint(c);
        if (age && age <= *serial)
            e->block = mvz_heap_block(e->tid, s->freed[s->cur] = *serial - age);
        break;
    }
    case MVZ_HEAP_FREE_NEXT: {
        uint64_t b = s->freed[s->cur] + 1 + (uint64_t)mvz_get_svarint(c);
        if (b < *serial)
            e->block = mvz_heap_block(e->tid, s->freed[s->cur] = b);
        break;
    }
    case MVZ_HEAP_FREE_UNKNOWN:
        break;
    default:
        return -1;
    }
    if (c->bad || e->entry >= MVZ_E_COUNT || (e->op != MVZ_HEAP_FREE_UNKNOWN && !e->block))
        return -1;
    return 0;
}

#endif
