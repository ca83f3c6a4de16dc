/*
 * collector.c - turns the threads' heap events, merged in key order by the
 * writer (ring.c), into HEAP records (src/trace/heap_codec.h): it knows
 * which block lives at each address and names blocks by allocating thread
 * and serial, so the trace carries neither addresses nor keys, and readers
 * need no address table.
 *
 * Events are named in the order they happened. While threads interleave
 * often and the rest of the trace is cheap (so that their order would be
 * much of it), they are held until their time unit ends, and a unit in
 * which several threads made events is written thread by thread, as a
 * GROUP when that hides a peak (src/trace/heap_group.h); this is why the
 * table also keeps each block's size and stack. Otherwise they are written
 * as they come, which costs the writer less.
 *
 * State (writer only, under mvz_agent.lock): the table from each live
 * block's address to its name, size and stack (addrmap.c). It is mapped
 * memory: it grows with the program's live blocks and must not come
 * from, or disturb, its heap.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <zstd.h>

#include "agent/addrmap.h"
#include "agent/agent.h"
#include "trace/sampling.h"
#include "trace/heap_codec.h"
#include "trace/heap_group.h"
#include "trace/runpage.h"

#define EVENTS_PER_RECORD 65536u

/* Each thread id's next allocation serial. Linux reuses thread ids: a new
 * thread with the id of one that ended goes on with its serials, so that
 * two blocks never get the same name. Ids are below 2^22 (PID_MAX_LIMIT);
 * counters live in pages of 4,096 ids, mapped when an id of theirs first
 * appears (the pages around the process's own id at start, before the
 * program can have used up its memory). Rings keep a pointer to theirs. */
#define TID_LIMIT (1u << 22)
#define TID_PAGE_BITS 12
static uint64_t *serial_pages[TID_LIMIT >> TID_PAGE_BITS];

static struct {
    uint64_t written; /* heap events written so far */
    uint64_t max_key; /* largest key merged so far */
    struct mvz_heap_state st;
    struct mvz_heap_out out; /* the open record's streams */
    uint64_t first;          /* `written` when the open record began */
    unsigned n, late;        /* the open record's events and late ones */
    int trial;               /* the open record decides the layout */
    /* the events of the time unit not yet written, in the order they
     * happened, and their threads */
    struct mvz_group_ev pend[MVZ_GROUP_EVENTS];
    size_t npend;
    uint64_t pend_ts;  /* their time (one 2^16 ns unit) */
    int grouping;      /* events are held and grouped (else written at once) */
    int switched;      /* two threads have made events */
    uint32_t last_tid; /* of the latest event */
    uint32_t pend_tids[MVZ_HEAP_MAX_THREADS], npend_tids, pend_last;
    struct mvz_grouper grouper;
    int inexact; /* the summary's counts may differ from the trace's */
    /* sampling (sample.c): the trace's rate now, and a switch to come at
     * the first event keyed switch_key or later */
    uint64_t rate, switch_key, switch_rate;
    int switch_pending, ever_sampled;
} col;

/* Thread tid's serial counter (a stable pointer), or NULL when out of
 * memory or for an impossible id. Writer only (and mvz_collect_prepare). */
uint64_t *mvz_collect_serial(uint32_t tid)
{
    if (tid >= TID_LIMIT)
        return NULL;
    uint64_t **page = &serial_pages[tid >> TID_PAGE_BITS];
    if (!*page && !(*page = mvz_map_populated(sizeof(**page) << TID_PAGE_BITS)))
        return NULL;
    return &(*page)[tid & ((1u << TID_PAGE_BITS) - 1)];
}

/* Every TRIAL_EVERY records, the record is compressed in both layouts
 * and the smaller one is used until the next trial. Which one wins depends
 * on the program: fields apart compress to a third on deep_churn's
 * varied sizes and beat interleaving on random sizes and ages, but a
 * program that repeats whole runs of events (sqlite3, row after row)
 * compresses 30% smaller interleaved. A trial costs two compressions of
 * one record (at most EVENTS_PER_RECORD events) without history. Without
 * history a trial favours interleaving somewhat: it must win by 10%
 * (CPython's trace: 248 KB without that margin, 224 KB with it). */
