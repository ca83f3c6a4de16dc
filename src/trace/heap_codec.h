/*
 * heap_codec.h - the encoding of HEAP records, shared by the agent's
 * collector (encoder) and the replay (decoder).
 *
 * A HEAP record holds heap events of every thread in the order they
 * happened: the agent's writer merges the threads' buffers by key, so the
 * record order is the event order and no keys are stored. Blocks are named
 * by who allocated them, not by address: a thread's allocations are
 * numbered 0, 1, 2, ... (its serials), and a release names its block by
 * the allocating thread and serial, usually as an age: how many
 * allocations its thread made since (1 = its latest). The writer knows
 * which block lives at each address; readers keep no address table, and a
 * release costs a byte or two instead of an address.
 *
 * Payload:
 *   uvarint first   heap events written before this record, to count events
 *                   lost to damage
 *   uvarint n       heap events in this record (THREAD codes not counted)
 *   uvarint late    events of this record that the writer merged after a
 *                   later event of another thread (a stalled thread's)
 *   HEAP_STREAMS: uvarint length of each of the 24 parts (4 per stream,
 *     below) but the last, then the parts: each field below goes to the
 *     stream named in brackets, byte j of its varint to part min(j, 3).
 *     Like values side by side compress far better than events
 *     interleaved (zstd: a third of the size on deep stacks, four fifths
 *     on random sizes).
 *   HEAP: one stream, the fields of each code in the order listed.
 * Codes, each starting with u8 code = op | entry << 3 [CODE]:
 *   THREAD: uvarint i [THREAD]; the events that follow are the thread's
 *     with record thread index i. i = the number of threads named so far
 *     in the record names a new one: uvarint tid, uvarint serial (the
 *     allocations it made before) [THREAD]. Every record starts with a
 *     THREAD code.
 *   ALLOC: svarint time delta [TIME], uvarint size [SIZE], uvarint stack
 *     [STACK]. The block is the thread's next serial.
 *   FREE: svarint time delta [TIME], uvarint age [REF]: the block the
 *     current thread allocated `age` allocations ago (1 = its latest).
 *   FREE_NEXT: svarint time delta [TIME], svarint d [REF]: the current
 *     thread's block with serial p + 1 + d, where p is the serial of the
 *     last of its own blocks it released with FREE or FREE_NEXT in this
 *     record (0 before any): blocks released in the order they were made
 *     (a container's elements) cost a 0 each. The agent writes FREE_NEXT
 *     when d is 0 or shorter than the age, except for age 1.
 *   FREE_OTHER: svarint time delta [TIME], uvarint i [THREAD], then: when
 *     i is the record index of a thread named in the record, uvarint age
 *     [REF]: the block that thread allocated `age` allocations ago. Else i
 *     is the number of threads named, and
 *       format 4: uvarint tid, uvarint next [THREAD], uvarint age [REF]:
 *       the block (tid, next - age); when tid is not named yet and the
 *       record has room, this names it, with `next` as its next serial.
 *       format 3: uvarint tid, uvarint serial: the block (tid, serial).
 *     A block allocated by another thread than the current one, or by
 *     this one before a reuse (below).
 *   FREE_UNKNOWN: svarint time delta [TIME]; a release of an address that
 *     holds no block (a double free, a block from before the agent
 *     started).
 *   ALLOC_REUSED: svarint time delta [TIME], uvarint size [SIZE], uvarint
 *     stack [STACK], uvarint tid, uvarint serial [REF]: an allocation at
 *     the address of a live block whose release the trace missed; the new
 *     block takes that block's name (readers see the name reused and count
 *     it). Takes no serial.
 *   GROUP (format 5): svarint time delta [TIME], uvarint n, uvarint mark,
 *     uvarint nsites, then nsites times uvarint stack, uvarint rise
 *     [THREAD]. The next n heap events, all of this record and
 *     of the group's time, are the events of several threads within one
 *     time unit, written thread by thread instead of in the order they
 *     happened (which costs about a bit per event when threads allocate at
 *     once). Heap states inside the group did not all exist; these did:
 *     the one after the group's first `mark` events (0: none) holds the
 *     live blocks of the moment the group's heap first reached its
 *     highest, and for each listed site the highest live bytes it had
 *     during the group were `rise` above its live bytes at the group's
 *     start; the states of sites not listed are real. A group written
 *     thread by thread whose order misstates no peak has no GROUP code
 *     (src/trace/heap_group.h).
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
    MVZ_HEAP_GROUP = 6,
    MVZ_HEAP_THREAD = 7,
};
#define MVZ_HEAP_OP_MASK 7u
#define MVZ_HEAP_ENTRY_SHIFT 3
#define MVZ_HEAP_TS_SHIFT 16
/* Threads one record can name; a writer starts a new record before more. */
#define MVZ_HEAP_MAX_THREADS 256
/* Serials fit in 40 bits, thread ids in 24: a block's name is one number. */
#define MVZ_HEAP_SERIAL_BITS 40

