/*
 * mvz_recount.c - recounts a memviz trace under heaptrack's definitions.
 *
 * Part of the accuracy check (bench/accuracy/run.sh, docs/ACCURACY.md). It
 * replays a trace with memviz's own replay API (src/analysis/replay.h) and
 * prints one JSON object with
 *   - the totals recomputed independently of `memviz report` (allocations,
 *     frees, peak, leaked), as a cross-check of the report;
 *   - "temporary_memviz": memviz's definition (a release of the block that
 *     was the releasing thread's most recent allocation; releases of other
 *     blocks in between do not matter);
 *   - "temporary_heaptrack_ptr": heaptrack_interpret's definition (printed as
 *     "temporary allocations" in `heaptrack`'s closing "heaptrack stats"): a
 *     release of exactly the most recently allocated pointer, process-wide,
 *     with no other release in between;
 *   - "temporary_heaptrack_info": heaptrack_print's definition: a release of
 *     a block whose (size, call stack) equals the (size, call stack) of the
 *     most recent allocation, process-wide, with no other release in between.
 *     Call stacks are compared on their innermost 62 frames: heaptrack's
 *     Trace holds 64 return addresses, the first 2 of them its own.
 *
 * With --dump, prints instead one line per heap event in order, "+ SIZE" or
 * "- SIZE" (hexadecimal, like heaptrack's data file), for diffing a memviz
 * trace against a heaptrack run event by event.
 *
 * Built by run.sh against the objects of `make all` (build/obj); not part of
 * the memviz build.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/replay.h"
#include "trace/format.h"

#define HT_MAX_DEPTH 62

struct blk {
    uint64_t addr, size;
    uint32_t stack;
};

struct rc {
    struct mvz_trace *t;
    struct blk *tab;
    size_t cap, used;
    uint64_t allocs, frees, unmatched, live, peak;
    uint64_t tmp_mvz, tmp_ptr, tmp_info;
    /* memviz: per-thread sequence number of the last allocation (pass 2) */
    struct {
        uint32_t tid;
        uint64_t seq;
    } th[256];
    size_t nth;
    /* heaptrack: process-wide last allocation */
    uint64_t last_ptr;
    int have_last_info;
    uint64_t last_info_size;
    uint64_t last_info_stack; /* canonical stack key */
    /* stack canonicalisation: stack id -> key (id of first stack with the
     * same innermost HT_MAX_DEPTH frames) */
    uint32_t *canon;
    size_t canon_cap;
};

