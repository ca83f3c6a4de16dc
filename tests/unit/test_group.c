/*
 * test_group.c - GROUPs of HEAP records (src/trace/heap_group.h) change
 * no number: random runs of several threads that allocate in the same time
 * units, releasing each other's blocks, are written twice, once in the
 * order the events happened and once grouped thread by thread the way the
 * agent writes them, and every number of the profile, of time windows and
 * of the timeline must come out the same from both traces. A hand-worked
 * case checks that a peak which exists only in the grouped order is not
 * taken for one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include <cmocka.h>

#include "analysis/profile.h"
#include "analysis/timeline.h"
#include "trace/chunk_writer.h"
#include "synth.h"
#include "trace/heap_group.h"

#define MAX_EVENTS 6000
#define MAX_THREADS 80
#define UNIT (1ull << MVZ_HEAP_TS_SHIFT)
#define FIRST_STACK 2

/* ---- a random run ---- */

struct live {
    uint64_t block, size;
    uint32_t stack;
};

struct run {
    struct mvz_group_ev ev[MAX_EVENTS];
    uint64_t ts[MAX_EVENTS];
    size_t n;
    uint32_t nthreads, nstacks;
    uint64_t end_ns;
};

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static uint32_t tid_of(uint32_t t)
{
    return 100 + t;
}

/* Removes and returns a random live block, preferring thread t's own. */
static struct live take_live(struct live *live, size_t *nlive, uint32_t t)
{
    size_t k = rnd((uint32_t)*nlive);
    for (int tries = 0; tries < 4 && rnd(2); tries++) {
        size_t j = rnd((uint32_t)*nlive);
        if ((uint32_t)((live[j].block - 1) >> MVZ_HEAP_SERIAL_BITS) == tid_of(t)) {
            k = j;
            break;
        }
    }
    struct live b = live[k];
    live[k] = live[--*nlive];
    return b;
}

/* Threads take turns in short runs; the clock moves on every few dozen
 * events, so most time units hold events of several threads. */
static void make_run(struct run *r, uint32_t nthreads, uint32_t nstacks, size_t n)
{
    static struct live live[MAX_EVENTS];
    static uint64_t serial[MAX_THREADS];
    size_t nlive = 0;
    uint64_t unit = 1;
    uint32_t t = 0;
    memset(serial, 0, sizeof(serial));
    r->nthreads = nthreads;
    r->nstacks = nstacks;
    for (r->n = 0; r->n < n; r->n++) {
        struct mvz_group_ev *e = &r->ev[r->n];
        memset(e, 0, sizeof(*e));
        if (rnd(30) == 0)
            unit += 1 + rnd(3);
        if (rnd(3) == 0)
            t = rnd(nthreads);
        r->ts[r->n] = unit * UNIT + rnd(UNIT); /* anywhere in the unit */
        e->tid = tid_of(t);
        uint32_t what = rnd(100);
        if (nlive == 0 || what < 48) {
            e->op = MVZ_HEAP_ALLOC;
            e->entry = MVZ_E_MALLOC;
            e->size = rnd(4) ? 1 + rnd(400) : 0;
            e->stack = FIRST_STACK + rnd(nstacks);
            e->block = mvz_heap_block(e->tid, serial[t]++);
            live[nlive++] = (struct live){e->block, e->size, e->stack};
        } else if (what < 51) {
            e->op = MVZ_HEAP_FREE_UNKNOWN;
            e->entry = MVZ_E_FREE;
        } else if (what < 53) { /* takes over a live block's name */
            size_t k = rnd((uint32_t)nlive);
            e->op = MVZ_HEAP_ALLOC_REUSED;
            e->entry = MVZ_E_MALLOC;
            e->block = live[k].block;
            e->old_size = live[k].size;
            e->old_stack = live[k].stack;
            e->size = 1 + rnd(400);
            e->stack = FIRST_STACK + rnd(nstacks);
            live[k].size = e->size;
            live[k].stack = e->stack;
        } else {
            struct live b = take_live(live, &nlive, t);
            e->op = MVZ_HEAP_FREE;
            e->entry = MVZ_E_FREE;
            e->block = b.block;
            e->size = b.size;
            e->stack = b.stack;
        }
    }
    r->end_ns = (unit + 1) * UNIT;
}