#define TRIAL_EVERY 32

static struct {
    ZSTD_CCtx *cctx;
    struct mvz_buf scratch;
    unsigned countdown;
    uint8_t kind;                   /* MVZ_REC_HEAP or MVZ_REC_HEAP_STREAMS */
    uint64_t seen_raw, seen_packed; /* the latest chunk's sizes, when last looked at */
    uint64_t trial_bpe, last_bpe;   /* raw bytes per event x 16: trial record, latest record */
    uint64_t trials;                /* for MEMVIZ_STATS */
} layout = {.kind = MVZ_REC_HEAP_STREAMS};

/* Whether the events changed kind since the last trial, going by the
 * latest record's raw bytes per event against the trial record's:
 * releases of far blocks after releases in order, say. The chunk ratio
 * (ratio_fell) sees that only when the change falls on a chunk boundary:
 * on bench/ bulk, half the runs kept writing its std::map's releases
 * interleaved (compressed 1.6 to 1; in streams 95 to 1) after a trial
 * among its std::list's, a trace of 1.0 MiB instead of 0.14 MiB.
 * Interleaving wins by 30% at most (sqlite3) and can lose 60 to 1, so
 * while records are interleaved a change of a tenth asks for a trial;
 * in streams, a change of half. */
static int events_changed(void)
{
    uint64_t a = layout.trial_bpe, b = layout.last_bpe;
    if (!a || !b)
        return 0;
    if (layout.kind == MVZ_REC_HEAP)
        return a * 10 < b * 9 || b * 10 < a * 9;
    return a * 3 < b * 2 || b * 3 < a * 2;
}

static void note_record(const struct mvz_buf *p, int trial)
{
    layout.last_bpe = col.n ? p->len * 16 / col.n : 0;
    if (trial)
        layout.trial_bpe = layout.last_bpe;
}

/* Whether the latest chunk compressed less than half as well as the one
 * before: the program changed what it does, and the layout the last trial
 * chose may no longer suit it. Containers built and then destroyed whole
 * (bench/ bulk): a trial in the building phase chose interleaving, which
 * then compressed the destroying phase's releases 1.4 to 1 where streams
 * compress them 100 to 1 (the trace 1.18 MB instead of 0.14 MB, from one
 * run to the next as record boundaries fell). */
static int ratio_fell(const struct mvz_chunk_writer *w)
{
    uint64_t raw = __atomic_load_n(&w->last_raw, __ATOMIC_RELAXED);
    uint64_t packed = __atomic_load_n(&w->last_packed, __ATOMIC_RELAXED);
    if (raw == layout.seen_raw && packed == layout.seen_packed)
        return 0;
    int fell =
        layout.seen_packed && packed && raw * layout.seen_packed * 2 < layout.seen_raw * packed;
    layout.seen_raw = raw;
    layout.seen_packed = packed;
    return fell;
}

static void payload_header(struct mvz_buf *p)
{
    p->len = 0;
    p->oom = 0;
    mvz_put_uvarint(p, col.first);
    mvz_put_uvarint(p, col.n);
    mvz_put_uvarint(p, col.late);
}

/* Compressed size of p at level 1, or SIZE_MAX. */
static size_t trial_size(const struct mvz_buf *p)
{
    size_t bound = ZSTD_compressBound(p->len);
    if (!layout.cctx && !(layout.cctx = mvz_cw_new_cctx()))
        return SIZE_MAX;
    layout.scratch.len = 0;
    if (mvz_buf_reserve(&layout.scratch, bound) < 0)
        return SIZE_MAX;
    size_t n = ZSTD_compressCCtx(layout.cctx, layout.scratch.data, bound, p->data, p->len, 1);
    return ZSTD_isError(n) ? SIZE_MAX : n;
}

/* The open record's payload, in the layout it was written in, or for a
 * trial in the smaller one; NULL when out of memory. */
