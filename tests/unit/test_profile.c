/*
 * test_profile.c - unit tests of the aggregation: a synthetic trace whose
 * events arrive out of order across two threads is replayed, and every
 * number is checked against values worked out by hand (see the comments).
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
#include "trace/chunk_writer.h"
#include "synth.h"
#include "trace/event_codec.h"
#include "trace/format.h"

#define A 2 /* stack ids: site A and site B */
#define B 3

static char path[64];

/* Starts a synthetic trace at `path` with its PROCESS record. */
static void begin_trace(struct mvz_chunk_writer *w)
{
    snprintf(path, sizeof(path), "/tmp/mvz-test-profile-%d.mvz", (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    assert_true(fd >= 0);
    assert_int_equal(mvz_cw_init(w, fd), 0);
    assert_int_equal(mvz_cw_write_header(w), 0);
    synth_put_process(w);
}

static void end_trace(struct mvz_chunk_writer *w)
{
    mvz_cw_flush(w);
    close(w->fd);
    mvz_cw_destroy(w);
}

/* A STACK record of n frames (innermost first) whose `shared` outermost
 * frames come from stack `base`; only the first n - shared are written. */
static void put_stack_from(struct mvz_chunk_writer *w, uint32_t id, const uint64_t *frames,
                           uint64_t n, uint32_t base, uint64_t shared)
{
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, id);
    mvz_put_uvarint(&b, 1);
    mvz_put_uvarint(&b, n);
    mvz_put_uvarint(&b, base ? (uint32_t)(id - base) : 0); /* a distance back */
    mvz_put_uvarint(&b, shared);
    uint64_t prev = 0;
    for (uint64_t i = 0; i + shared < n; i++) {
        mvz_put_svarint(&b, (int64_t)(frames[i] - prev));
        prev = frames[i];
    }
    mvz_cw_record(w, MVZ_REC_STACK, &b);
    mvz_buf_free(&b);
}

static void put_stack(struct mvz_chunk_writer *w, uint32_t id, uint64_t ip)
{
    put_stack_from(w, id, &ip, 1, 0, 0);
}

static void put_events_flags(struct mvz_chunk_writer *w, uint32_t tid, uint64_t first_index,
                             const struct mvz_codec_event *ev, size_t n, unsigned flags)
{
    struct mvz_buf b = {0};
    struct mvz_codec_state st = {0, 0, 0, flags, NULL};
    mvz_put_uvarint(&b, tid);
    mvz_put_uvarint(&b, first_index);
    mvz_put_uvarint(&b, n);
    mvz_put_uvarint(&b, flags);
    for (size_t i = 0; i < n; i++)
        mvz_event_encode(&b, &st, &ev[i]);
    mvz_cw_record(w, MVZ_REC_EVENTS, &b);
    mvz_cw_flush(w); /* one chunk per batch, like the agent's flushes */
    mvz_buf_free(&b);
}

static void put_events(struct mvz_chunk_writer *w, uint32_t tid, uint64_t first_index,
                       const struct mvz_codec_event *ev, size_t n)
{
    put_events_flags(w, tid, first_index, ev, n, 0);
}

#define ALLOC(seq, addr, size, stack, entry)                                                       \
    {                                                                                              \
        seq, seq * 10, addr, size, stack, MVZ_OP_ALLOC, entry                                      \
    }
#define FREE(seq, addr, entry)                                                                     \
    {                                                                                              \
        seq, seq * 10, addr, 0, 0, MVZ_OP_FREE, entry                                              \
    }
#define NOP(seq)                                                                                   \
    {                                                                                              \
        seq, seq * 10, 0, 0, 0, MVZ_OP_NOP, MVZ_E_REALLOC                                          \
    }
/*
 * seq thread event                        live total
 *  1  T10  alloc A 0x1000 100             100
 *  2  T10  alloc B 0x2000  50             150
 *  3  T20  free 0x1000 (other thread)      50
 *  4  T20  alloc A 0x3000 200             250  <- peak: A 200, B 50
 *  5  T20  free 0x3000 (temporary)         50
 *  6  T10  alloc A 0x1000  10 (reused)     60
 *  7  T10  realloc frees 0x1000 (temporary: T10's last allocation)  50
 *  8  T10  realloc allocates A 0x4000 30   80
 *  9  T10  no-op (a failed realloc)
 * 10  T10  free 0x9999 (never allocated: unmatched)
 * 11  T10  operator new[] B 0x5000 8       88
 * 12  T10  free 0x5000 via free(): mismatched, temporary   80
 * leaked at exit: B 0x2000 50, A 0x4000 30
 */
static void write_scenario(void)
{
    struct mvz_chunk_writer w;
    begin_trace(&w);
    put_stack(&w, A, 0x401000);
    struct mvz_codec_event t10_late[] = {
        ALLOC(6, 0x1000, 10, A, MVZ_E_MALLOC),  FREE(7, 0x1000, MVZ_E_REALLOC),
        ALLOC(8, 0x4000, 30, A, MVZ_E_REALLOC), NOP(9),
        FREE(10, 0x9999, MVZ_E_FREE),           ALLOC(11, 0x5000, 8, B, MVZ_E_NEW_ARRAY),
        FREE(12, 0x5000, MVZ_E_FREE),
    };
    struct mvz_codec_event t20[] = {
        FREE(3, 0x1000, MVZ_E_FREE),
        ALLOC(4, 0x3000, 200, A, MVZ_E_CALLOC),
        FREE(5, 0x3000, MVZ_E_FREE),
    };
    struct mvz_codec_event t10_early[] = {
        ALLOC(1, 0x1000, 100, A, MVZ_E_MALLOC),
        ALLOC(2, 0x2000, 50, B, MVZ_E_MALLOC),
    };
    /* Worst-case order in the file: latest first. */
    put_events(&w, 10, 2, t10_late, 7);
    put_events(&w, 20, 0, t20, 3);
    put_stack(&w, B, 0x402000); /* defined after its first use: allowed */
    put_events(&w, 10, 0, t10_early, 2);
    end_trace(&w);
}

static void test_scenario_numbers(void **state)
{
    (void)state;
    write_scenario();
    struct mvz_profile p;
    char err[256];
    assert_int_equal(mvz_profile_load(&p, path, err, sizeof(err)), 0);
    const struct mvz_summary *s = &p.sum;
    assert_int_equal(s->allocations, 6);
    assert_int_equal(s->allocated_bytes, 100 + 50 + 200 + 10 + 30 + 8);
    assert_int_equal(s->frees, 4);
    assert_int_equal(s->peak_bytes, 250);
    assert_int_equal(s->peak_seq, 4);
    assert_int_equal(s->peak_time_ns, 40);
    assert_int_equal(s->leaked_bytes, 80);
    assert_int_equal(s->leaked_blocks, 2);
    assert_int_equal(s->temporary, 3);
    assert_int_equal(s->unmatched_frees, 1);
    assert_int_equal(s->mismatched_frees, 1);
    assert_int_equal(p.trace.missing_seqs, 0);

    const struct mvz_site *a = &p.sites[A], *b = &p.sites[B];
    assert_int_equal(a->allocations, 4);
    assert_int_equal(a->allocated_bytes, 340);
    assert_int_equal(a->peak_bytes, 200);
    assert_int_equal(a->at_peak_bytes, 200);
    assert_int_equal(a->leaked_bytes, 30);
    assert_int_equal(a->leaked_blocks, 1);
    assert_int_equal(a->temporary, 2);
    /* a's first allocation came through malloc, later ones through others */
    assert_int_equal(mvz_site_entry_allocations(&p, a, MVZ_E_MALLOC), 2);
    assert_int_equal(mvz_site_entry_allocations(&p, a, MVZ_E_CALLOC), 1);
    assert_int_equal(mvz_site_entry_allocations(&p, a, MVZ_E_REALLOC), 1);
    assert_int_equal(mvz_site_entry_allocations(&p, a, MVZ_E_NEW), 0);
    assert_int_equal(b->allocations, 2);
    assert_int_equal(mvz_site_entry_allocations(&p, b, MVZ_E_MALLOC), 1);
    assert_int_equal(mvz_site_entry_allocations(&p, b, MVZ_E_NEW_ARRAY), 1);
    assert_int_equal(mvz_site_entry_allocations(&p, b, MVZ_E_CALLOC), 0);
    assert_int_equal(mvz_site_entry_allocations(&p, b, MVZ_E_ALLOC_COUNT), 0);
    assert_int_equal(b->peak_bytes, 58);
    assert_int_equal(b->at_peak_bytes, 50);
    assert_int_equal(b->leaked_bytes, 50);
    assert_int_equal(b->temporary, 1);
    assert_int_equal(a->at_peak_bytes + b->at_peak_bytes, s->peak_bytes);
    assert_int_equal(p.nthreads, 2);
    mvz_profile_free(&p);
    unlink(path);
}

/* A site's allocations by entry point: one entry point is kept in the site,
 * a second moves the counts aside; an allocation event naming a release's
 * entry point (a damaged trace) counts as an allocation under no entry. */
static void test_entry_points(void **state)
{
    (void)state;
    struct mvz_chunk_writer w;
    begin_trace(&w);
    put_stack(&w, A, 0x401000);
    put_stack(&w, B, 0x402000);
    struct mvz_codec_event ev[] = {
        ALLOC(1, 0x1000, 8, A, MVZ_E_MALLOC), ALLOC(2, 0x2000, 8, A, MVZ_E_MALLOC),
        ALLOC(3, 0x3000, 8, B, MVZ_E_CALLOC), ALLOC(4, 0x4000, 8, B, MVZ_E_DELETE),
        ALLOC(5, 0x5000, 8, B, MVZ_E_CALLOC), ALLOC(6, 0x6000, 8, B, MVZ_E_NEW),
    };
    put_events(&w, 10, 0, ev, 6);
    end_trace(&w);
    struct mvz_profile p;
    char err[256];
    assert_int_equal(mvz_profile_load(&p, path, err, sizeof(err)), 0);
    const struct mvz_site *a = &p.sites[A], *b = &p.sites[B];
    assert_int_equal(a->allocations, 2);
    assert_int_equal(mvz_site_entry_allocations(&p, a, MVZ_E_MALLOC), 2);
    assert_int_equal(mvz_site_entry_allocations(&p, a, MVZ_E_CALLOC), 0);
    assert_int_equal(b->allocations, 4);
    assert_int_equal(mvz_site_entry_allocations(&p, b, MVZ_E_CALLOC), 2);
    assert_int_equal(mvz_site_entry_allocations(&p, b, MVZ_E_NEW), 1);
    assert_int_equal(mvz_site_entry_allocations(&p, b, MVZ_E_MALLOC), 0);
    assert_int_equal(mvz_site_entry_allocations(&p, b, MVZ_E_DELETE), 0);
    mvz_profile_free(&p);
    unlink(path);
}

/* Events missing from a thread's batches (a gap in its ring indexes) must
 * not stall the replay or lose the events after them; they are counted. */
static void test_gap_is_counted(void **state)
{
    (void)state;
    struct mvz_chunk_writer w;
    begin_trace(&w);
    struct mvz_codec_event ev1[] = {ALLOC(1, 0x1000, 5, A, MVZ_E_MALLOC)};
    struct mvz_codec_event ev2[] = {ALLOC(4, 0x2000, 7, A, MVZ_E_MALLOC)};
    put_events(&w, 1, 0, ev1, 1);
    put_events(&w, 1, 3, ev2, 1); /* indexes 1 and 2 never arrived */
    end_trace(&w);
    struct mvz_profile p;
    char err[256];
    assert_int_equal(mvz_profile_load(&p, path, err, sizeof(err)), 0);
    assert_int_equal(p.sum.allocations, 2);
    assert_int_equal(p.sum.peak_bytes, 12);
    assert_int_equal(p.trace.missing_seqs, 2);
    mvz_profile_free(&p);
    unlink(path);
}

static void put_watermark(struct mvz_chunk_writer *w, uint64_t mark)
{
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, mark);
    mvz_cw_record(w, MVZ_REC_WATERMARK, &b);
    mvz_buf_free(&b);
}

