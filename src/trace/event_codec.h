/*
 * event_codec.h - the encoding of heap events inside an EVENTS record, the
 * event record of trace formats 1 and 2 (the agent writes HEAP records
 * since format 3, trace/heap_codec.h). The replay decodes it to read older
 * traces; the encoder stays for the tests and tools that write such traces.
 * Each event is delta-encoded against the previous event of the same
 * record:
 *   u8 code = op | entry << 2 | ref << 7
 *   svarint seq delta (unless NO_KEYS), svarint ts delta (in ns, or in
 *   units of 2^16 ns with COARSE_TS)
 *   unless op is NOP: the address: svarint address delta, or with ref set
 *     (ADDR_REFS records only) a reference to an address the thread used
 *     recently: a FREE names one of the thread's last 256 allocations
 *     (uvarint distance, 1 = its latest), an ALLOC reuses one of its last
 *     64 released addresses (uvarint index, 0 = the latest release)
 *   if op is ALLOC:   uvarint size, uvarint stack id
 */
#ifndef MVZ_TRACE_EVENT_CODEC_H
#define MVZ_TRACE_EVENT_CODEC_H

#include <stdint.h>

#include "trace/buf.h"
#include "trace/format.h"

/* EVENTS record flags. NO_KEYS: the record's events carry no keys; the
 * writer guarantees that every event written before it has a smaller key
 * than the watermark preceding it, and that its own events are in order and
 * below the next watermark, so their order is their place in the file. */
#define MVZ_EVENTS_NO_KEYS 1u
/* COARSE_TS: event times are in units of 2^16 ns (65.5 us). Most deltas are
 * then 0, which zstd all but removes; finer times cost bytes that do not
 * compress and mean nothing in a heap profile. */
#define MVZ_EVENTS_COARSE_TS 2u
#define MVZ_TS_COARSE_SHIFT 16

/* ADDR_REFS: addresses may be references (above). The tables behind them
 * belong to a thread and live from the thread's first record in a chunk to
 * the end of that chunk, so a damaged chunk cannot mislead a later one. */
#define MVZ_EVENTS_ADDR_REFS 4u
#define MVZ_REFS_ALLOCS 256
#define MVZ_REFS_FREES 64
#define MVZ_CODE_REF 0x80u

struct mvz_addr_refs {
    uint64_t allocs[MVZ_REFS_ALLOCS]; /* ring: the thread's latest allocations */
    uint64_t frees[MVZ_REFS_FREES];   /* ring: its latest released addresses */
    uint64_t nalloc, nfree;
    /* encoder only (NULL in decoders): address -> position in the rings,
     * MVZ_REFS_ALLOC_POS and MVZ_REFS_FREE_POS entries, checked against them */
    uint32_t *alloc_pos, *free_pos;
};
#define MVZ_REFS_ALLOC_POS 4096
#define MVZ_REFS_FREE_POS 256

struct mvz_codec_state {
    uint64_t seq, ts, addr; /* ts in the record's unit */
    unsigned flags;
    struct mvz_addr_refs *refs; /* with ADDR_REFS */
};

struct mvz_codec_event {
    uint64_t seq, ts, addr, size;
    uint32_t stack;
    uint8_t op, entry;
};

static inline uint32_t mvz_refs_hash(uint64_t addr)
{
    return (uint32_t)((addr >> 4) * 0x9E3779B97F4A7C15ull >> 40);
}

/* Both sides record every address in the same way, so their tables agree. */
static inline void mvz_refs_note(struct mvz_addr_refs *r, unsigned op, uint64_t addr)
{
    if (op == MVZ_OP_ALLOC) {
        if (r->alloc_pos)
            r->alloc_pos[mvz_refs_hash(addr) % MVZ_REFS_ALLOC_POS] = (uint32_t)r->nalloc;
        r->allocs[r->nalloc++ % MVZ_REFS_ALLOCS] = addr;
    } else if (op == MVZ_OP_FREE) {
        if (r->free_pos)
            r->free_pos[mvz_refs_hash(addr) % MVZ_REFS_FREE_POS] = (uint32_t)r->nfree;
        r->frees[r->nfree++ % MVZ_REFS_FREES] = addr;
    }
}

/* The reference an encoder can use for addr, or 0: a FREE's distance
 * (1..256) back to the allocation, an ALLOC's index + 1 into the releases. */
