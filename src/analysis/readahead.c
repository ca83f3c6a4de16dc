/*
 * readahead.c - see readahead.h.
 *
 * A bounded queue of batches between the reading thread (producer) and the
 * replay (consumer), and a pool of spent batches so that event arrays and
 * payload copies are reused rather than allocated per batch. Invariant: a
 * batch is in exactly one of: the pool, the queue, the producer's hands,
 * the consumer's hands.
 */
#include "analysis/readahead.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "trace/buf.h"
#include "trace/format.h"
#include "trace/heap_codec.h"

/* A batch closes at this many events, records or payload bytes; at most
 * QUEUE_MAX batches wait. Batches (not records) cross between the
 * threads, since a synchronisation per record cost more than it saved on
 * traces of many small records; the bounds keep the analyzer's memory
 * from growing with the trace. A batch holds at least one whole record,
 * up to 65,536 events since format 4: two waiting batches keep the
 * replay fed as well as four did, with 7 MiB less memory on CPython's and
 * mt's reports. */
#define BATCH_EVENTS 32768u
#define BATCH_RECORDS 4096u
#define BATCH_BYTES (1u << 20)
#define QUEUE_MAX 2

struct mvz_readahead {
    struct mvz_reader *rd;
    pthread_t thread;
    int threaded;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct mvz_batch *head, *tail; /* the queue */
    size_t queued;
    struct mvz_batch *pool;
    int ended;    /* the producer has queued everything */
    int stopping; /* the consumer wants the producer gone */
    /* producer only */
    struct mvz_record pending; /* read, not yet in a batch */
    int have_pending, eof;
    struct mvz_heap_state heap;
};

static void batch_free(struct mvz_batch *b)
{
    free(b->recs);
    free(b->ev);
    free(b->copy);
    free(b);
}

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*v, n * size);
    if (!p)
        return -1;
    *v = p;
    *cap = n;
    return 0;
}

/* The GROUP the decoding is in (heap_codec.h): how many of its events are
 * still to come, and which of them is the one after which the heap state is
 * real (mark, counted down the same way; 0: none). */
struct group {
    uint64_t left, mark;
    uint64_t n;           /* its events */
    size_t rises, nrises; /* its MVZ_OP_SITE_RISE events in the batch */
};

/* Reads a GROUP's sites into the batch as MVZ_OP_SITE_RISE events, which
 * go before the group's events. */
static int group_open(struct group *g, struct mvz_heap_in *in, struct mvz_batch *b,
                      struct mvz_batch_record *br, const struct mvz_heap_event *he, uint64_t seq,
                      uint64_t heap_left)
{
    /* the sites, and still room for the record's heap events to come */
    if (grow((void **)&b->ev, &b->ev_cap, b->nev + he->stack + heap_left, sizeof(*b->ev)) < 0)
        return -1;
    g->rises = b->nev;
    g->nrises = 0;
    for (uint32_t k = 0; k < he->stack; k++) {
        uint32_t stack;
        uint64_t rise;
        if (mvz_heap_decode_group_site(in, &stack, &rise) < 0)
            return -1;
        b->ev[b->nev++] =
            (struct mvz_event){seq, he->ts, he->size, rise, stack, he->tid, MVZ_OP_SITE_RISE, 0, 0};
        br->n++;
        g->nrises++;
    }
    g->n = g->left = he->size;
    g->mark = he->block;
    return 0;
}

/* A group cut short by damage: its sites are hidden only for the events
 * that were read, so that nothing is hidden in the next record. */
static void group_cut(struct group *g, struct mvz_batch *b)
{
    for (size_t k = 0; g->left && k < g->nrises; k++)
        b->ev[g->rises + k].addr = g->n - g->left;
}

/* The flags of the next event, which takes its place in the group. */
static uint8_t group_flags(struct group *g)
{
    if (!g->left)
        return 0;
    uint8_t flags = g->mark == 1 ? MVZ_EV_MARK : MVZ_EV_TRANSIENT;
    g->left--;
    if (g->mark)
        g->mark--;
    return flags;
}

/* Decodes a HEAP record's events into the batch. The header's checks are
 * the decoder's; stack ids are checked by the replay, which knows the
 * stacks defined so far. */