/* Watermarks release events in key order as the replay goes; an event that
 * shows up below an earlier watermark (a broken promise) is still counted
 * in the totals, and flagged. */
static void test_watermarks(void **state)
{
    (void)state;
    struct mvz_chunk_writer w;
    begin_trace(&w);
    struct mvz_codec_event t1a[] = {ALLOC(10, 0x1000, 100, A, MVZ_E_MALLOC)};
    struct mvz_codec_event t2a[] = {FREE(20, 0x1000, MVZ_E_FREE),
                                    ALLOC(30, 0x1000, 40, A, MVZ_E_MALLOC)};
    struct mvz_codec_event t1b[] = {ALLOC(15, 0x2000, 1, A, MVZ_E_MALLOC)};
    put_events(&w, 1, 0, t1a, 1);
    put_events(&w, 2, 0, t2a, 2);
    put_watermark(&w, 25);        /* promises everything below 25 is above */
    put_events(&w, 1, 1, t1b, 1); /* ...but key 15 comes late */
    put_watermark(&w, 100);
    end_trace(&w);
    struct mvz_profile p;
    char err[256];
    assert_int_equal(mvz_profile_load(&p, path, err, sizeof(err)), 0);
    assert_int_equal(p.sum.allocations, 3);
    assert_int_equal(p.sum.frees, 1);
    assert_int_equal(p.sum.peak_bytes, 100); /* true order would give 101 */
    assert_int_equal(p.trace.unordered_events, 1);
    assert_int_equal(p.trace.missing_seqs, 0);
    mvz_profile_free(&p);
    unlink(path);
}