/* ---- writing it ---- */

static char path_real[64], path_grouped[64];
static struct mvz_grouper grouper;
static uint64_t counters[MAX_THREADS]; /* each thread's next serial, as written so far */

static uint64_t next_serial(void *ctx, uint32_t tid)
{
    (void)ctx;
    return counters[tid - 100];
}

static void put_stack(struct mvz_chunk_writer *w, uint32_t id)
{
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, id);
    mvz_put_uvarint(&b, 1);
    mvz_put_uvarint(&b, 1);
    mvz_put_uvarint(&b, 0);
    mvz_put_uvarint(&b, 0);
    mvz_put_svarint(&b, 0x401000 + 16 * id);
    mvz_cw_record(w, MVZ_REC_STACK, &b);
    mvz_buf_free(&b);
}

/* Plans and writes events [lo, hi) as one group. */
static void write_group(const struct run *r, size_t lo, size_t hi, struct mvz_heap_out *o,
                        struct mvz_heap_state *st, size_t *coded)
{
    for (size_t i = lo; i < hi; i++)
        counters[r->ev[i].tid - 100] += r->ev[i].op == MVZ_HEAP_ALLOC;
    mvz_group_plan(&grouper, &r->ev[lo], hi - lo);
    assert_true(mvz_group_threads_fit(&grouper, st));
    mvz_group_write(&grouper, &r->ev[lo], r->ts[lo], o, st, next_serial, NULL);
    *coded += mvz_group_coded(&grouper);
}

/* The run as one HEAP record: event by event in the order they happened,
 * or (grouped) in groups of one time unit, cut short now and then as the
 * agent's flushes and its group limit cut them. Returns the groups that
 * needed a GROUP code. */
static int random_cuts = 1;

/* A trace being written: its file, and the open HEAP record's state. */
struct out {
    struct mvz_chunk_writer w;
    int fd;
    struct mvz_heap_out o;
    struct mvz_heap_state st;
};

/* Starts a trace with its PROCESS record and stacks FIRST_STACK, ... */
static void out_open(struct out *t, const char *path, uint32_t nstacks, int streams)
{
    t->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    assert_true(t->fd >= 0);
    assert_int_equal(mvz_cw_init(&t->w, t->fd), 0);
    assert_int_equal(mvz_cw_write_header(&t->w), 0);
    synth_put_process(&t->w);
    for (uint32_t s = 0; s < nstacks; s++)
        put_stack(&t->w, FIRST_STACK + s);
    mvz_heap_out_start(&t->o, streams);
    mvz_heap_state_reset(&t->st);
}

static void out_close(struct out *t)
{
    mvz_cw_flush(&t->w);
    close(t->fd);
    mvz_cw_destroy(&t->w);
    for (int i = 0; i < MVZ_HS_COUNT; i++)
        for (int j = 0; j < MVZ_HS_PARTS; j++)
            mvz_buf_free(&t->o.part[i][j]);
}

/* streams: 0 a HEAP record, 1 a HEAP_STREAMS record, 2 a HEAP record
 * made from the streams as the agent's layout trials make it. */