static const struct mvz_buf *record_payload(uint8_t *kind)
{
    static struct mvz_buf streams, inter;
    if (!mvz_heap_out_streams(&col.out)) {
        payload_header(&inter);
        mvz_heap_out_finish(&col.out, &inter);
        *kind = MVZ_REC_HEAP;
        return inter.oom ? NULL : &inter;
    }
    payload_header(&streams);
    mvz_heap_out_finish(&col.out, &streams);
    *kind = MVZ_REC_HEAP_STREAMS;
    if (!col.trial || streams.oom)
        return streams.oom ? NULL : &streams;
    payload_header(&inter);
    mvz_heap_out_interleave(&col.out, &inter);
    if (inter.oom)
        return &streams;
    layout.trials++;
    int interleave = trial_size(&inter) < trial_size(&streams) / 10 * 9;
    layout.kind = interleave ? MVZ_REC_HEAP : MVZ_REC_HEAP_STREAMS;
    *kind = layout.kind;
    return interleave ? &inter : &streams;
}

/* A HEAP_STREAMS record goes out with its larger parts in compressed
 * blocks of their own, each with the literal codes that suit it: on the mt
 * bench (random sizes and blocks) the trace is 6% smaller than with
 * blocks of 128 KiB across parts, cc1plus's 3%. A block's own codes cost
 * up to a few hundred bytes, so a part gets one only if it should
 * compress (at the latest chunk's ratio) to CUT_MIN bytes or more; the
 * smaller ones share a block with their neighbours. */
#define CUT_MIN 2048u

static void queue_streams(struct mvz_chunk_writer *w, const struct mvz_buf *p)
{
    uint64_t raw = __atomic_load_n(&w->last_raw, __ATOMIC_RELAXED);
    uint64_t packed = __atomic_load_n(&w->last_packed, __ATOMIC_RELAXED);
    uint64_t min = packed ? CUT_MIN * raw / packed : CUT_MIN;
    size_t cuts[2 * MVZ_HS_COUNT * MVZ_HS_PARTS], n = 0, at = p->len;
    const struct mvz_buf *part = &col.out.part[0][0];
    for (int i = 0; i < MVZ_HS_COUNT * MVZ_HS_PARTS; i++)
        at -= part[i].len; /* the parts end the payload */
    for (int i = 0; i < MVZ_HS_COUNT * MVZ_HS_PARTS; i++) {
        size_t len = part[i].len;
        if (len >= min) {
            if (!n || cuts[n - 1] != at)
                cuts[n++] = at;
            cuts[n++] = at + len;
        }
        at += len;
    }
    mvz_cw_record_cut(w, MVZ_REC_HEAP_STREAMS, p, cuts, n);
}

/* Grouping pays where threads interleave and the trace compresses well
 * otherwise: two threads churning a std::list, 1.3 MB -> 0.1 MB. On random
 * sizes and blocks (the mt bench: chunks compress 2.4 to 1) it saves 8%
 * and costs the writer about 10 ns an event, which there runs on the
 * program's cores. So events are grouped from the first change of thread
 * on, as long as the latest chunk compressed at least 16 to 1 (checked
 * when a record ends; before the first chunk, they are). A program that
 * stays on one thread never holds events. */
#define GROUP_MIN_RATIO 16u

static int grouping_pays(const struct mvz_chunk_writer *w)
{
    if (mvz_agent.groups != MVZ_GROUPS_AUTO)
        return mvz_agent.groups == MVZ_GROUPS_ALWAYS;
    uint64_t raw = __atomic_load_n(&w->last_raw, __ATOMIC_RELAXED);
    uint64_t packed = __atomic_load_n(&w->last_packed, __ATOMIC_RELAXED);
    return col.switched && raw >= GROUP_MIN_RATIO * packed;
}

/* The ADDRS record of the record about to be written: it goes first, so
 * that a reader has the addresses when it meets the events. */
static void write_addresses(struct mvz_chunk_writer *w)
{
    static struct mvz_buf b;
    for (int j = 0; j < MVZ_HS_PARTS; j++)
        if (col.out.where[j].oom)
            return; /* out of memory: this record's blocks have no address */
    b.len = 0;
    b.oom = 0;
    mvz_put_uvarint(&b, col.first);
    mvz_put_uvarint(&b, col.out.where_n);
    for (int j = 0; j < MVZ_HS_PARTS - 1; j++)
        mvz_put_uvarint(&b, col.out.where[j].len);
    for (int j = 0; j < MVZ_HS_PARTS; j++)
        mvz_put_bytes(&b, col.out.where[j].data, col.out.where[j].len);
    if (!b.oom)
        mvz_cw_record(w, MVZ_REC_ADDRS, &b);
}