/* Keyless batches (one thread, below the next watermark) are replayed in
 * file order after everything released before them. */
static void test_keyless_batches(void **state)
{
    (void)state;
    struct mvz_chunk_writer w;
    begin_trace(&w);
    /* keyed: two threads; T2's block is released by T1 in a keyless batch */
    struct mvz_codec_event t1[] = {ALLOC(10, 0x1000, 100, A, MVZ_E_MALLOC)};
    struct mvz_codec_event t2[] = {ALLOC(20, 0x2000, 200, A, MVZ_E_MALLOC)};
    put_events(&w, 1, 0, t1, 1);
    put_events(&w, 2, 0, t2, 1);
    put_watermark(&w, 30);
    /* keyless (keys in the macro are ignored): free 0x2000 then 0x1000, then
     * a new block at 0x1000: only file order makes this consistent */
    struct mvz_codec_event k1[] = {FREE(0, 0x2000, MVZ_E_FREE), FREE(0, 0x1000, MVZ_E_FREE),
                                   ALLOC(0, 0x1000, 7, A, MVZ_E_MALLOC)};
    put_events_flags(&w, 1, 1, k1, 3, MVZ_EVENTS_NO_KEYS);
    put_watermark(&w, 40);
    struct mvz_codec_event k2[] = {FREE(0, 0x1000, MVZ_E_FREE)};
    put_events_flags(&w, 1, 4, k2, 1, MVZ_EVENTS_NO_KEYS);
    put_watermark(&w, 50);
    end_trace(&w);
    struct mvz_profile p;
    char err[256];
    assert_int_equal(mvz_profile_load(&p, path, err, sizeof(err)), 0);
    assert_int_equal(p.sum.allocations, 3);
    assert_int_equal(p.sum.frees, 3);
    assert_int_equal(p.sum.peak_bytes, 300);
    assert_int_equal(p.sum.leaked_bytes, 0);
    assert_int_equal(p.sum.unmatched_frees, 0);
    assert_int_equal(p.sum.reused_addresses, 0);
    assert_int_equal(p.trace.unordered_events, 0);
    assert_int_equal(p.trace.missing_seqs, 0);
    mvz_profile_free(&p);
    unlink(path);
}

