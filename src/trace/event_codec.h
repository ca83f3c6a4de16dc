/*
 * event_codec.h - the encoding of heap events inside an EVENTS record,
 * shared by the agent (encoder) and the replay (decoder) so the two cannot
 * drift apart. Each event is delta-encoded against the previous event of
 * the same record:
 *   u8 code = op | entry << 2
 *   svarint seq delta (unless NO_KEYS), svarint ts delta (in ns, or in
 *   units of 2^16 ns with COARSE_TS)
 *   unless op is NOP: svarint address delta
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

struct mvz_codec_state {
    uint64_t seq, ts, addr; /* ts in the record's unit */
    unsigned flags;
};

struct mvz_codec_event {
    uint64_t seq, ts, addr, size;
    uint32_t stack;
    uint8_t op, entry;
};

__attribute__((always_inline)) static inline void
mvz_event_encode(struct mvz_buf *b, struct mvz_codec_state *st, const struct mvz_codec_event *e)
{
    mvz_put_u8(b, (uint8_t)(e->op | (e->entry << 2)));
    if (!(st->flags & MVZ_EVENTS_NO_KEYS))
        mvz_put_svarint(b, (int64_t)(e->seq - st->seq));
    uint64_t ts = st->flags & MVZ_EVENTS_COARSE_TS ? e->ts >> MVZ_TS_COARSE_SHIFT : e->ts;
    mvz_put_svarint(b, (int64_t)(ts - st->ts));
    st->seq = e->seq;
    st->ts = ts;
    if (e->op == MVZ_OP_NOP)
        return;
    mvz_put_svarint(b, (int64_t)(e->addr - st->addr));
    st->addr = e->addr;
    if (e->op == MVZ_OP_ALLOC) {
        mvz_put_uvarint(b, e->size);
        mvz_put_uvarint(b, e->stack);
    }
}

/* Returns 0, or -1 when the bytes do not form a valid event. */
static inline int mvz_event_decode(struct mvz_cursor *c, struct mvz_codec_state *st,
                                   struct mvz_codec_event *e)
{
    uint8_t code = mvz_get_u8(c);
    e->op = code & 3;
    e->entry = code >> 2;
    if (!(st->flags & MVZ_EVENTS_NO_KEYS))
        st->seq += (uint64_t)mvz_get_svarint(c);
    e->seq = st->seq;
    st->ts += (uint64_t)mvz_get_svarint(c);
    e->ts = st->flags & MVZ_EVENTS_COARSE_TS ? st->ts << MVZ_TS_COARSE_SHIFT : st->ts;
    e->size = 0;
    e->stack = 0;
    e->addr = 0;
    if (e->op != MVZ_OP_NOP) {
        e->addr = st->addr += (uint64_t)mvz_get_svarint(c);
        if (e->op == MVZ_OP_ALLOC) {
            e->size = mvz_get_uvarint(c);
            e->stack = (uint32_t)mvz_get_uvarint(c);
        }
    }
    if (c->bad || e->op > MVZ_OP_NOP || e->entry >= MVZ_E_COUNT)
        return -1;
    return 0;
}

#endif