/* A record with a stream that could not grow (out of memory) is dropped:
 * readers see its events missing (the next record's `first`), and the
 * next record starts from a fresh state (its THREAD codes give each
 * thread's serial). */
static void record_finish(struct mvz_chunk_writer *w)
{
    col.grouping = grouping_pays(w);
    if (col.n && !mvz_heap_out_oom(&col.out)) {
        uint8_t kind;
        const struct mvz_buf *p = record_payload(&kind);
        if (p)
            note_record(p, col.trial);
        if (p && col.out.where_n)
            write_addresses(w);
        if (p && kind == MVZ_REC_HEAP_STREAMS)
            queue_streams(w, p);
        else if (p)
            mvz_cw_record(w, kind, p);
        else
            col.inexact = 1;
    } else if (col.n) {
        col.inexact = 1;
    }
    col.n = col.late = 0;
    mvz_heap_out_start(&col.out, 1); /* also codes without an event (it was lost) */
    if (w->queued.raw.len >= MVZ_CW_FLUSH_AT)
        mvz_writer_write_queued_locked();
}

/* A trial record is written in streams (and interleaved at its end to
 * compare); the others straight in the layout of the last trial. */
static void record_begin(struct mvz_chunk_writer *w)
{
    col.first = col.written;
    col.late = 0;
    col.trial = ratio_fell(w) || layout.countdown == 0 || events_changed();
    layout.countdown = col.trial ? TRIAL_EVERY - 1 : layout.countdown - 1;
    mvz_heap_out_start(&col.out, col.trial || layout.kind == MVZ_REC_HEAP_STREAMS);
    mvz_heap_state_reset(&col.st);
}

static uint64_t next_serial(void *ctx, uint32_t tid)
{
    (void)ctx;
    uint64_t *serial = mvz_collect_serial(tid);
    return serial ? *serial : 0;
}

/* Writes the held events: a group goes into one record, which then names
 * all its threads (the held events are never more than a record holds,
 * nor of more threads than it can name). */
static void pend_write(struct mvz_chunk_writer *w)
{
    if (!col.npend) {
        col.npend_tids = 0;
        return;
    }
    mvz_group_plan(&col.grouper, col.pend, col.npend);
    if (col.n &&
        (col.n + col.npend > EVENTS_PER_RECORD || !mvz_group_threads_fit(&col.grouper, &col.st)))
        record_finish(w);
    if (!col.n)
        record_begin(w);
    col.late += (unsigned)mvz_group_write(&col.grouper, col.pend, col.pend_ts, &col.out, &col.st,
                                          next_serial, NULL);
    col.n += (unsigned)col.npend;
    col.written += col.npend;
    col.npend = col.npend_tids = 0;
}

/* Room for an event of thread tid at time ts among the held events:
 * those of an earlier unit are written first. */
static struct mvz_group_ev *pend_room(struct mvz_chunk_writer *w, uint32_t tid, uint64_t ts)
{
    if (col.npend && (col.pend_ts >> MVZ_HEAP_TS_SHIFT != ts >> MVZ_HEAP_TS_SHIFT ||
                      col.npend == MVZ_GROUP_EVENTS))
        pend_write(w);
    if (!col.npend)
        col.pend_ts = ts;
    if (!col.npend_tids || col.pend_tids[col.pend_last] != tid) {
        uint32_t i = 0;
        while (i < col.npend_tids && col.pend_tids[i] != tid)
            i++;
        if (i == MVZ_HEAP_MAX_THREADS) {
            pend_write(w);
            i = 0;
        }
        if (i == col.npend_tids)
            col.pend_tids[col.npend_tids++] = tid;
        col.pend_last = i;
    }
    struct mvz_group_ev *e = &col.pend[col.npend];
    e->tid = tid;
    return e;
}

/* Returns -1 when the block cannot be followed (out of memory): it is
 * then counted as lost, and its release will be a FREE_UNKNOWN. */