/* Damaged stack ids: far above the stacks defined, they are rejected as
 * damage instead of sizing tables by them (or crashing). */
static void test_absurd_stack_ids(void **state)
{
    (void)state;
    struct mvz_chunk_writer w;
    begin_trace(&w);
    put_stack(&w, (1u << 28) - 1, 0x401000);
    struct mvz_codec_event ev[] = {ALLOC(1, 0x1000, 5, 0xffffffffu, MVZ_E_MALLOC),
                                   ALLOC(2, 0x2000, 7, A, MVZ_E_MALLOC)};
    put_events(&w, 1, 0, ev, 1);
    put_events(&w, 1, 1, ev + 1, 1);
    end_trace(&w);
    struct mvz_profile p;
    char err[256];
    assert_int_equal(mvz_profile_load(&p, path, err, sizeof(err)), 0);
    assert_int_equal(p.sum.allocations, 1);
    assert_int_equal(p.sum.peak_bytes, 7);
    assert_true(p.trace.bad_events >= 1);
    assert_true(p.trace.bad_records >= 1);
    assert_true(p.trace.stacks_cap < (1u << 20));
    mvz_profile_free(&p);
    unlink(path);
}

static void assert_frames(const struct mvz_trace *t, uint32_t id, const uint64_t *want, uint32_t n)
{
    const struct mvz_stack *s = mvz_trace_stack(t, id);
    assert_non_null(s);
    assert_int_equal(s->depth, n);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(s->frames[i], want[i]);
}