static size_t write_trace(const char *path, const struct run *r, int grouped, int streams)
{
    static struct out t;
    out_open(&t, path, r->nstacks, streams != 0);
    memset(counters, 0, sizeof(counters));
    size_t coded = 0, lo = 0;
    for (size_t i = 1; i <= r->n; i++) {
        int cut = !grouped || i == r->n ||
                  r->ts[i] >> MVZ_HEAP_TS_SHIFT != r->ts[lo] >> MVZ_HEAP_TS_SHIFT ||
                  (random_cuts && rnd(50) == 0);
        if (cut) {
            write_group(r, lo, i, &t.o, &t.st, &coded);
            lo = i;
        }
    }
    struct mvz_buf p = {0};
    mvz_put_uvarint(&p, 0);    /* first */
    mvz_put_uvarint(&p, r->n); /* n */
    mvz_put_uvarint(&p, 0);    /* late */
    if (streams == 2)
        mvz_heap_out_interleave(&t.o, &p);
    else
        mvz_heap_out_finish(&t.o, &p);
    mvz_cw_record(&t.w, streams == 1 ? MVZ_REC_HEAP_STREAMS : MVZ_REC_HEAP, &p);
    mvz_buf_free(&p);
    out_close(&t);
    return coded;
}

/* ---- comparing the numbers ---- */

static void assert_same_profile(const struct mvz_profile *a, const struct mvz_profile *b)
{
    const struct mvz_summary *x = &a->sum, *y = &b->sum;
    assert_int_equal(x->allocations, y->allocations);
    assert_int_equal(x->frees, y->frees);
    assert_int_equal(x->allocated_bytes, y->allocated_bytes);
    assert_int_equal(x->peak_bytes, y->peak_bytes);
    assert_int_equal(x->peak_time_ns, y->peak_time_ns);
    assert_int_equal(x->leaked_bytes, y->leaked_bytes);
    assert_int_equal(x->leaked_blocks, y->leaked_blocks);
    assert_int_equal(x->temporary, y->temporary);
    assert_int_equal(x->unmatched_frees, y->unmatched_frees);
    assert_int_equal(x->reused_addresses, y->reused_addresses);
    assert_int_equal(a->trace.bad_events + a->trace.bad_records, 0);
    assert_int_equal(b->trace.bad_events + b->trace.bad_records, 0);
    assert_int_equal(a->sites_cap, b->sites_cap);
    for (size_t i = 0; i < a->sites_cap; i++) {
        const struct mvz_site *s = &a->sites[i], *t = &b->sites[i];
        assert_int_equal(s->stack, t->stack);
        assert_int_equal(s->allocations, t->allocations);
        assert_int_equal(s->allocated_bytes, t->allocated_bytes);
        assert_int_equal(s->peak_bytes, t->peak_bytes);
        assert_int_equal(s->at_peak_bytes, t->at_peak_bytes);
        assert_int_equal(s->at_peak_blocks, t->at_peak_blocks);
        assert_int_equal(s->leaked_bytes, t->leaked_bytes);
        assert_int_equal(s->leaked_blocks, t->leaked_blocks);
        assert_int_equal(s->temporary, t->temporary);
    }
    /* threads are listed as first seen, which a group may change */
    assert_int_equal(a->nthreads, b->nthreads);
    for (size_t i = 0; i < a->nthreads; i++) {
        const struct mvz_profile_thread *s = &a->threads[i], *t = b->threads;
        while (t < b->threads + b->nthreads - 1 && t->tid != s->tid)
            t++;
        assert_int_equal(s->tid, t->tid);
        assert_int_equal(s->allocations, t->allocations);
        assert_int_equal(s->allocated_bytes, t->allocated_bytes);
        assert_int_equal(s->at_peak_bytes, t->at_peak_bytes);
        assert_int_equal(s->leaked_bytes, t->leaked_bytes);
        assert_int_equal(s->temporary, t->temporary);
        assert_int_equal(s->frees, t->frees);
    }
}

static void compare_window(uint64_t from, uint64_t to)
{
    struct mvz_profile a, b;
    struct mvz_profile_options opt = {.from_ns = from, .to_ns = to};
    char err[256];
    assert_int_equal(mvz_profile_load_window(&a, path_real, &opt, err, sizeof(err)), 0);
    assert_int_equal(mvz_profile_load_window(&b, path_grouped, &opt, err, sizeof(err)), 0);
    assert_same_profile(&a, &b);
    mvz_profile_free(&a);
    mvz_profile_free(&b);
}