static int collect_alloc(struct mvz_group_ev *ev, const struct mvz_slot *s, uint32_t tid,
                         uint64_t *serial)
{
    struct mvz_addr_block old, b = {tid, *serial, s->size, s->stack};
    ev->size = s->size;
    ev->stack = s->stack;
    ev->where = s->addr;
    if (mvz_addrmap_take(s->addr, &old)) { /* a live address again: its release was never seen */
        ev->op = MVZ_HEAP_ALLOC_REUSED;
        ev->block = mvz_heap_block(old.tid, old.serial);
        ev->old_size = old.size;
        ev->old_stack = old.stack;
        b.tid = old.tid; /* the new block takes the old one's name */
        b.serial = old.serial;
    } else {
        ev->op = MVZ_HEAP_ALLOC;
        ev->block = mvz_heap_block(tid, *serial);
    }
    if (mvz_addrmap_add(s->addr, &b) < 0)
        return -1;
    if (ev->op == MVZ_HEAP_ALLOC)
        (*serial)++;
    return 0;
}

static void collect_free(struct mvz_group_ev *ev, const struct mvz_slot *s)
{
    struct mvz_addr_block b;
    /* The side tables forget a released address here, on the writer's
     * time and in the events' order (a snapshot drains before it reads
     * them), not on the program's: a block the program asked memviz to
     * ignore, or one the trace never had (the agent's own, freed by the
     * program). */
    mvz_api_released((const void *)s->addr);
    if (!mvz_addrmap_take(s->addr, &b)) {
        mvz_untraced_release((const void *)s->addr);
        ev->op = MVZ_HEAP_FREE_UNKNOWN;
        ev->block = 0;
        ev->size = 0;
        ev->stack = 0;
        return;
    }
    ev->op = MVZ_HEAP_FREE;
    ev->block = mvz_heap_block(b.tid, b.serial);
    ev->size = b.size;
    ev->stack = b.stack;
}

/* The closing summary's numbers (src/trace/runpage.h), counted as
 * docs/METRICS.md defines them over the events in the order the trace
 * has them: a GROUP's written order reaches the same peak, at the same
 * time unit, as this real one. A block whose release was never seen
 * (ALLOC_REUSED) makes them inexact: the reader's rules for it (whose
 * latest allocation the reused name is) are not worth repeating here. */
static void count_event(const struct mvz_group_ev *ev, uint64_t ts, uint64_t next)
{
    struct mvz_run_counts *c = mvz_runpage_counts();
    uint64_t r = col.rate, n = mvz_sample_count(ev->size, r);
    uint64_t bytes = mvz_sample_size(ev->size, r);
    switch (ev->op) {
    case MVZ_HEAP_ALLOC_REUSED:
        col.inexact = 1;
        c->live_bytes -= mvz_sample_size(ev->old_size, r);
        c->live_blocks -= mvz_sample_count(ev->old_size, r);
        /* fall through */
    case MVZ_HEAP_ALLOC:
        c->allocations += n;
        c->allocated_bytes += bytes;
        c->live_bytes += bytes;
        c->live_blocks += n;
        if (c->live_bytes > c->peak_bytes) {
            c->peak_bytes = c->live_bytes;
            c->peak_time_ns = ts >> MVZ_HEAP_TS_SHIFT << MVZ_HEAP_TS_SHIFT;
        }
        break;
    case MVZ_HEAP_FREE:
        c->frees += n;
        c->live_bytes -= bytes;
        c->live_blocks -= n;
        /* the releasing thread's latest allocation */
        if (mvz_heap_block_tid(ev->block) == ev->tid &&
            mvz_heap_block_serial(ev->block) + 1 == next)
            c->temporary += n;
        break;
    }
}

/* Whether the counts match what the trace will say. */
int mvz_collect_exact(void)
{
    return !col.inexact && !__atomic_load_n(&mvz_agent.lost_events, __ATOMIC_RELAXED);
}

/* Makes the open record ready for an event of thread tid, whose next
 * serial is `serial`. */
static void record_room(struct mvz_chunk_writer *w, uint32_t tid, uint64_t serial)
{
    if (col.n >= EVENTS_PER_RECORD)
        record_finish(w);
    if (!col.n)
        record_begin(w);
    if (col.st.nthreads && col.st.tids[col.st.cur] == tid)
        return; /* most events: the thread of the one before (checked here, inline) */
    if (mvz_heap_put_thread(&col.out, &col.st, tid, serial) < 0) {
        record_finish(w);
        record_begin(w);
        mvz_heap_put_thread(&col.out, &col.st, tid, serial);
    }
}