static void decode_heap(struct mvz_readahead *ra, struct mvz_batch *b, struct mvz_batch_record *br)
{
    struct mvz_cursor c = mvz_cursor_make(br->rec.data, br->rec.len);
    uint64_t first = mvz_get_uvarint(&c), n = mvz_get_uvarint(&c), late = mvz_get_uvarint(&c);
    /* Every event takes at least two bytes: a larger count is damage. */
    if (c.bad || n == 0 || n > mvz_cursor_left(&c) / 2 + 1 || n > MVZ_EVENTS_MAX_PER_RECORD ||
        late > n) {
        br->bad_header = 1;
        return;
    }
    br->first = first;
    br->claimed = n;
    br->late = late;
    br->ev = b->nev;
    if (grow((void **)&b->ev, &b->ev_cap, b->nev + n, sizeof(*b->ev)) < 0) {
        br->bad_event = 1; /* out of memory: as if damaged */
        return;
    }
    /* n heap events; GROUP sites add MVZ_OP_SITE_RISE events before theirs */
    struct mvz_heap_in in;
    if (mvz_heap_in_open(&in, &c, ra->rd->major, br->rec.kind == MVZ_REC_HEAP_STREAMS) < 0) {
        br->bad_event = 1;
        return;
    }
    mvz_heap_state_reset(&ra->heap);
    struct group group = {0};
    for (uint64_t heap = 0; heap < n;) {
        struct mvz_heap_event he;
        if (mvz_heap_decode(&in, &ra->heap, &he) < 0 ||
            (he.op == MVZ_HEAP_GROUP && (group.left || he.size > n - heap))) {
            br->bad_event = 1;
            break;
        }
        if (he.op == MVZ_HEAP_GROUP) {
            if (group_open(&group, &in, b, br, &he, first + heap, n - heap) < 0) {
                br->bad_event = 1;
                break;
            }
            continue;
        }
        struct mvz_event *e = &b->ev[b->nev]; /* room for n heap events was made */
        int alloc = he.op == MVZ_HEAP_ALLOC || he.op == MVZ_HEAP_ALLOC_REUSED;
        uint8_t flags = (uint8_t)(group_flags(&group) | (he.block ? MVZ_EV_NAMED : 0));
        *e = (struct mvz_event){
            first + heap, he.ts,  he.block ? he.block : MVZ_NAME_NO_BLOCK, he.size,
            he.stack,     he.tid, alloc ? MVZ_OP_ALLOC : MVZ_OP_FREE,      he.entry,
            flags};
        b->nev++;
        br->n++;
        heap++;
    }
    group_cut(&group, b);
}

/* Adds rec (a copy of it) to the batch; -1 when out of memory. */
static int add(struct mvz_readahead *ra, struct mvz_batch *b, const struct mvz_record *rec)
{
    if (grow((void **)&b->recs, &b->recs_cap, b->nrecs + 1, sizeof(*b->recs)) < 0 ||
        grow((void **)&b->copy, &b->copy_cap, b->ncopy + rec->len + 1, 1) < 0) /* never NULL */
        return -1;
    struct mvz_batch_record *br = &b->recs[b->nrecs++];
    memset(br, 0, sizeof(*br));
    br->rec = *rec;
    if (rec->len)
        memcpy(b->copy + b->ncopy, rec->data, rec->len);
    br->rec.data = b->copy + b->ncopy;
    b->ncopy += rec->len;
    if (rec->kind == MVZ_REC_HEAP || rec->kind == MVZ_REC_HEAP_STREAMS)
        decode_heap(ra, b, br);
    return 0;
}

static int batch_full(const struct mvz_batch *b)
{
    return b->nev >= BATCH_EVENTS || b->nrecs >= BATCH_RECORDS || b->ncopy >= BATCH_BYTES;
}

/* Fills b with the next records; 0 at the end of the trace. A record that
 * cannot be copied (out of memory) is dropped. */