static size_t slot(uint64_t a, size_t cap)
{
    return (size_t)((a * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static struct blk *find(struct rc *r, uint64_t a)
{
    if (!r->cap)
        return NULL;
    for (size_t j = slot(a, r->cap);; j = (j + 1) & (r->cap - 1)) {
        if (r->tab[j].addr == a)
            return &r->tab[j];
        if (!r->tab[j].addr)
            return NULL;
    }
}

static void grow(struct rc *r)
{
    size_t cap = r->cap ? r->cap * 2 : 1 << 16;
    struct blk *n = calloc(cap, sizeof(*n));
    if (!n) {
        perror("calloc");
        exit(2);
    }
    for (size_t i = 0; i < r->cap; i++) {
        if (!r->tab[i].addr)
            continue;
        size_t j = slot(r->tab[i].addr, cap);
        while (n[j].addr)
            j = (j + 1) & (cap - 1);
        n[j] = r->tab[i];
    }
    free(r->tab);
    r->tab = n;
    r->cap = cap;
}

static void insert(struct rc *r, const struct blk *b)
{
    if ((r->used + 1) * 2 > r->cap)
        grow(r);
    size_t j = slot(b->addr, r->cap);
    while (r->tab[j].addr)
        j = (j + 1) & (r->cap - 1);
    r->tab[j] = *b;
    r->used++;
}

static void erase(struct rc *r, struct blk *b)
{
    size_t cap = r->cap, hole = (size_t)(b - r->tab);
    r->tab[hole].addr = 0;
    r->used--;
    for (size_t j = (hole + 1) & (cap - 1); r->tab[j].addr; j = (j + 1) & (cap - 1)) {
        size_t home = slot(r->tab[j].addr, cap);
        int between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!between) {
            r->tab[hole] = r->tab[j];
            r->tab[j].addr = 0;
            hole = j;
        }
    }
}

/* Stacks that agree on their innermost HT_MAX_DEPTH frames get one key:
 * the id of the first such stack. */
static uint64_t frames_hash(const struct mvz_stack *s, uint32_t n)
{
    uint64_t h = 1469598103934665603ull ^ n;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ s->frames[i]) * 1099511628211ull;
    return h;
}

static uint32_t *ctab; /* open addressing: canonical stack ids by frames */
static size_t ctab_cap, ctab_used;

static uint32_t canon_lookup(struct rc *r, uint32_t id, const struct mvz_stack *s)
{
    uint32_t n = s->depth < HT_MAX_DEPTH ? s->depth : HT_MAX_DEPTH;
    if ((ctab_used + 1) * 2 > ctab_cap) {
        size_t cap = ctab_cap ? ctab_cap * 2 : 4096;
        uint32_t *v = calloc(cap, sizeof(*v));
        if (!v) {
            perror("calloc");
            exit(2);
        }
        for (size_t i = 0; i < ctab_cap; i++) {
            if (!ctab[i])
                continue;
            const struct mvz_stack *o = mvz_trace_stack(r->t, ctab[i]);
            uint32_t m = o->depth < HT_MAX_DEPTH ? o->depth : HT_MAX_DEPTH;
            size_t j = (size_t)frames_hash(o, m) & (cap - 1);
            while (v[j])
                j = (j + 1) & (cap - 1);
            v[j] = ctab[i];
        }
        free(ctab);
        ctab = v;
        ctab_cap = cap;
    }
    for (size_t j = (size_t)frames_hash(s, n) & (ctab_cap - 1);; j = (j + 1) & (ctab_cap - 1)) {
        if (!ctab[j]) {
            ctab[j] = id;
            ctab_used++;
            return id;
        }
        const struct mvz_stack *o = mvz_trace_stack(r->t, ctab[j]);
        uint32_t m = o->depth < HT_MAX_DEPTH ? o->depth : HT_MAX_DEPTH;
        if (m == n && memcmp(o->frames, s->frames, n * sizeof(uint64_t)) == 0)
            return ctab[j];
    }
}

static uint32_t canon_stack(struct rc *r, uint32_t id)
{
    if (id < r->canon_cap && r->canon[id])
        return r->canon[id];
    if (id >= r->canon_cap) {
        size_t cap = r->canon_cap ? r->canon_cap : 1024;
        while (cap <= id)
            cap *= 2;
        uint32_t *v = realloc(r->canon, cap * sizeof(*v));
        if (!v) {
            perror("realloc");
            exit(2);
        }
        memset(v + r->canon_cap, 0, (cap - r->canon_cap) * sizeof(*v));
        r->canon = v;
        r->canon_cap = cap;
    }
    const struct mvz_stack *s = mvz_trace_stack(r->t, id);
    /* ids 0 and 1 (no stack, nested) have no frames: each is its own key */
    uint32_t key = s && id >= MVZ_STACK_FIRST ? canon_lookup(r, id, s) : id + 0x80000000u;
    r->canon[id] = key;
    return key;
}

static uint64_t *thread_last(struct rc *r, uint32_t tid)
{
    for (size_t i = 0; i < r->nth; i++)
        if (r->th[i].tid == tid)
            return &r->th[i].seq;
    if (r->nth == sizeof(r->th) / sizeof(r->th[0])) {
        fprintf(stderr, "mvz_recount: more than 256 threads\n");
        exit(2);
    }
    r->th[r->nth].tid = tid;
    r->th[r->nth].seq = 0;
    return &r->th[r->nth++].seq;
}

static FILE *dump;

static void on_event(void *ctx, const struct mvz_event *e)
{
    struct rc *r = ctx;
    if (dump) {
        if (e->op == MVZ_OP_ALLOC)
            fprintf(dump, "+ %" PRIx64 "\n", e->size);
        else if (e->op == MVZ_OP_FREE) {
            struct blk *b = find(r, e->addr);
            if (b)
                fprintf(dump, "- %" PRIx64 "\n", b->size);
        }
    }
    if (e->op == MVZ_OP_ALLOC) {
        struct blk *old = find(r, e->addr);
        if (old) { /* missed release: drop the old block */
            r->live -= old->size;
            erase(r, old);
        }
        struct blk b = {e->addr, e->size, e->stack};
        insert(r, &b);
        r->allocs++;
        r->live += e->size;
        if (r->live > r->peak)
            r->peak = r->live;
        r->last_ptr = e->addr;
        r->have_last_info = 1;
        r->last_info_size = e->size;
        r->last_info_stack = canon_stack(r, e->stack);
    } else if (e->op == MVZ_OP_FREE) {
        struct blk *b = find(r, e->addr);
        int ptr_tmp = r->last_ptr == e->addr && e->addr;
        r->last_ptr = 0;
        if (!b) {
            r->unmatched++;
            r->have_last_info = 0;
            return;
        }
        r->frees++;
        if (ptr_tmp)
            r->tmp_ptr++;
        if (r->have_last_info && r->last_info_size == b->size &&
            r->last_info_stack == canon_stack(r, b->stack))
            r->tmp_info++;
        r->have_last_info = 0;
        r->live -= b->size;
        erase(r, b);
    }
}

/* memviz's definition needs the allocating sequence number and thread of the
 * block being released; a second, independent pass keeps that state. */
struct rc2 {
    struct {
        uint64_t addr, seq;
        uint32_t tid;
    } * tab;
    size_t cap, used;
    struct rc *r;
};

static void *find2(struct rc2 *q, uint64_t a, int *found)
{
    for (size_t j = slot(a, q->cap);; j = (j + 1) & (q->cap - 1)) {
        if (q->tab[j].addr == a) {
            *found = 1;
            return &q->tab[j];
        }
        if (!q->tab[j].addr) {
            *found = 0;
            return &q->tab[j];
        }
    }
}

static void erase2(struct rc2 *q, size_t hole)
{
    size_t cap = q->cap;
    q->tab[hole].addr = 0;
    q->used--;
    for (size_t j = (hole + 1) & (cap - 1); q->tab[j].addr; j = (j + 1) & (cap - 1)) {
        size_t home = slot(q->tab[j].addr, cap);
        int between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!between) {
            q->tab[hole] = q->tab[j];
            q->tab[j].addr = 0;
            hole = j;
        }
    }
}