/* The streams of a HEAP_STREAMS record. Each is stored in MVZ_HS_PARTS
 * parts: byte j of each of its varints goes to part min(j, 3), so that
 * zstd's entropy stage sees the first bytes apart from the high ones
 * (ages of random blocks: 16.2 bits each split, 18.0 mixed; their entropy
 * is 15.7). */
enum mvz_heap_stream {
    MVZ_HS_CODE,
    MVZ_HS_THREAD,
    MVZ_HS_TIME,
    MVZ_HS_SIZE,
    MVZ_HS_STACK,
    MVZ_HS_REF,
    MVZ_HS_COUNT
};
#define MVZ_HS_PARTS 4

/* A block's name as one nonzero number: readers key their tables by it. */
static inline uint64_t mvz_heap_block(uint32_t tid, uint64_t serial)
{
    return ((uint64_t)tid << MVZ_HEAP_SERIAL_BITS |
            (serial & ((1ull << MVZ_HEAP_SERIAL_BITS) - 1))) +
           1;
}

/* The thread a block's name names. */
static inline uint32_t mvz_heap_block_tid(uint64_t block)
{
    return (uint32_t)((block - 1) >> MVZ_HEAP_SERIAL_BITS);
}

static inline uint64_t mvz_heap_block_serial(uint64_t block)
{
    return (block - 1) & ((1ull << MVZ_HEAP_SERIAL_BITS) - 1);
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

/* Record index of thread tid, or s->nthreads when the record has not
 * named it. */
static inline uint32_t mvz_heap_thread_index(const struct mvz_heap_state *s, uint32_t tid)
{
    uint32_t i = 0;
    while (i < s->nthreads && s->tids[i] != tid)
        i++;
    return i;
}

static inline void mvz_heap_name(struct mvz_heap_state *s, uint32_t tid, uint64_t serial)
{
    uint32_t i = s->nthreads++;
    s->tids[i] = tid;
    s->serial[i] = serial;
    s->freed[i] = 0;
}

/* ---- encoder ----
 * The writer encodes tens of millions of codes a second: each field goes
 * straight into its stream. On a failed growth (out of memory) the stream
 * is marked (mvz_buf.oom) and the writer drops the record.
 *
 * Fields are written without a bound check per byte: every buffer is made
 * to hold MVZ_HEAP_QUICK_EVENTS more codes' worth at a time, and each code
 * (an event, a THREAD code, a GROUP's site) takes one of those
 * (mvz_heap_code_room) before its fields are written. */
struct mvz_heap_out {
    struct mvz_buf part[MVZ_HS_COUNT][MVZ_HS_PARTS];
    /* Where each part's bytes go: to its own buffer (HEAP_STREAMS), or
     * every part to part[0][0] (HEAP: the fields interleaved). */
    struct mvz_buf *s[MVZ_HS_COUNT][MVZ_HS_PARTS];
    unsigned quick; /* codes whose fields every buffer has room for */
    /* The addresses of the record's new blocks (ALLOC, ALLOC_REUSED), in
     * file order, for its ADDRS record: kept only when `where_on`. */
    int where_on;
    struct mvz_buf where[MVZ_HS_PARTS];
    uint64_t where_prev, where_n;
};

/* At most this many bytes of one code's fields go into any one buffer
 * (interleaved: a code, a time, a size, a stack and two references, or a
 * FREE_OTHER's naming, or a GROUP's three counts; at most 51). */
#define MVZ_HEAP_EVENT_BYTES 64u
#define MVZ_HEAP_QUICK_EVENTS 128u

/* Empties the buffers and directs the fields to streams or to one buffer. */
static inline void mvz_heap_out_start(struct mvz_heap_out *o, int streams)
{
    for (int i = 0; i < MVZ_HS_COUNT; i++)
        for (int j = 0; j < MVZ_HS_PARTS; j++) {
            o->part[i][j].len = 0;
            o->part[i][j].oom = 0;
            o->s[i][j] = streams ? &o->part[i][j] : &o->part[0][0];
        }
    o->quick = 0;
    for (int j = 0; j < MVZ_HS_PARTS; j++)
        o->where[j].len = o->where[j].oom = 0;
    o->where_prev = o->where_n = 0;
}

/* The address of the block the event just written made (ADDRS, 5.8): a
 * signed difference from the record's address before (from 0). */
static inline void mvz_heap_put_where(struct mvz_heap_out *o, uint64_t addr)
{
    uint64_t v = mvz_zigzag((int64_t)(addr - o->where_prev));
    unsigned j = 0;
    for (; v >= 0x80; v >>= 7, j++)
        mvz_put_u8(&o->where[j < 3 ? j : 3], (uint8_t)(v | 0x80));
    mvz_put_u8(&o->where[j < 3 ? j : 3], (uint8_t)v);
    o->where_prev = addr;
    o->where_n++;
}

static inline int mvz_heap_out_streams(const struct mvz_heap_out *o)
{
    return o->s[MVZ_HS_REF][MVZ_HS_PARTS - 1] != &o->part[0][0];
}

static inline unsigned mvz_uvarint_len(uint64_t v)
{
    unsigned n = 1;
    for (; v >= 0x80; v >>= 7)
        n++;
    return n;
}

/* Part of a stream that byte j of a varint goes to. */
static inline unsigned mvz_heap_part(unsigned j)
{
    return j < MVZ_HS_PARTS - 1 ? j : MVZ_HS_PARTS - 1;
}

/* Room for the fields of the next MVZ_HEAP_QUICK_EVENTS codes in every
 * buffer; -1 when one cannot grow (marked: the record is lost). */
static __attribute__((noinline, unused)) int mvz_heap_out_refill(struct mvz_heap_out *o)
{
    int streams = mvz_heap_out_streams(o);
    for (int i = 0; i < MVZ_HS_COUNT; i++)
        for (int j = 0; j < MVZ_HS_PARTS; j++)
            if ((streams || (i == 0 && j == 0)) &&
                mvz_buf_reserve(&o->part[i][j],
                                (size_t)MVZ_HEAP_EVENT_BYTES * MVZ_HEAP_QUICK_EVENTS) < 0)
                return -1;
    o->quick = MVZ_HEAP_QUICK_EVENTS;
    return 0;
}

/* Takes room for one code's fields; -1 when there is none (the record is
 * lost: write nothing of the code). */
static inline int mvz_heap_code_room(struct mvz_heap_out *o)
{
    if (__builtin_expect(o->quick == 0, 0) && mvz_heap_out_refill(o) < 0)
        return -1;
    o->quick--;
    return 0;
}

/* A field of a code that has its room. */
static inline void mvz_heap_uv(struct mvz_heap_out *o, int stream, uint64_t v)
{
    struct mvz_buf *const *part = o->s[stream];
    unsigned j = 0;
    for (; v >= 0x80; v >>= 7, j++) {
        struct mvz_buf *b = part[mvz_heap_part(j)];
        b->data[b->len++] = (uint8_t)(v | 0x80);
    }
    struct mvz_buf *b = part[mvz_heap_part(j)];
    b->data[b->len++] = (uint8_t)v;
}

/* A code's first byte (its room taken). */
static inline void mvz_heap_code(struct mvz_heap_out *o, uint8_t v)
{
    struct mvz_buf *b = o->s[MVZ_HS_CODE][0];
    b->data[b->len++] = v;
}

static inline int mvz_heap_out_oom(const struct mvz_heap_out *o)
{
    int oom = 0;
    for (int i = 0; i < MVZ_HS_COUNT; i++)
        for (int j = 0; j < MVZ_HS_PARTS; j++)
            oom |= o->part[i][j].oom;
    return oom; /* the addresses' buffers apart: without them, only ADDRS is lost */
}

static inline size_t mvz_heap_out_len(const struct mvz_heap_out *o)
{
    size_t n = 0;
    for (int i = 0; i < MVZ_HS_COUNT; i++)
        for (int j = 0; j < MVZ_HS_PARTS; j++)
            n += o->part[i][j].len;
    return n;
}

/* Appends the fields to a payload whose header is written. Streams: the
 * lengths of all parts but the last, then the parts, stream by stream. */
static inline void mvz_heap_out_finish(const struct mvz_heap_out *o, struct mvz_buf *payload)
{
    const struct mvz_buf *part = &o->part[0][0];
    if (!mvz_heap_out_streams(o)) {
        mvz_put_bytes(payload, part[0].data, part[0].len);
        return;
    }
    for (int i = 0; i < MVZ_HS_COUNT * MVZ_HS_PARTS - 1; i++)
        mvz_put_uvarint(payload, part[i].len);
    for (int i = 0; i < MVZ_HS_COUNT * MVZ_HS_PARTS; i++)
        mvz_put_bytes(payload, part[i].data, part[i].len);
}

/* Makes tid (whose next serial is `serial`) the current thread; -1 when
 * the record has no room for another thread (start a new record). */
static inline int mvz_heap_put_thread(struct mvz_heap_out *o, struct mvz_heap_state *s,
                                      uint32_t tid, uint64_t serial)
{
    if (s->nthreads && s->tids[s->cur] == tid)
        return 0;
    uint32_t i = mvz_heap_thread_index(s, tid);
    if (i == MVZ_HEAP_MAX_THREADS)
        return -1;
    /* Out of memory the record is lost; its state still follows. */
    int room = mvz_heap_code_room(o) == 0;
    if (room) {
        mvz_heap_code(o, MVZ_HEAP_THREAD);
        mvz_heap_uv(o, MVZ_HS_THREAD, i);
    }
    if (i == s->nthreads) {
        if (room) {
            mvz_heap_uv(o, MVZ_HS_THREAD, tid);
            mvz_heap_uv(o, MVZ_HS_THREAD, serial);
        }
        mvz_heap_name(s, tid, serial);
    }
    s->cur = i;
    return 0;
}

/* The code and the time delta, with room for the rest of the event's
 * fields; -1 when out of memory (write nothing more of it). Also the whole
 * of a FREE_UNKNOWN. */
static inline int mvz_heap_put_head(struct mvz_heap_out *o, struct mvz_heap_state *s, unsigned op,
                                    unsigned entry, uint64_t ts_ns)
{
    if (mvz_heap_code_room(o) < 0)
        return -1;
    uint64_t ts = ts_ns >> MVZ_HEAP_TS_SHIFT;
    mvz_heap_code(o, (uint8_t)(op | entry << MVZ_HEAP_ENTRY_SHIFT));
    mvz_heap_uv(o, MVZ_HS_TIME, mvz_zigzag((int64_t)(ts - s->ts)));
    s->ts = ts;
    return 0;
}

/* An allocation by the current thread; it takes the thread's next serial. */
static inline void mvz_heap_put_alloc(struct mvz_heap_out *o, struct mvz_heap_state *s,
                                      uint64_t ts_ns, unsigned entry, uint64_t size, uint32_t stack)
{
    if (mvz_heap_put_head(o, s, MVZ_HEAP_ALLOC, entry, ts_ns) < 0)
        return;
    mvz_heap_uv(o, MVZ_HS_SIZE, size);
    mvz_heap_uv(o, MVZ_HS_STACK, stack);
    s->serial[s->cur]++;
}

/* An allocation at the address of the live block (tid, serial), whose
 * release was missed: the new block takes its name. */
static inline void mvz_heap_put_alloc_reused(struct mvz_heap_out *o, struct mvz_heap_state *s,
                                             uint64_t ts_ns, unsigned entry, uint64_t size,
                                             uint32_t stack, uint32_t tid, uint64_t serial)
{
    if (mvz_heap_put_head(o, s, MVZ_HEAP_ALLOC_REUSED, entry, ts_ns) < 0)
        return;
    mvz_heap_uv(o, MVZ_HS_SIZE, size);
    mvz_heap_uv(o, MVZ_HS_STACK, stack);
    mvz_heap_uv(o, MVZ_HS_REF, tid);
    mvz_heap_uv(o, MVZ_HS_REF, serial);
}

/* A release of one of the current thread's own blocks. */
static inline void mvz_heap_put_free_own(struct mvz_heap_out *o, struct mvz_heap_state *s,
                                         uint64_t ts_ns, unsigned entry, uint64_t serial)
{
    uint32_t i = s->cur;
    uint64_t age = s->serial[i] - serial;
    uint64_t next = mvz_zigzag((int64_t)(serial - s->freed[i] - 1));
    s->freed[i] = serial;
    if (age > 1 && (next == 0 || mvz_uvarint_len(next) < mvz_uvarint_len(age))) {
        if (mvz_heap_put_head(o, s, MVZ_HEAP_FREE_NEXT, entry, ts_ns) == 0)
            mvz_heap_uv(o, MVZ_HS_REF, next);
    } else if (mvz_heap_put_head(o, s, MVZ_HEAP_FREE, entry, ts_ns) == 0) {
        mvz_heap_uv(o, MVZ_HS_REF, age);
    }
}

/* A release, by the current thread, of the block (tid, serial);
 * owner_next is thread tid's next serial as the writer knows it, which
 * names the thread in the record if it is not named yet. */
static inline void mvz_heap_put_free(struct mvz_heap_out *o, struct mvz_heap_state *s,
                                     uint64_t ts_ns, unsigned entry, uint32_t tid, uint64_t serial,
                                     uint64_t owner_next)
{
    uint32_t cur = s->cur;
    if (tid == s->tids[cur] && serial < s->serial[cur]) {
        mvz_heap_put_free_own(o, s, ts_ns, entry, serial);
        return;
    }
    if (mvz_heap_put_head(o, s, MVZ_HEAP_FREE_OTHER, entry, ts_ns) < 0)
        return;
    uint32_t owner = mvz_heap_thread_index(s, tid);
    if (owner < s->nthreads && serial < s->serial[owner]) {
        mvz_heap_uv(o, MVZ_HS_THREAD, owner);
        mvz_heap_uv(o, MVZ_HS_REF, s->serial[owner] - serial);
        return;
    }
    /* by thread id: naming it when the record has not yet */
    uint64_t next = serial + 1;
    int name = owner == s->nthreads && owner < MVZ_HEAP_MAX_THREADS;
    if (name && owner_next > serial)
        next = owner_next;
    mvz_heap_uv(o, MVZ_HS_THREAD, s->nthreads);
    mvz_heap_uv(o, MVZ_HS_THREAD, tid);
    mvz_heap_uv(o, MVZ_HS_THREAD, next);
    mvz_heap_uv(o, MVZ_HS_REF, next - serial);
    if (name)
        mvz_heap_name(s, tid, next);
}

/* A GROUP of n events (see the file comment); nsites calls of
 * mvz_heap_put_group_site follow. */
static inline void mvz_heap_put_group(struct mvz_heap_out *o, struct mvz_heap_state *s,
                                      uint64_t ts_ns, uint64_t n, uint64_t mark, uint64_t nsites)
{
    if (mvz_heap_put_head(o, s, MVZ_HEAP_GROUP, 0, ts_ns) < 0)
        return;
    mvz_heap_uv(o, MVZ_HS_THREAD, n);
    mvz_heap_uv(o, MVZ_HS_THREAD, mark);
    mvz_heap_uv(o, MVZ_HS_THREAD, nsites);
}

/* Into the THREAD stream too: among sizes and stacks these few values
 * would break the runs that repeat there. */
static inline void mvz_heap_put_group_site(struct mvz_heap_out *o, uint32_t stack, uint64_t rise)
{
    if (mvz_heap_code_room(o) < 0)
        return;
    mvz_heap_uv(o, MVZ_HS_THREAD, stack);
    mvz_heap_uv(o, MVZ_HS_THREAD, rise);
}

/* ---- decoder ---- */

struct mvz_heap_event {
    uint64_t ts; /* ns */
    uint64_t size;
    uint64_t block; /* mvz_heap_block(); 0 for FREE_UNKNOWN */
    uint32_t stack, tid;
    uint8_t op, entry;
};

/* A record's streams, each in its parts. In a HEAP record every part of
 * every stream is the one cursor c[0][0]. */
struct mvz_heap_in {
    struct mvz_cursor c[MVZ_HS_COUNT][MVZ_HS_PARTS];
    struct mvz_cursor *s[MVZ_HS_COUNT][MVZ_HS_PARTS];
    int major;
    int bad; /* a read went past the end of a part */
};

static inline void mvz_heap_in_point(struct mvz_heap_in *in, int split)
{
    for (int i = 0; i < MVZ_HS_COUNT; i++)
        for (int j = 0; j < MVZ_HS_PARTS; j++)
            in->s[i][j] = split ? &in->c[i][j] : &in->c[0][0];
}

/* Sets up the fields of a record whose header was read from c (the rest
 * of its payload): in streams (HEAP_STREAMS) or in one (HEAP). -1 when
 * the part lengths do not fit the payload. */
static inline int mvz_heap_in_open(struct mvz_heap_in *in, const struct mvz_cursor *c, int major,
                                   int streams)
{
    enum { NPARTS = MVZ_HS_COUNT * MVZ_HS_PARTS };
    memset(in, 0, sizeof(*in));
    in->major = major;
    mvz_heap_in_point(in, streams);
    struct mvz_cursor rest = *c, *part = &in->c[0][0];
    if (!streams) {
        part[0] = rest;
        return 0;
    }
    uint64_t len[NPARTS - 1];
    for (int i = 0; i < NPARTS - 1; i++)
        len[i] = mvz_get_uvarint(&rest);
    in->bad = rest.bad;
    for (int i = 0; i < NPARTS - 1; i++) {
        if (in->bad || len[i] > mvz_cursor_left(&rest))
            return -1;
        part[i] = mvz_cursor_make(rest.p, (size_t)len[i]);
        rest.p += len[i];
    }
    part[NPARTS - 1] = rest;
    return 0;
}

/* Reads the streams an encoder wrote (to interleave them). */
static inline void mvz_heap_in_from_out(struct mvz_heap_in *in, const struct mvz_heap_out *o,
                                        int major)
{
    memset(in, 0, sizeof(*in));
    in->major = major;
    mvz_heap_in_point(in, 1);
    for (int i = 0; i < MVZ_HS_COUNT; i++)
        for (int j = 0; j < MVZ_HS_PARTS; j++)
            in->c[i][j] = mvz_cursor_make(o->part[i][j].data, o->part[i][j].len);
}

static inline int mvz_heap_in_bad(const struct mvz_heap_in *in)
{
    return in->bad;
}

static inline uint8_t mvz_heap_byte_in(struct mvz_heap_in *in, struct mvz_cursor *c)
{
    if (__builtin_expect(c->p < c->end, 1))
        return *c->p++;
    in->bad = 1;
    return 0;
}

/* The next uvarint of a stream, its bytes taken from their parts. */
static inline uint64_t mvz_heap_get(struct mvz_heap_in *in, int stream)
{
    struct mvz_cursor *const *part = in->s[stream];
    uint64_t v = 0;
    for (unsigned j = 0, shift = 0; shift < 64; j++, shift += 7) {
        uint8_t byte = mvz_heap_byte_in(in, part[mvz_heap_part(j)]);
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    in->bad = 1;
    return 0;
}

static inline uint8_t mvz_heap_get_code(struct mvz_heap_in *in)
{
    return mvz_heap_byte_in(in, in->s[MVZ_HS_CODE][0]);
}

static inline int mvz_heap_in_more(const struct mvz_heap_in *in)
{
    return mvz_cursor_left(in->s[MVZ_HS_CODE][0]) > 0;
}

/* ---- interleaving, for the writer's choice of layout ---- */

static inline void mvz_heap_copy(struct mvz_heap_in *in, int stream, struct mvz_buf *out)
{
    mvz_put_uvarint(out, mvz_heap_get(in, stream));
}

/* Appends the fields of the streams (o writes streams) to out in event
 * order: the layout of a HEAP record, where the streams are a HEAP_STREAMS
 * one. It follows the
 * codes as a decoder would, but copies fields rather than interpreting
 * them, naming threads as the decoder does. */
static inline void mvz_heap_out_interleave(const struct mvz_heap_out *o, struct mvz_buf *out)
{
    static struct mvz_heap_in in; /* off the writer's stack; its callers are serialized */
    mvz_heap_in_from_out(&in, o, MVZ_FORMAT_MAJOR);
    uint32_t tids[MVZ_HEAP_MAX_THREADS], n = 0;
    while (mvz_heap_in_more(&in)) {
        uint8_t code = mvz_heap_get_code(&in);
        mvz_put_u8(out, code);
        if (code == MVZ_HEAP_THREAD) {
            uint64_t i = mvz_heap_get(&in, MVZ_HS_THREAD);
            mvz_put_uvarint(out, i);
            if (i == n && n < MVZ_HEAP_MAX_THREADS) {
                tids[n++] = (uint32_t)mvz_heap_get(&in, MVZ_HS_THREAD);
                mvz_put_uvarint(out, tids[n - 1]);
                mvz_heap_copy(&in, MVZ_HS_THREAD, out);
            }
            continue;
        }
        mvz_heap_copy(&in, MVZ_HS_TIME, out);
        unsigned op = code & MVZ_HEAP_OP_MASK;
        if (op == MVZ_HEAP_GROUP) {
            mvz_heap_copy(&in, MVZ_HS_THREAD, out);
            mvz_heap_copy(&in, MVZ_HS_THREAD, out);
            uint64_t nsites = mvz_heap_get(&in, MVZ_HS_THREAD);
            mvz_put_uvarint(out, nsites);
            for (uint64_t k = 0; k < nsites && !in.bad; k++) {
                mvz_heap_copy(&in, MVZ_HS_THREAD, out);
                mvz_heap_copy(&in, MVZ_HS_THREAD, out);
            }
        } else if (op == MVZ_HEAP_ALLOC || op == MVZ_HEAP_ALLOC_REUSED) {
            mvz_heap_copy(&in, MVZ_HS_SIZE, out);
            mvz_heap_copy(&in, MVZ_HS_STACK, out);
            if (op == MVZ_HEAP_ALLOC_REUSED) {
                mvz_heap_copy(&in, MVZ_HS_REF, out);
                mvz_heap_copy(&in, MVZ_HS_REF, out);
            }
        } else if (op == MVZ_HEAP_FREE || op == MVZ_HEAP_FREE_NEXT) {
            mvz_heap_copy(&in, MVZ_HS_REF, out);
        } else if (op == MVZ_HEAP_FREE_OTHER) {
            uint64_t i = mvz_heap_get(&in, MVZ_HS_THREAD);
            mvz_put_uvarint(out, i);
            if (i == n) {
                uint64_t tid = mvz_heap_get(&in, MVZ_HS_THREAD);
                mvz_put_uvarint(out, tid);
                mvz_heap_copy(&in, MVZ_HS_THREAD, out);
                uint32_t k = 0;
                while (k < n && tids[k] != tid)
                    k++;
                if (k == n && n < MVZ_HEAP_MAX_THREADS)
                    tids[n++] = (uint32_t)tid;
            }
            mvz_heap_copy(&in, MVZ_HS_REF, out);
        }
    }
}

/* Reads THREAD codes; returns the code of the event that follows them. */
static inline int mvz_heap_decode_threads(struct mvz_heap_in *in, struct mvz_heap_state *s)
{
    uint8_t code = mvz_heap_get_code(in);
    while (!in->bad && code == MVZ_HEAP_THREAD) {
        uint64_t i = mvz_heap_get(in, MVZ_HS_THREAD);
        if (i > s->nthreads || i >= MVZ_HEAP_MAX_THREADS)
            return -1;
        if (i == s->nthreads) {
            uint64_t tid = mvz_heap_get(in, MVZ_HS_THREAD);
            uint64_t serial = mvz_heap_get(in, MVZ_HS_THREAD);
            if (tid >> 24 || serial >> MVZ_HEAP_SERIAL_BITS)
                return -1; /* names could not hold them */
            mvz_heap_name(s, (uint32_t)tid, serial);
        }
        s->cur = (uint32_t)i;
        code = mvz_heap_get_code(in);
    }
    return mvz_heap_in_bad(in) || !s->nthreads ? -1 : code;
}

/* FREE_OTHER by thread id (i = the number of threads named): the block's
 * name, or 0 when the numbers cannot be one. */
static inline uint64_t mvz_heap_decode_by_tid(struct mvz_heap_in *in, struct mvz_heap_state *s)
{
    uint64_t tid = mvz_heap_get(in, MVZ_HS_THREAD);
    if (in->major < 4) {
        uint64_t b = mvz_heap_get(in, MVZ_HS_REF);
        return tid >> 24 || b >> MVZ_HEAP_SERIAL_BITS ? 0 : mvz_heap_block((uint32_t)tid, b);
    }
    uint64_t next = mvz_heap_get(in, MVZ_HS_THREAD), age = mvz_heap_get(in, MVZ_HS_REF);
    if (tid >> 24 || next >> MVZ_HEAP_SERIAL_BITS || !age || age > next)
        return 0;
    if (mvz_heap_thread_index(s, (uint32_t)tid) == s->nthreads &&
        s->nthreads < MVZ_HEAP_MAX_THREADS)
        mvz_heap_name(s, (uint32_t)tid, next);
    return mvz_heap_block((uint32_t)tid, next - age);
}

/* The most events a GROUP may span (a record's at most). */
#define MVZ_HEAP_GROUP_MAX 65536u

/* A GROUP's header, whose code and time e holds: e->size = n, e->block =
 * mark, e->stack = nsites. -1 for damage (or a format before 5). */
static inline int mvz_heap_decode_group(struct mvz_heap_in *in, struct mvz_heap_event *e)
{
    uint64_t n = mvz_heap_get(in, MVZ_HS_THREAD), mark = mvz_heap_get(in, MVZ_HS_THREAD),
             nsites = mvz_heap_get(in, MVZ_HS_THREAD);
    if (in->major < 5 || mvz_heap_in_bad(in) || e->entry || n == 0 || n > MVZ_HEAP_GROUP_MAX ||
        mark > n || nsites > n)
        return -1;
    e->size = n;
    e->block = mark;
    e->stack = (uint32_t)nsites;
    return 0;
}

/* One site of a GROUP: -1 for damage. */
static inline int mvz_heap_decode_group_site(struct mvz_heap_in *in, uint32_t *stack,
                                             uint64_t *rise)
{
    uint64_t id = mvz_heap_get(in, MVZ_HS_THREAD);
    *rise = mvz_heap_get(in, MVZ_HS_THREAD);
    *stack = (uint32_t)id;
    return mvz_heap_in_bad(in) || id >> 32 ? -1 : 0;
}

/* Decodes the next heap event, or a GROUP header (op MVZ_HEAP_GROUP, see
 * mvz_heap_decode_group). Returns 0, or -1 when the bytes do not form a
 * valid event (damage). */
static inline int mvz_heap_decode(struct mvz_heap_in *in, struct mvz_heap_state *s,
                                  struct mvz_heap_event *e)
{
    int code = mvz_heap_decode_threads(in, s);
    if (code < 0)
        return -1;
    e->op = code & MVZ_HEAP_OP_MASK;
    e->entry = (uint8_t)(code >> MVZ_HEAP_ENTRY_SHIFT);
    e->tid = s->tids[s->cur];
    s->ts += (uint64_t)mvz_unzigzag(mvz_heap_get(in, MVZ_HS_TIME));
    e->ts = s->ts << MVZ_HEAP_TS_SHIFT;
    e->size = 0;
    e->stack = 0;
    e->block = 0;
    if (e->op == MVZ_HEAP_GROUP)
        return mvz_heap_decode_group(in, e);
    uint64_t *serial = &s->serial[s->cur];
    switch (e->op) {
    case MVZ_HEAP_ALLOC:
    case MVZ_HEAP_ALLOC_REUSED:
        e->size = mvz_heap_get(in, MVZ_HS_SIZE);
        e->stack = (uint32_t)mvz_heap_get(in, MVZ_HS_STACK);
        if (e->op == MVZ_HEAP_ALLOC) {
            e->block = mvz_heap_block(e->tid, (*serial)++);
        } else { /* the reused block's name */
            uint64_t tid = mvz_heap_get(in, MVZ_HS_REF), b = mvz_heap_get(in, MVZ_HS_REF);
            if (tid < 1u << 24 && !(b >> MVZ_HEAP_SERIAL_BITS))
                e->block = mvz_heap_block((uint32_t)tid, b);
        }
        break;
    case MVZ_HEAP_FREE_OTHER: {
        uint64_t i = mvz_heap_get(in, MVZ_HS_THREAD);
        if (i < s->nthreads) {
            uint64_t age = mvz_heap_get(in, MVZ_HS_REF);
            if (age && age <= s->serial[i])
                e->block = mvz_heap_block(s->tids[i], s->serial[i] - age);
        } else if (i == s->nthreads) {
            e->block = mvz_heap_decode_by_tid(in, s);
        }
        break;
    }
    case MVZ_HEAP_FREE: {
        uint64_t age = mvz_heap_get(in, MVZ_HS_REF);
        if (age && age <= *serial)
            e->block = mvz_heap_block(e->tid, s->freed[s->cur] = *serial - age);
        break;
    }
    case MVZ_HEAP_FREE_NEXT: {
        uint64_t d = (uint64_t)mvz_unzigzag(mvz_heap_get(in, MVZ_HS_REF));
        uint64_t b = s->freed[s->cur] + 1 + d;
        if (b < *serial)
            e->block = mvz_heap_block(e->tid, s->freed[s->cur] = b);
        break;
    }
    case MVZ_HEAP_FREE_UNKNOWN:
        break;
    default:
        return -1;
    }
    if (mvz_heap_in_bad(in) || e->entry >= MVZ_E_COUNT ||
        (e->op != MVZ_HEAP_FREE_UNKNOWN && !e->block))
        return -1;
    return 0;
}

#endif