static int fill(struct mvz_readahead *ra, struct mvz_batch *b)
{
    b->nrecs = b->nev = b->ncopy = 0;
    while (!batch_full(b)) {
        if (!ra->have_pending && (ra->eof || !mvz_reader_next(ra->rd, &ra->pending))) {
            /* following a trace still written: what there is goes out
             * now; with nothing, wait for more */
            if (!ra->eof && ra->rd->follow && b->nrecs)
                break;
            if (!ra->eof && ra->rd->follow && ra->rd->wait_more &&
                ra->rd->wait_more(ra->rd->wait_arg))
                continue;
            ra->eof = 1;
            break;
        }
        ra->have_pending = 0;
        uint8_t *before = b->copy;
        if (add(ra, b, &ra->pending) < 0)
            continue;
        if (b->copy != before) /* the copy moved: the records follow it */
            for (size_t i = 0, off = 0; i < b->nrecs; off += b->recs[i++].rec.len)
                b->recs[i].rec.data = b->copy + off;
    }
    return b->nrecs > 0;
}

static struct mvz_batch *batch_get(struct mvz_readahead *ra)
{
    struct mvz_batch *b = ra->pool;
    if (b)
        ra->pool = b->next;
    else
        b = calloc(1, sizeof(*b));
    return b;
}

static void *producer(void *arg)
{
    struct mvz_readahead *ra = arg;
    for (;;) {
        pthread_mutex_lock(&ra->mu);
        while (ra->queued >= QUEUE_MAX && !ra->stopping)
            pthread_cond_wait(&ra->cv, &ra->mu);
        struct mvz_batch *b = ra->stopping ? NULL : batch_get(ra);
        pthread_mutex_unlock(&ra->mu);
        int more = b && fill(ra, b);
        pthread_mutex_lock(&ra->mu);
        if (more) {
            b->next = NULL;
            if (ra->tail)
                ra->tail->next = b;
            else
                ra->head = b;
            ra->tail = b;
            ra->queued++;
        } else {
            if (b) {
                b->next = ra->pool;
                ra->pool = b;
            }
            ra->ended = 1;
        }
        pthread_cond_broadcast(&ra->cv);
        pthread_mutex_unlock(&ra->mu);
        if (!more)
            return NULL;
    }
}

struct mvz_readahead *mvz_readahead_start(struct mvz_reader *rd)
{
    struct mvz_readahead *ra = calloc(1, sizeof(*ra));
    if (!ra)
        return NULL;
    ra->rd = rd;
    pthread_mutex_init(&ra->mu, NULL);
    pthread_cond_init(&ra->cv, NULL);
    ra->threaded = pthread_create(&ra->thread, NULL, producer, ra) == 0;
    return ra;
}

struct mvz_batch *mvz_readahead_next(struct mvz_readahead *ra)
{
    if (!ra->threaded) {
        struct mvz_batch *b = batch_get(ra);
        if (b && fill(ra, b))
            return b;
        if (b)
            batch_free(b);
        return NULL;
    }
    pthread_mutex_lock(&ra->mu);
    while (!ra->head && !ra->ended)
        pthread_cond_wait(&ra->cv, &ra->mu);
    struct mvz_batch *b = ra->head;
    if (b) {
        ra->head = b->next;
        if (!ra->head)
            ra->tail = NULL;
        ra->queued--;
        pthread_cond_broadcast(&ra->cv);
    }
    pthread_mutex_unlock(&ra->mu);
    return b;
}

void mvz_readahead_done(struct mvz_readahead *ra, struct mvz_batch *b)
{
    if (ra->threaded)
        pthread_mutex_lock(&ra->mu);
    b->next = ra->pool;
    ra->pool = b;
    if (ra->threaded)
        pthread_mutex_unlock(&ra->mu);
}

void mvz_readahead_stop(struct mvz_readahead *ra)
{
    if (!ra)
        return;
    if (ra->threaded) {
        pthread_mutex_lock(&ra->mu);
        ra->stopping = 1;
        pthread_cond_broadcast(&ra->cv);
        pthread_mutex_unlock(&ra->mu);
        pthread_join(ra->thread, NULL);
    }
    for (struct mvz_batch *b = ra->head, *next; b; b = next) {
        next = b->next;
        batch_free(b);
    }
    for (struct mvz_batch *b = ra->pool, *next; b; b = next) {
        next = b->next;
        batch_free(b);
    }
    pthread_mutex_destroy(&ra->mu);
    pthread_cond_destroy(&ra->cv);
    free(ra);
}