static void grow2(struct rc2 *q)
{
    size_t cap = q->cap ? q->cap * 2 : 1 << 16;
    __typeof__(q->tab) n = calloc(cap, sizeof(*n));
    if (!n) {
        perror("calloc");
        exit(2);
    }
    for (size_t i = 0; i < q->cap; i++) {
        if (!q->tab[i].addr)
            continue;
        size_t j = slot(q->tab[i].addr, cap);
        while (n[j].addr)
            j = (j + 1) & (cap - 1);
        n[j] = q->tab[i];
    }
    free(q->tab);
    q->tab = n;
    q->cap = cap;
}

static void on_event2(void *ctx, const struct mvz_event *e)
{
    struct rc2 *q = ctx;
    struct rc *r = q->r;
    int found;
    if (e->op == MVZ_OP_ALLOC) {
        if ((q->used + 1) * 2 > q->cap)
            grow2(q);
        __typeof__(q->tab) s = find2(q, e->addr, &found);
        if (!found)
            q->used++;
        s->addr = e->addr;
        s->seq = e->seq;
        s->tid = e->tid;
        *thread_last(r, e->tid) = e->seq;
    } else if (e->op == MVZ_OP_FREE && q->cap) {
        __typeof__(q->tab) s = find2(q, e->addr, &found);
        if (!found)
            return;
        if (s->tid == e->tid && *thread_last(r, e->tid) == s->seq)
            r->tmp_mvz++;
        erase2(q, (size_t)(s - q->tab));
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--dump") == 0) {
        dump = stdout;
        argv++;
        argc--;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: mvz_recount [--dump] TRACE.mvz\n");
        return 2;
    }
    char err[512];
    struct mvz_trace t;
    struct rc r;
    memset(&r, 0, sizeof(r));
    r.t = &t;
    struct mvz_replay_ops ops = {.event = on_event};
    if (mvz_replay(argv[1], &t, &ops, &r, err, sizeof(err)) < 0) {
        fprintf(stderr, "mvz_recount: %s\n", err);
        return 1;
    }
    mvz_trace_free(&t);
    if (dump) {
        free(r.tab);
        free(r.canon);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    /* second pass: memviz's own temporary definition */
    struct rc2 q;
    memset(&q, 0, sizeof(q));
    q.r = &r;
    struct mvz_replay_ops ops2 = {.event = on_event2};
    if (mvz_replay(argv[1], &t, &ops2, &q, err, sizeof(err)) < 0) {
        fprintf(stderr, "mvz_recount: %s\n", err);
        return 1;
    }
    printf("{\"allocations\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"unmatched_frees\": %" PRIu64
           ", \"peak_bytes\": %" PRIu64 ", \"leaked_bytes\": %" PRIu64 ", \"leaked_blocks\": %zu"
           ", \"temporary_memviz\": %" PRIu64 ", \"temporary_heaptrack_ptr\": %" PRIu64
           ", \"temporary_heaptrack_info\": %" PRIu64 "}\n",
           r.allocs, r.frees, r.unmatched, r.peak, r.live, r.used, r.tmp_mvz, r.tmp_ptr,
           r.tmp_info);
    mvz_trace_free(&t);
    free(r.tab);
    free(r.canon);
    free(q.tab);
    return 0;
}