static inline uint64_t mvz_refs_find(const struct mvz_addr_refs *r, unsigned op, uint64_t addr)
{
    if (op == MVZ_OP_FREE) {
        uint32_t d = (uint32_t)r->nalloc - r->alloc_pos[mvz_refs_hash(addr) % MVZ_REFS_ALLOC_POS];
        if (d >= 1 && d <= MVZ_REFS_ALLOCS && d <= r->nalloc &&
            r->allocs[(r->nalloc - d) % MVZ_REFS_ALLOCS] == addr)
            return d;
    } else if (op == MVZ_OP_ALLOC) {
        uint32_t back = (uint32_t)r->nfree - r->free_pos[mvz_refs_hash(addr) % MVZ_REFS_FREE_POS];
        if (back >= 1 && back <= MVZ_REFS_FREES && back <= r->nfree &&
            r->frees[(r->nfree - back) % MVZ_REFS_FREES] == addr)
            return back; /* written as index back - 1 */
    }
    return 0;
}

__attribute__((always_inline)) static inline void
mvz_event_encode(struct mvz_buf *b, struct mvz_codec_state *st, const struct mvz_codec_event *e)
{
    uint64_t ref = st->refs && st->refs->alloc_pos ? mvz_refs_find(st->refs, e->op, e->addr) : 0;
    mvz_put_u8(b, (uint8_t)(e->op | (e->entry << 2) | (ref ? MVZ_CODE_REF : 0)));
    if (!(st->flags & MVZ_EVENTS_NO_KEYS))
        mvz_put_svarint(b, (int64_t)(e->seq - st->seq));
    uint64_t ts = st->flags & MVZ_EVENTS_COARSE_TS ? e->ts >> MVZ_TS_COARSE_SHIFT : e->ts;
    mvz_put_svarint(b, (int64_t)(ts - st->ts));
    st->seq = e->seq;
    st->ts = ts;
    if (e->op == MVZ_OP_NOP)
        return;
    if (!ref)
        mvz_put_svarint(b, (int64_t)(e->addr - st->addr));
    else
        mvz_put_uvarint(b, e->op == MVZ_OP_FREE ? ref : ref - 1);
    st->addr = e->addr;
    if (st->refs)
        mvz_refs_note(st->refs, e->op, e->addr);
    if (e->op == MVZ_OP_ALLOC) {
        mvz_put_uvarint(b, e->size);
        mvz_put_uvarint(b, e->stack);
    }
}

/* Decodes a reference into *addr; -1 when it names nothing. */
static inline int mvz_refs_resolve(const struct mvz_addr_refs *r, unsigned op, uint64_t v,
                                   uint64_t *addr)
{
    if (op == MVZ_OP_FREE && v >= 1 && v <= MVZ_REFS_ALLOCS && v <= r->nalloc) {
        *addr = r->allocs[(r->nalloc - v) % MVZ_REFS_ALLOCS];
        return 0;
    }
    if (op == MVZ_OP_ALLOC && v < MVZ_REFS_FREES && v < r->nfree) {
        *addr = r->frees[(r->nfree - 1 - v) % MVZ_REFS_FREES];
        return 0;
    }
    return -1;
}

/* Returns 0, or -1 when the bytes do not form a valid event. */
static inline int mvz_event_decode(struct mvz_cursor *c, struct mvz_codec_state *st,
                                   struct mvz_codec_event *e)
{
    uint8_t code = mvz_get_u8(c);
    int ref = st->refs && (code & MVZ_CODE_REF);
    e->op = code & 3;
    e->entry = (code >> 2) & (st->refs ? 0x1f : 0x3f);
    if (!(st->flags & MVZ_EVENTS_NO_KEYS))
        st->seq += (uint64_t)mvz_get_svarint(c);
    e->seq = st->seq;
    st->ts += (uint64_t)mvz_get_svarint(c);
    e->ts = st->flags & MVZ_EVENTS_COARSE_TS ? st->ts << MVZ_TS_COARSE_SHIFT : st->ts;
    e->size = 0;
    e->stack = 0;
    e->addr = 0;
    if (e->op != MVZ_OP_NOP) {
        if (ref && mvz_refs_resolve(st->refs, e->op, mvz_get_uvarint(c), &st->addr) < 0)
            return -1;
        if (!ref)
            st->addr += (uint64_t)mvz_get_svarint(c);
        e->addr = st->addr;
        if (st->refs)
            mvz_refs_note(st->refs, e->op, e->addr);
        if (e->op == MVZ_OP_ALLOC) {
            e->size = mvz_get_uvarint(c);
            e->stack = (uint32_t)mvz_get_uvarint(c);
        }
    }
    /* No block lives at address 0: a run of zero bytes (which compresses to
     * almost nothing) is damage, not millions of events. */
    if (c->bad || e->op > MVZ_OP_NOP || e->entry >= MVZ_E_COUNT ||
        (e->op != MVZ_OP_NOP && e->addr == 0))
        return -1;
    return 0;
}

#endif
