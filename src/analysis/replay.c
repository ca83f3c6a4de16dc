/*
 * replay.c - decodes trace records (layout in docs/FORMAT.md) and delivers
 * heap events in sequence order. See replay.h.
 */
#include "analysis/replay.h"
#include "analysis/callgraph.h"
#include "analysis/trace_meta.h"
#include "analysis/addrs.h"
#include "analysis/readahead.h"
#include "analysis/symbols.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/buf.h"
#include "trace/event_codec.h"
#include "trace/format.h"
#include "trace/heap_codec.h"
#include "util/sort.h"

/* Past this many events waiting for a watermark, the oldest are delivered
 * anyway (and counted), so memory stays bounded even if a trace lacks
 * watermarks. */
#define MAX_PENDING (8u << 20)

/* A run: the events of one EVENTS record, sorted by key. A thread's
 * events are already in key order in its record (only an allocation by a
 * signal handler in the middle of a hook can break that), so the replay is a
 * k-way merge of runs, and most events leave without any heap operation. */
struct run {
    struct mvz_event *v;
    size_t n, pos;
    uint64_t arrival; /* breaks ties between runs: the earlier record first */
};

static uint64_t run_head(const struct run *r)
{
    return r->v[r->pos].seq;
}

/* Run a goes before run b: smaller next key, or the same key and arrived
 * first (keyless records of successive flushes can share a key). */
static int run_before(const struct run *a, const struct run *b)
{
    uint64_t ka = run_head(a), kb = run_head(b);
    return ka < kb || (ka == kb && a->arrival < b->arrival);
}

/* Min-heap of runs keyed by their next event's key. */
struct runs {
    struct run **h;
    size_t n, cap;
    size_t events; /* pending events in all runs */
    uint64_t arrivals;
};

static void runs_sift_down(struct runs *q, size_t i)
{
    struct run *x = q->h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && run_before(q->h[c + 1], q->h[c]))
            c++;
        if (!run_before(q->h[c], x))
            break;
        q->h[i] = q->h[c];
        i = c;
    }
    q->h[i] = x;
}

static int runs_push(struct runs *q, struct run *r)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        struct run **h = realloc(q->h, cap * sizeof(*h));
        if (!h)
            return -1;
        q->h = h;
        q->cap = cap;
    }
    size_t i = q->n++;
    r->arrival = q->arrivals++;
    while (i > 0 && run_before(r, q->h[(i - 1) / 2])) {
        q->h[i] = q->h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->h[i] = r;
    q->events += r->n;
    return 0;
}

static void run_free(struct run *r)
{
    free(r->v);
    free(r);
}