/* Writes an event of thread ev->tid, whose next serial before it was
 * `next`, at once. */
static void write_now(struct mvz_chunk_writer *w, const struct mvz_group_ev *ev, uint64_t ts,
                      uint64_t next)
{
    record_room(w, ev->tid, next);
    uint64_t owner_next = 0;
    if (mvz_group_ev_cross(ev))
        owner_next = next_serial(NULL, mvz_heap_block_tid(ev->block));
    mvz_group_write_one(ev, ts, &col.out, &col.st, owner_next);
    col.late += ev->late;
    col.n++;
    col.written++;
}

/* Maps the address table and the serial counters of the ids near the
 * process's own (where its threads' ids will be) at the start, while
 * memory is surely there: a program that then uses up its address space
 * (RLIMIT_AS) is still traced. Called before the writer thread runs. */
void mvz_collect_prepare(uint32_t tid)
{
    mvz_addrmap_prepare(tid);
    col.out.where_on = mvz_agent.addresses;
    mvz_collect_serial(tid);
    mvz_collect_serial(tid + (1u << TID_PAGE_BITS));
}

/* One event of thread tid, taken from its ring in key order; *serial is
 * the thread's next allocation serial. ts is the event's time in ns since
 * the agent started; ahead the address of an event coming soon, or 0. */
/* memviz_tag_mark: the block marked is named here, where the table of
 * live blocks is in the events' order (a block marked before its
 * allocation was taken, or after its release, is no block: dropped). */
static void collect_tag(struct mvz_chunk_writer *w, const struct mvz_slot *s, uint64_t ts)
{
    struct mvz_addr_block b;
    if (!mvz_addrmap_get(s->addr, &b))
        return;
    struct mvz_buf rec = {0};
    mvz_put_uvarint(&rec, MVZ_USER_TAG);
    mvz_put_uvarint(&rec, ts);
    mvz_put_uvarint(&rec, s->size);
    mvz_put_uvarint(&rec, mvz_heap_block(b.tid, b.serial));
    mvz_put_uvarint(&rec, b.size);
    mvz_cw_record(w, MVZ_REC_USER, &rec);
    mvz_buf_free(&rec);
}

/* ---- sampling switches (sample.c) ---- */
void mvz_collect_set_rate(uint64_t rate)
{
    col.rate = rate;
    col.ever_sampled |= rate != 0;
}

void mvz_collect_switch(uint64_t key, uint64_t rate)
{
    col.switch_key = key;
    col.switch_rate = rate;
    col.switch_pending = 1;
}

int mvz_collect_switch_pending(void)
{
    return col.switch_pending;
}

/* The events before the switch go out first, then the SAMPLING record
 * (rate, time): the reader weighs what follows by it. */
static void write_switch(struct mvz_chunk_writer *w, uint64_t ts)
{
    mvz_collect_flush(w);
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, col.switch_rate);
    mvz_put_uvarint(&b, ts);
    mvz_cw_record(w, MVZ_REC_SAMPLING, &b);
    mvz_buf_free(&b);
    mvz_collect_set_rate(col.switch_rate);
    col.switch_pending = 0;
    col.inexact = 1; /* the summary's counts weigh a block by the rate it goes under */
}

void mvz_collect_switch_due(struct mvz_chunk_writer *w, uint64_t drained_below)
{
    if (col.switch_pending && drained_below > col.switch_key)
        write_switch(w, mvz_rings_key_ns(col.switch_key));
}

/* Whether the event is one the trace leaves out: an allocation recorded
 * in full mode by a thread caught in a switch to sampling (the sampler
 * would have dropped most; its release then names no block), or, once
 * the run was sampled, a release of a block never recorded. */
static int left_out(const struct mvz_slot *s)
{
    return s->op == MVZ_OP_ALLOC && col.rate && !(s->entry & MVZ_ENTRY_SAMPLED);
}