static void compare_timeline(const struct run *r, size_t npoints)
{
    uint32_t group_of[FIRST_STACK + 8] = {0};
    for (uint32_t s = 0; s < r->nstacks; s++)
        group_of[FIRST_STACK + s] = s + 1;
    struct mvz_timeline a, b;
    struct mvz_profile pa, pb;
    char err[256];
    size_t n = FIRST_STACK + r->nstacks;
    assert_int_equal(mvz_timeline_build(&a, &pa, path_real, 0, r->end_ns, npoints, group_of, n,
                                        r->nstacks, err, sizeof(err)),
                     0);
    assert_int_equal(mvz_timeline_build(&b, &pb, path_grouped, 0, r->end_ns, npoints, group_of, n,
                                        r->nstacks, err, sizeof(err)),
                     0);
    for (size_t i = 0; i < npoints; i++) {
        assert_int_equal(a.heap[i], b.heap[i]);
        assert_int_equal(a.heap_max[i], b.heap_max[i]);
        for (size_t k = 0; k < r->nstacks; k++)
            assert_int_equal(a.series[i * r->nstacks + k], b.series[i * r->nstacks + k]);
    }
    mvz_timeline_free(&a);
    mvz_timeline_free(&b);
    mvz_profile_free(&pa);
    mvz_profile_free(&pb);
}

static size_t coded_runs; /* runs that needed a GROUP code */

static void check_run(struct run *r, uint32_t nthreads, uint32_t nstacks, size_t n, int streams)
{
    make_run(r, nthreads, nstacks, n);
    write_trace(path_real, r, 0, streams % 2);
    coded_runs += write_trace(path_grouped, r, 1, streams) > 0;
    compare_window(0, UINT64_MAX);
    for (int k = 0; k < 3; k++) {
        uint64_t last = r->ts[r->n - 1] >> MVZ_HEAP_TS_SHIFT << MVZ_HEAP_TS_SHIFT;
        uint64_t from = rnd((uint32_t)(last / 1024) + 1) * 1024ull;
        uint64_t to = from + rnd((uint32_t)(r->end_ns / 1024)) * 1024ull;
        compare_window(from, to);
    }
    compare_timeline(r, 1 + rnd(60));
}

static void test_random_runs(void **state)
{
    (void)state;
    static struct run r;
    rng = 0x9E3779B97F4A7C15ull;
    for (int k = 0; k < 200; k++)
        check_run(&r, 2 + rnd(4), 1 + rnd(6), 200 + rnd(3000), k % 3);
    assert_true(coded_runs > 100); /* the runs did exercise GROUP codes */
    /* more threads than a group orders: written in the real order */
    for (int k = 0; k < 5; k++)
        check_run(&r, 70, 4, 5000, k & 1);
    unlink(path_real);
    unlink(path_grouped);
}

static struct mvz_group_ev ev_at(struct run *r, size_t i, uint64_t unit, uint32_t t, uint8_t op,
                                 uint64_t serial, uint64_t size)
{
    struct mvz_group_ev e = {.tid = tid_of(t), .op = op, .size = size};
    r->ts[i] = unit * UNIT;
    e.block = mvz_heap_block(tid_of(op == MVZ_HEAP_ALLOC ? t : 1), serial);
    e.stack = FIRST_STACK;
    e.entry = op == MVZ_HEAP_ALLOC ? MVZ_E_MALLOC : MVZ_E_FREE;
    return e;
}

/*
 * unit thread event                  heap
 *  1    T1   alloc z (T1's 0) 100    100  <- the peak, at unit 1
 *  2    T2   free z                    0
 *  2    T0   alloc a (T0's 0) 100    100
 *  2    T0   free a                    0
 *  2    T2   alloc b (T2's 0) 100    100
 * Written thread by thread in unit 2 (T2 first, as first seen), the heap
 * would seem to reach 200 after "alloc a": a state that never existed.
 */