static int by_key(const void *a, const void *b)
{
    const struct mvz_event *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Per thread: the ring index expected next, to detect lost events. */
struct thread_index {
    uint32_t tid;
    uint64_t next;
    struct mvz_addr_refs *refs; /* for ADDR_REFS records */
    uint64_t refs_chunk;        /* the chunk refs belongs to */
};

struct replay {
    struct mvz_trace *t;
    const struct mvz_replay_ops *ops;
    void *ctx;
    struct runs pending;
    uint64_t delivered_key; /* key of the last event delivered */
    uint64_t last_mark;     /* the latest WATERMARK: the key of keyless events */
    struct thread_index *idx;
    size_t nidx;
    uint64_t heap_next; /* HEAP records: events expected before the next record */
    int major;          /* the trace's format version */
    /* the latest ADDRS record (5.8), until the HEAP record it is for */
    struct mvz_addrs addrs; /* the latest ADDRS record (5.8), until its HEAP record */
};

static void deliver(struct replay *r, const struct mvz_event *e)
{
    if (e->ts > r->t->last_ts)
        r->t->last_ts = e->ts;
    if (r->ops->event)
        r->ops->event(r->ctx, e);
}

#define PREFETCH_AHEAD 8

/* The events themselves, further ahead: the read-ahead thread wrote them
 * on the other CPU, and the first load of each event missed (on the list
 * bench's report, a third of the replay's samples; prefetched, that
 * report takes 0.195 s instead of 0.236 s). */
#define EVENT_LINE_AHEAD 32

static inline void prefetch_line(const struct mvz_event *e, size_t ahead, size_t left)
{
    if (ahead < left)
        __builtin_prefetch(e + ahead);
}

static void deliver_next(struct replay *r, struct run *top, uint64_t limit)
{
    if (r->ops->prefetch && top->pos + PREFETCH_AHEAD < top->n)
        r->ops->prefetch(r->ctx, &top->v[top->pos + PREFETCH_AHEAD]);
    prefetch_line(&top->v[top->pos], EVENT_LINE_AHEAD, top->n - top->pos);
    struct mvz_event *e = &top->v[top->pos++];
    r->pending.events--;
    if (e->seq >= limit)
        r->t->unordered_events++; /* forced out before its watermark */
    if (e->seq < r->delivered_key)
        r->t->unordered_events++; /* arrived after its watermark */
    else
        r->delivered_key = e->seq;
    deliver(r, e);
}

/* Delivers, in key order, every pending event with a key below limit (all
 * of them when `all`); past MAX_PENDING waiting events, the oldest go
 * regardless. */
static void release(struct replay *r, uint64_t limit, int all)
{
    struct runs *q = &r->pending;
    while (q->n) {
        struct run *top = q->h[0];
        if (all) {
            deliver_next(r, top, UINT64_MAX);
        } else if (q->events > MAX_PENDING) {
            deliver_next(r, top, limit);
        } else {
            if (run_head(top) >= limit)
                return;
            /* Deliver from this run while it stays the earliest. */
            uint64_t stop = limit;
            if (q->n > 1 && run_head(q->h[1]) < stop)
                stop = run_head(q->h[1]);
            if (q->n > 2 && run_head(q->h[2]) < stop)
                stop = run_head(q->h[2]);
            do
                deliver_next(r, top, limit);
            while (top->pos < top->n && run_head(top) < stop);
        }
        if (top->pos == top->n) {
            run_free(top);
            q->h[0] = q->h[--q->n];
        }
        if (q->n)
            runs_sift_down(q, 0);
    }
}

/* Counts events missing between this batch and the thread's previous one. */
static struct thread_index *check_index(struct replay *r, uint32_t tid, uint64_t first, uint64_t n)
{
    struct thread_index *ti = NULL;
    for (size_t i = 0; i < r->nidx; i++)
        if (r->idx[i].tid == tid)
            ti = &r->idx[i];
    if (!ti) {
        struct thread_index *v = realloc(r->idx, (r->nidx + 1) * sizeof(*v));
        if (!v)
            return NULL;
        r->idx = v;
        ti = &v[r->nidx++];
        memset(ti, 0, sizeof(*ti));
        ti->tid = tid;
        ti->next = first;
    }
    if (first > ti->next && first - ti->next < (1ull << 40))
        r->t->missing_seqs += first - ti->next;
    else if (first > ti->next)
        r->t->bad_records++; /* an impossible jump: damage, not lost events */
    /* smaller: the thread got a new buffer (it outlived its first one) */
    ti->next = first + n;
    return ti;
}

/* The thread's address tables for a record of chunk `chunk`: empty at the
 * thread's first record in each chunk, as the writer's. NULL: out of memory. */
static struct mvz_addr_refs *refs_for(struct thread_index *ti, uint64_t chunk)
{
    if (!ti)
        return NULL;
    if (!ti->refs && !(ti->refs = calloc(1, sizeof(*ti->refs))))
        return NULL;
    if (ti->refs_chunk != chunk) {
        ti->refs->nalloc = ti->refs->nfree = 0;
        ti->refs_chunk = chunk;
    }
    return ti->refs;
}

static void decode_events(struct replay *r, struct mvz_cursor *c, uint64_t chunk)
{
    struct mvz_codec_event ce;
    uint32_t tid = (uint32_t)mvz_get_uvarint(c);
    uint64_t first = mvz_get_uvarint(c);
    uint64_t n = mvz_get_uvarint(c);
    unsigned flags = (unsigned)mvz_get_uvarint(c);
    /* Keyless events come after everything released so far and in file
     * order: they all take the latest watermark as their key. */
    struct mvz_codec_state st = {flags & MVZ_EVENTS_NO_KEYS ? r->last_mark : 0, 0, 0, flags, NULL};
    /* Every event takes at least two bytes: a larger count is damage. */
    if (c->bad || n == 0 || n > mvz_cursor_left(c) / 2 + 1 || n > MVZ_EVENTS_MAX_PER_RECORD) {
        r->t->bad_records++;
        return;
    }
    struct thread_index *ti = check_index(r, tid, first, n);
    if (flags & MVZ_EVENTS_ADDR_REFS && !(st.refs = refs_for(ti, chunk))) {
        r->t->bad_records++; /* out of memory: its references cannot be resolved */
        return;
    }
    /* n is at most MVZ_EVENTS_MAX_PER_RECORD (3 MiB of events); NOPs are
     * not kept, so the array may end up partly used. */
    struct run *run = calloc(1, sizeof(*run));
    if (run)
        run->v = malloc((size_t)n * sizeof(*run->v));
    if (!run || !run->v) {
        free(run);
        return;
    }
    int sorted = 1;
    for (uint64_t i = 0; i < n && !c->bad; i++) {
        if (mvz_event_decode(c, &st, &ce) < 0 || ce.stack > mvz_trace_max_stack_id(r->t)) {
            r->t->bad_events++;
            break;
        }
        if (ce.op == MVZ_OP_NOP) { /* no effect on the heap: only its time counts */
            if (ce.ts > r->t->last_ts)
                r->t->last_ts = ce.ts;
            continue;
        }
        struct mvz_event e = {ce.seq, ce.ts, ce.addr, ce.size, ce.stack, tid, ce.op, ce.entry, 0};
        if (run->n && e.seq < run->v[run->n - 1].seq)
            sorted = 0;
        run->v[run->n++] = e;
    }
    if (!sorted)
        mvz_sort(run->v, run->n, sizeof(*run->v), by_key);
    if (!run->n || runs_push(&r->pending, run) < 0) {
        run_free(run);
        return;
    }
    release(r, 0, 0);
}

static uint32_t latest_generation(const struct mvz_trace *t)
{
    uint32_t gen = 0;
    for (size_t i = 0; i < t->nmodules; i++)
        if (t->modules[i].gen_loaded > gen)
            gen = t->modules[i].gen_loaded;
    return gen;
}

/* A HEAP record, decoded by the read-ahead thread: its events are in order
 * and go out as they are. Their stack ids are checked here, against the
 * stacks defined so far. */
static void deliver_heap(struct replay *r, const struct mvz_batch *b,
                         const struct mvz_batch_record *it)
{
    if (it->bad_header) {
        r->t->bad_records++;
        return;
    }
    release(r, UINT64_MAX, 1); /* a mixed trace: the older records' events first */
    if (it->first > r->heap_next && it->first - r->heap_next < (1ull << 40))
        r->t->missing_seqs += it->first - r->heap_next;
    else if (it->first > r->heap_next)
        r->t->bad_records++;
    r->heap_next = it->first + it->claimed;
    r->t->unordered_events += it->late;
    uint64_t max_stack = mvz_trace_max_stack_id(r->t);
    const struct mvz_event *ev = b->ev + it->ev;
    struct mvz_addrs_cursor w;
    mvz_addrs_begin(&r->addrs, it->first, &w);
    for (size_t i = 0; i < it->n; i++) {
        if (ev[i].stack > max_stack) {
            r->t->bad_events++;
            return;
        }
        if (ev[i].op == MVZ_OP_ALLOC && w.on) {
            uint64_t where;
            if (mvz_addrs_next(&w, &where) == 0)
                r->ops->where(r->ctx, ev[i].addr, where);
            else
                r->t->bad_records++;
        }
        if (r->ops->prefetch && i + PREFETCH_AHEAD < it->n)
            r->ops->prefetch(r->ctx, &ev[i + PREFETCH_AHEAD]);
        prefetch_line(&ev[i], EVENT_LINE_AHEAD, it->n - i);
        deliver(r, &ev[i]);
    }
    if (it->bad_event)
        r->t->bad_events++;
}

static void decode_record(struct replay *r, const struct mvz_record *rec)
{
    struct mvz_trace *t = r->t;
    struct mvz_cursor c = mvz_cursor_make(rec->data, rec->len);
    switch (rec->kind) {
    case MVZ_REC_PROCESS:
        mvz_meta_process(t, &c);
        break;
    case MVZ_REC_MODULE_LOAD:
        mvz_meta_module_load(t, &c);
        break;
    case MVZ_REC_MODULE_UNLOAD:
        mvz_meta_module_unload(t, &c);
        break;
    case MVZ_REC_STACK:
        mvz_meta_stack(t, &c, r->major);
        break;
    case MVZ_REC_THREAD:
        mvz_meta_thread(t, &c);
        break;
    case MVZ_REC_EVENTS:
        decode_events(r, &c, rec->chunk);
        break;
    case MVZ_REC_RSS: {
        uint64_t ts = mvz_get_uvarint(&c), rss = mvz_get_uvarint(&c);
        uint64_t agent = mvz_cursor_left(&c) ? mvz_get_uvarint(&c) : 0; /* format 5.2 */
        if (c.bad)
            break;
        t->rss_samples++;
        if (ts > t->last_ts)
            t->last_ts = ts;
        if (rss > t->peak_rss_sampled) {
            t->peak_rss_sampled = rss;
            t->agent_at_peak_rss = agent;
        }
        if (rss > t->peak_rss)
            t->peak_rss = rss;
        if (r->ops->rss)
            r->ops->rss(r->ctx, ts, rss);
        break;
    }
    case MVZ_REC_CHILD:
        mvz_meta_child(t, &c);
        break;
    case MVZ_REC_EXEC:
        t->have_exec = 1;
        t->end_ts = mvz_get_uvarint(&c);
        free(t->exec_path);
        t->exec_path = mvz_get_str(&c);
        break;
    case MVZ_REC_EXIT:
        mvz_meta_exit(t, &c);
        break;
    case MVZ_REC_NOTICE:
        mvz_meta_notice(t, &c);
        break;
    case MVZ_REC_CALLGRAPH:
        if (mvz_cg_raw_add(&t->callgraph, &c) < 0)
            t->bad_records++;
        break;
    case MVZ_REC_USER: {
        struct mvz_cursor peek = c;
        if (mvz_get_uvarint(&peek) == MVZ_USER_TAG) {
            uint64_t ts = mvz_get_uvarint(&peek), tag = mvz_get_uvarint(&peek);
            uint64_t name = mvz_get_uvarint(&peek), size = mvz_get_uvarint(&peek);
            if (!peek.bad) {
                mvz_user_add_mark(&t->user, name, (uint32_t)tag);
                if (r->ops->tag)
                    r->ops->tag(r->ctx, (uint32_t)tag, name, size, ts);
            }
            break;
        }
        mvz_user_decode(&t->user, &c);
        break;
    }
    case MVZ_REC_SAMPLING: { /* rate, then (5.7) the time it took effect */
        uint64_t rate = mvz_get_uvarint(&c);
        uint64_t ts = mvz_cursor_left(&c) ? mvz_get_uvarint(&c) : 0;
        if (c.bad)
            break;
        if (rate)
            t->sample_bytes = rate;
        mvz_sampling_switch(&t->sampling, ts, rate);
        break;
    }
    case MVZ_REC_ADDRS:
        t->addrs_records++;
        if (r->ops->where)
            mvz_addrs_keep(&r->addrs, &c);
        break;
    case MVZ_REC_WATERMARK: {
        uint64_t mark = mvz_get_uvarint(&c);
        if (!c.bad) {
            release(r, mark, 0);
            if (mark > r->last_mark)
                r->last_mark = mark;
        }
        break;
    }
    case MVZ_REC_SNAPSHOT: {
        uint64_t id = mvz_get_uvarint(&c), trigger = mvz_get_uvarint(&c);
        uint64_t ts = mvz_get_uvarint(&c);
        char *name = mvz_get_str(&c);
        if (c.bad) {
            free(name);
            break;
        }
        mvz_user_add_snapshot(&t->user, ts, name);
        free(name);
        t->snapshots++;
        if (trigger == MVZ_SNAP_EXIT)
            t->pending_exit_snapshot = (uint32_t)id;
        break;
    }
    case MVZ_REC_SNAPSHOT_END: {
        uint64_t id = mvz_get_uvarint(&c);
        if (!c.bad && id && id == t->pending_exit_snapshot)
            t->exit_snapshot = (uint32_t)id;
        break;
    }
    case MVZ_REC_END: {
        uint64_t ts = mvz_get_uvarint(&c), rss = mvz_get_uvarint(&c), lost = mvz_get_uvarint(&c);
        uint64_t agent = mvz_cursor_left(&c) ? mvz_get_uvarint(&c) : 0; /* format 5.2 */
        if (c.bad)
            break;
        t->agent_mapped_max = agent;
        t->have_end = 1;
        t->end_ts = ts;
        if (rss > t->peak_rss)
            t->peak_rss = rss;
        t->lost_events += lost;
        break;
    }
    default: /* reserved or newer kinds: skipped, unless the caller reads them */
        if (r->ops->other)
            r->ops->other(r->ctx, rec);
        break;
    }
    if (c.bad)
        t->bad_records++;
}

int mvz_replay(const char *path, struct mvz_trace *t, const struct mvz_replay_ops *ops, void *ctx,
               char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    t->path = path;
    struct mvz_reader rd;
    if (mvz_reader_open(&rd, path, err, errlen) < 0)
        return -1;
    struct replay r = {.t = t, .ops = ops, .ctx = ctx, .major = rd.major};
    if (ops->wait_more) {
        rd.follow = 1;
        rd.wait_more = ops->wait_more;
        rd.wait_arg = ctx;
    }
    struct mvz_readahead *ra = mvz_readahead_start(&rd);
    if (!ra) {
        snprintf(err, errlen, "%s: out of memory", path);
        mvz_reader_close(&rd);
        return -1;
    }
    struct mvz_batch *b;
    while ((b = mvz_readahead_next(ra))) {
        for (size_t i = 0; i < b->nrecs; i++) {
            uint8_t kind = b->recs[i].rec.kind;
            /* The first events come after the modules mapped at the start:
             * their symbols can be prepared while the events are replayed. */
            if (ops->warm_symbols && !t->warm && t->nmodules &&
                (kind == MVZ_REC_HEAP || kind == MVZ_REC_HEAP_STREAMS || kind == MVZ_REC_EVENTS))
                t->warm = mvz_symbols_warm_start(t, latest_generation(t));
            if (kind == MVZ_REC_HEAP || kind == MVZ_REC_HEAP_STREAMS)
                deliver_heap(&r, b, &b->recs[i]);
            else
                decode_record(&r, &b->recs[i].rec);
        }
        mvz_readahead_done(ra, b);
    }
    mvz_readahead_stop(ra);
    mvz_symbols_warm_finish(t->warm);
    release(&r, UINT64_MAX, 1);
    free(r.pending.h);
    mvz_addrs_free(&r.addrs);
    for (size_t i = 0; i < r.nidx; i++)
        free(r.idx[i].refs);
    free(r.idx);
    t->bad_chunks = rd.bad_chunks;
    t->bad_records += rd.bad_records;
    t->skipped_bytes = rd.skipped_bytes;
    t->truncated = rd.truncated;
    mvz_reader_close(&rd);
    if (!t->have_process) {
        snprintf(err, errlen, "%s: no readable process record; not a usable memviz trace", path);
        mvz_trace_free(t);
        return -1;
    }
    return 0;
}

/* The tail: where END, EXIT and EXEC are (at most a few MiB read). */
#define TAIL_BYTES (4u << 20)

int mvz_trace_end_ns(const char *path, uint64_t *end)
{
    struct mvz_reader rd;
    char err[256];
    if (mvz_reader_open(&rd, path, err, sizeof(err)) < 0)
        return 0;
    struct mvz_trace t;
    memset(&t, 0, sizeof(t));
    static const struct mvz_replay_ops none;
    struct replay r = {.t = &t, .ops = &none, .major = rd.major};
    struct mvz_record rec;
    if (mvz_reader_tail(&rd, TAIL_BYTES) == 0)
        while (mvz_reader_next(&rd, &rec))
            if (rec.kind == MVZ_REC_END || rec.kind == MVZ_REC_EXIT || rec.kind == MVZ_REC_EXEC ||
                rec.kind == MVZ_REC_RSS)
                decode_record(&r, &rec);
    int found = (t.have_end || t.have_exec) && !rd.bad_chunks && !rd.truncated;
    *end = t.end_ts > t.last_ts ? t.end_ts : t.last_ts;
    if (t.exit_ts > *end)
        *end = t.exit_ts;
    mvz_trace_free(&t);
    mvz_reader_close(&rd);
    return found;
}