void mvz_collect(struct mvz_chunk_writer *w, uint32_t tid, uint64_t *serial, uint64_t key,
                 const struct mvz_slot *s, uint64_t ts, uint64_t ahead)
{
    /* The table's accesses are random: fetch the place of an event a few
     * ahead while this one is handled. */
    mvz_addrmap_prefetch(ahead);
    if (s->op == MVZ_OP_TAG) {
        collect_tag(w, s, ts);
        return;
    }
    if (s->op != MVZ_OP_ALLOC && s->op != MVZ_OP_FREE)
        return; /* a failed realloc's key: nothing happened to the heap */
    if (MVZ_UNLIKELY(col.switch_pending) && key >= col.switch_key)
        write_switch(w, ts);
    if (MVZ_UNLIKELY(col.rate) && left_out(s))
        return;
    if (tid != col.last_tid) {
        col.switched = col.last_tid != 0;
        col.last_tid = tid;
        if (!col.grouping && col.switched)
            col.grouping = grouping_pays(w);
    }
    if (!col.grouping && col.npend)
        pend_write(w);
    struct mvz_group_ev now = {.tid = tid}, *ev = col.grouping ? pend_room(w, tid, ts) : &now;
    uint64_t next = *serial;
    int late = key < col.max_key;
    if (!late)
        col.max_key = key;
    if (s->op == MVZ_OP_FREE) {
        collect_free(ev, s);
        if (ev->op == MVZ_HEAP_FREE_UNKNOWN && col.ever_sampled)
            return; /* never recorded: not sampled, or before a switch (ev is not kept) */
    } else if (collect_alloc(ev, s, tid, serial) < 0) {
        __atomic_fetch_add(&mvz_agent.lost_events, 1, __ATOMIC_RELAXED);
        return;
    }
    ev->entry = s->entry & ~MVZ_ENTRY_SAMPLED;
    ev->late = (uint8_t)late; /* counted when written: readers check late <= n */
    count_event(ev, ts, next);
    if (col.grouping)
        col.npend++;
    else
        write_now(w, ev, ts, next);
}

uint64_t mvz_collect_count(void)
{
    return col.written + col.npend;
}

/* Bytes in the open record, which goes out when a chunk is made (the held
 * events are not counted: at most a group's). */
size_t mvz_collect_pending(void)
{
    return mvz_heap_out_len(&col.out);
}

/* Closes the open record. It stays open across flushes until a chunk is
 * made: larger records compress better, and none but the open one holds
 * the events of the last flushes. */
void mvz_collect_flush(struct mvz_chunk_writer *w)
{
    pend_write(w);
    record_finish(w);
}

/* In a fork child: its trace starts afresh, with none of the parent's
 * blocks (the child's releases of them are FREE_UNKNOWN). */
void mvz_collect_after_fork_child(void)
{
    mvz_addrmap_clear();
    for (size_t i = 0; i < sizeof(serial_pages) / sizeof(*serial_pages); i++)
        if (serial_pages[i]) /* the child's blocks are named afresh */
            memset(serial_pages[i], 0, sizeof(**serial_pages) << TID_PAGE_BITS);
    col.written = col.max_key = 0;
    col.n = col.late = 0;
    col.npend = col.npend_tids = 0;
    col.grouping = col.switched = 0;
    col.last_tid = 0;
    col.inexact = 0;
    col.switch_pending = 0; /* the child's trace starts at the rate in force */
    col.ever_sampled = 0;
    mvz_collect_set_rate(atomic_load(&mvz_sample_bytes));
    mvz_heap_out_start(&col.out, 1);
    mvz_heap_state_reset(&col.st);
}

/* For MEMVIZ_STATS: the layout trial's compression state, and the open
 * record's buffers. */
size_t mvz_collect_zstd_bytes(void)
{
    return layout.cctx ? ZSTD_sizeof_CCtx(layout.cctx) : 0;
}

size_t mvz_collect_trials(void)
{
    return layout.trials;
}

size_t mvz_collect_buffer_bytes(void)
{
    size_t n = layout.scratch.cap;
    for (int i = 0; i < MVZ_HS_COUNT * MVZ_HS_PARTS; i++)
        n += (&col.out.part[0][0])[i].cap;
    return n;
}