static void test_hidden_peak(void **state)
{
    (void)state;
    static struct run r;
    r.ev[0] = ev_at(&r, 0, 1, 1, MVZ_HEAP_ALLOC, 0, 100);
    r.ev[1] = ev_at(&r, 1, 2, 2, MVZ_HEAP_FREE, 0, 100);
    r.ev[2] = ev_at(&r, 2, 2, 0, MVZ_HEAP_ALLOC, 0, 100);
    r.ev[3] = ev_at(&r, 3, 2, 0, MVZ_HEAP_FREE, 0, 100);
    r.ev[3].block = mvz_heap_block(tid_of(0), 0);
    r.ev[4] = ev_at(&r, 4, 2, 2, MVZ_HEAP_ALLOC, 0, 100);
    r.n = 5;
    r.nthreads = 3;
    r.nstacks = 1;
    r.end_ns = 3 * UNIT;
    random_cuts = 0;
    assert_int_equal(write_trace(path_real, &r, 1, 0), 1); /* unit 2 needs its GROUP code */
    random_cuts = 1;
    struct mvz_profile p;
    char err[256];
    assert_int_equal(mvz_profile_load(&p, path_real, err, sizeof(err)), 0);
    assert_int_equal(p.sum.peak_bytes, 100);
    assert_int_equal(p.sum.peak_time_ns, UNIT);
    assert_int_equal(p.sites[FIRST_STACK].peak_bytes, 100);
    assert_int_equal(p.sites[FIRST_STACK].at_peak_blocks, 1);
    assert_int_equal(p.sum.leaked_bytes, 100);
    mvz_profile_free(&p);
    unlink(path_real);
}

/* ---- a record at its limit of threads ---- */

static uint64_t wide_counters[4096];

static uint64_t wide_next_serial(void *ctx, uint32_t tid)
{
    (void)ctx;
    return wide_counters[tid];
}

static void wide_group(struct mvz_group_ev *ev, size_t n, uint64_t unit, struct mvz_heap_out *o,
                       struct mvz_heap_state *st)
{
    for (size_t i = 0; i < n; i++)
        wide_counters[ev[i].tid] += ev[i].op == MVZ_HEAP_ALLOC;
    mvz_group_plan(&grouper, ev, n);
    assert_true(mvz_group_threads_fit(&grouper, st));
    mvz_group_write(&grouper, ev, unit * UNIT, o, st, wide_next_serial, NULL);
}

/* A HEAP record of n events; the last `chop` bytes cut off (damage). */
static void wide_record(struct mvz_chunk_writer *w, struct mvz_heap_out *o,
                        struct mvz_heap_state *st, uint64_t first, uint64_t n, size_t chop)
{
    struct mvz_buf p = {0};
    mvz_put_uvarint(&p, first);
    mvz_put_uvarint(&p, n);
    mvz_put_uvarint(&p, 0);
    mvz_heap_out_finish(o, &p);
    p.len -= chop;
    mvz_cw_record(w, MVZ_REC_HEAP, &p);
    mvz_buf_free(&p);
    mvz_heap_out_start(o, 0);
    mvz_heap_state_reset(st);
}

static struct mvz_group_ev wide_ev(uint32_t tid, uint8_t op, uint64_t block, uint64_t size)
{
    return (struct mvz_group_ev){
        .size = size, .block = block, .tid = tid, .stack = FIRST_STACK, .op = op};
}

/* A record names at most 256 threads. With 255 named, a group in which
 * thread 100 releases a block of thread 3000 (unnamed in this record:
 * the release names it) and new thread 2000 allocates: thread 2000 must
 * still be named, its allocation its own. */