/* Format 4: a stack takes its outer frames from an earlier one. A base that
 * is not defined (a damaged chunk) or shallower than claimed makes the
 * record damaged, and the stack stays undefined instead of getting wrong
 * frames; so does a stack built on such a stack. */
static void test_stack_bases(void **state)
{
    (void)state;
    const uint64_t outer[] = {0x401100, 0x401200, 0x401300, 0x401400};
    const uint64_t inner[] = {0x402100, 0x401300, 0x401400}; /* shares 2 with outer */
    const uint64_t deeper[] = {0x403100, 0x403200, 0x402100, 0x401300, 0x401400};
    const uint64_t shallow[] = {0x401300, 0x401400}; /* all frames from its base */
    struct mvz_chunk_writer w;
    begin_trace(&w);
    put_stack_from(&w, 2, outer, 4, 0, 0);
    put_stack_from(&w, 3, inner, 3, 2, 2);
    put_stack_from(&w, 4, deeper, 5, 3, 3);
    put_stack_from(&w, 5, shallow, 2, 2, 2);
    put_stack_from(&w, 6, deeper, 5, 3, 4); /* base 3 has only 3 frames */
    put_stack_from(&w, 7, deeper, 5, 6, 2); /* base 6 was damaged */
    put_stack_from(&w, 8, inner, 3, 9, 2);  /* a distance back past id 2 */
    put_stack_from(&w, 10, inner, 3, 9, 2); /* base 9 is never defined */
    put_stack_from(&w, 11, inner, 3, 2, 4); /* more shared frames than it has */
    put_stack_from(&w, 12, inner, 3, 0, 1); /* shared frames without a base */
    struct mvz_codec_event ev[] = {ALLOC(1, 0x1000, 5, 4, MVZ_E_MALLOC),
                                   ALLOC(2, 0x2000, 7, 6, MVZ_E_MALLOC)};
    put_events(&w, 1, 0, ev, 2);
    end_trace(&w);
    struct mvz_profile p;
    char err[256];
    assert_int_equal(mvz_profile_load(&p, path, err, sizeof(err)), 0);
    assert_frames(&p.trace, 2, outer, 4);
    assert_frames(&p.trace, 3, inner, 3);
    assert_frames(&p.trace, 4, deeper, 5);
    assert_frames(&p.trace, 5, shallow, 2);
    for (uint32_t id = 6; id <= 12; id++)
        assert_null(mvz_trace_stack(&p.trace, id));
    assert_int_equal(p.trace.nstacks, 4);
    assert_int_equal(p.trace.bad_records, 6);
    assert_int_equal(p.sum.allocations, 2); /* the event on stack 6 still counts */
    mvz_profile_free(&p);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absurd_stack_ids), cmocka_unit_test(test_keyless_batches),
        cmocka_unit_test(test_watermarks),       cmocka_unit_test(test_scenario_numbers),
        cmocka_unit_test(test_entry_points),     cmocka_unit_test(test_gap_is_counted),
        cmocka_unit_test(test_stack_bases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