static void test_thread_limit(void **state)
{
    (void)state;
    static struct out t;
    memset(wide_counters, 0, sizeof(wide_counters));
    out_open(&t, path_real, 1, 0);
    struct mvz_group_ev c = wide_ev(3000, MVZ_HEAP_ALLOC, mvz_heap_block(3000, 0), 10);
    wide_group(&c, 1, 1, &t.o, &t.st);
    wide_record(&t.w, &t.o, &t.st, 0, 1, 0);
    for (uint32_t k = 0; k < 255; k++) {
        struct mvz_group_ev e = wide_ev(100 + k, MVZ_HEAP_ALLOC, mvz_heap_block(100 + k, 0), 1);
        wide_group(&e, 1, 2 + k, &t.o, &t.st);
    }
    struct mvz_group_ev g[2] = {
        wide_ev(100, MVZ_HEAP_FREE, mvz_heap_block(3000, 0), 10),
        wide_ev(2000, MVZ_HEAP_ALLOC, mvz_heap_block(2000, 0), 7),
    };
    wide_group(g, 2, 400, &t.o, &t.st);
    wide_record(&t.w, &t.o, &t.st, 1, 257, 0);
    out_close(&t);
    struct mvz_profile p;
    char err[256];
    assert_int_equal(mvz_profile_load(&p, path_real, err, sizeof(err)), 0);
    assert_int_equal(p.trace.bad_events + p.trace.bad_records, 0);
    assert_int_equal(p.sum.allocations, 257);
    assert_int_equal(p.sum.frees, 1);
    int seen = 0;
    for (size_t i = 0; i < p.nthreads; i++) {
        const struct mvz_profile_thread *th = &p.threads[i];
        if (th->tid == 100 || th->tid == 2000) {
            assert_int_equal(th->allocations, 1);
            assert_int_equal(th->allocated_bytes, th->tid == 100 ? 1 : 7);
            seen++;
        }
    }
    assert_int_equal(seen, 2);
    mvz_profile_free(&p);
    unlink(path_real);
}

/* A GROUP that hides site 2 in a record cut short: what it hides must end
 * with what was read of it, not reach into the next record, where an
 * allocation of 30 bytes on site 2 makes its peak. */
static void test_damaged_group(void **state)
{
    (void)state;
    for (size_t chop = 1; chop < 6; chop++) {
        static struct out t;
        memset(wide_counters, 0, sizeof(wide_counters));
        out_open(&t, path_real, 2, 0);
        struct mvz_group_ev g[5] = {
            wide_ev(100, MVZ_HEAP_ALLOC, mvz_heap_block(100, 0), 10),
            wide_ev(200, MVZ_HEAP_ALLOC, mvz_heap_block(200, 0), 10),
            wide_ev(100, MVZ_HEAP_FREE, mvz_heap_block(100, 0), 10),
            wide_ev(200, MVZ_HEAP_FREE, mvz_heap_block(200, 0), 10),
            wide_ev(200, MVZ_HEAP_ALLOC, mvz_heap_block(200, 1), 1000),
        };
        g[4].stack = FIRST_STACK + 1;
        wide_group(g, 5, 1, &t.o, &t.st);
        assert_true(mvz_group_coded(&grouper) && grouper.nsites == 1);
        wide_record(&t.w, &t.o, &t.st, 0, 5, chop);
        struct mvz_group_ev e = wide_ev(100, MVZ_HEAP_ALLOC, mvz_heap_block(100, 1), 30);
        wide_group(&e, 1, 2, &t.o, &t.st);
        wide_record(&t.w, &t.o, &t.st, 5, 1, 0);
        out_close(&t);
        struct mvz_profile p;
        char err[256];
        assert_int_equal(mvz_profile_load(&p, path_real, err, sizeof(err)), 0);
        assert_true(p.trace.bad_events > 0);
        assert_true(p.sites[FIRST_STACK].peak_bytes >= 30);
        mvz_profile_free(&p);
    }
    unlink(path_real);
}

int main(void)
{
    snprintf(path_real, sizeof(path_real), "/tmp/mvz-test-group-%d-a.mvz", (int)getpid());
    snprintf(path_grouped, sizeof(path_grouped), "/tmp/mvz-test-group-%d-b.mvz", (int)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hidden_peak),
        cmocka_unit_test(test_thread_limit),
        cmocka_unit_test(test_damaged_group),
        cmocka_unit_test(test_random_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
