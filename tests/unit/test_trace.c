/*
 * test_trace.c - unit tests of the trace container: what the chunk writer
 * writes, the reader reads back, and damage (truncation, flipped bytes, bad
 * magic, future versions) is detected without losing the intact parts.
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
#include <sys/stat.h>

#include <cmocka.h>

#include "trace/chunk_writer.h"
#include "trace/event_codec.h"
#include "trace/format.h"
#include "trace/heap_codec.h"
#include "trace/reader.h"

static char path[64];

static void make_path(void)
{
    snprintf(path, sizeof(path), "/tmp/mvz-test-trace-%d.mvz", (int)getpid());
}

/* A new trace at `path` with its file header written; returns its fd. */
static int open_trace(struct mvz_chunk_writer *w)
{
    make_path();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    assert_true(fd >= 0);
    assert_int_equal(mvz_cw_init(w, fd), 0);
    assert_int_equal(mvz_cw_write_header(w), 0);
    return fd;
}

/* Writes `chunks` chunks; chunk i holds records of kind 100+i whose payload
 * is the decimal text of i repeated. */
static void write_trace(int chunks, int records_per_chunk)
{
    struct mvz_chunk_writer w;
    int fd = open_trace(&w);
    for (int i = 0; i < chunks; i++) {
        for (int k = 0; k < records_per_chunk; k++) {
            struct mvz_buf b = {0};
            char text[32];
            snprintf(text, sizeof(text), "%d-%d", i, k);
            mvz_put_str(&b, text);
            mvz_cw_record(&w, (uint8_t)(100 + i), &b);
            mvz_buf_free(&b);
        }
        assert_int_equal(mvz_cw_flush(&w), 0);
    }
    mvz_cw_destroy(&w);
    close(fd);
}

static int count_records(int *first_kind, int *last_kind, struct mvz_reader *out_state)
{
    struct mvz_reader r;
    char err[256];
    assert_int_equal(mvz_reader_open(&r, path, err, sizeof(err)), 0);
    struct mvz_record rec;
    int n = 0;
    while (mvz_reader_next(&r, &rec)) {
        if (n == 0 && first_kind)
            *first_kind = rec.kind;
        if (last_kind)
            *last_kind = rec.kind;
        n++;
    }
    if (out_state)
        *out_state = r;
    mvz_reader_close(&r);
    return n;
}

static off_t file_size(void)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

static void test_roundtrip(void **state)
{
    (void)state;
    write_trace(5, 100);
    struct mvz_reader r;
    char err[256];
    assert_int_equal(mvz_reader_open(&r, path, err, sizeof(err)), 0);
    assert_int_equal(r.major, MVZ_FORMAT_MAJOR);
    struct mvz_record rec;
    for (int i = 0; i < 5; i++) {
        for (int k = 0; k < 100; k++) {
            assert_int_equal(mvz_reader_next(&r, &rec), 1);
            assert_int_equal(rec.kind, 100 + i);
            struct mvz_cursor c = mvz_cursor_make(rec.data, rec.len);
            char *s = mvz_get_str(&c);
            char want[32];
            snprintf(want, sizeof(want), "%d-%d", i, k);
            assert_string_equal(s, want);
            free(s);
        }
    }
    assert_int_equal(mvz_reader_next(&r, &rec), 0);
    assert_int_equal(r.bad_chunks, 0);
    assert_int_equal(r.truncated, 0);
    mvz_reader_close(&r);
    unlink(path);
}

/* The zstd blocks of the frame that starts the chunk at file offset
 * `at`; also returns the chunk's compressed length in *clen. */
static int count_blocks(const uint8_t *file, size_t at, uint32_t *clen)
{
    const uint8_t *h = file + at;
    *clen = (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
    const uint8_t *f = h + MVZ_CHUNK_HEADER_LEN, *end = f + *clen;
    /* frame header (RFC 8878): magic, descriptor, window, dictionary id
     * and content size, the last three per the descriptor's flags */
    uint8_t fhd = f[4];
    int single = fhd >> 5 & 1, fcs = fhd >> 6;
    static const size_t did_len[] = {0, 1, 2, 4}, fcs_len[] = {0, 2, 4, 8};
    size_t pos = 5 + !single + did_len[fhd & 3] + (fcs || !single ? fcs_len[fcs] : 1);
    int blocks = 0;
    for (;;) {
        assert_true(f + pos + 3 <= end);
        uint32_t bh = (uint32_t)f[pos] | (uint32_t)f[pos + 1] << 8 | (uint32_t)f[pos + 2] << 16;
        uint32_t type = bh >> 1 & 3, size = bh >> 3;
        pos += 3 + (type == 1 ? 1 : size); /* an RLE block stores one byte */
        blocks++;
        if (bh & 1)
            return blocks;
    }
}

/* A record of two unlike halves, written whole in one chunk, then in the
 * next with a block cut between the halves, one at 0 (after the record's
 * kind and length), and cuts the writer must ignore (out of order,
 * repeated, past the payload, and at the end of the chunk: that one once
 * left the frame unfinished). Both read back the
 * same; the cut chunk has more blocks and is smaller (a literal code for
 * each half). It goes through detach, as the agent's writer thread
 * writes. */
/* Writes w's queued records as one detached batch (between: called
 * between compressed pieces, or NULL); returns what the write returned. */
static int write_batch(struct mvz_chunk_writer *w, void (*between)(void))
{
    struct mvz_cw_batch taken = {0};
    mvz_cw_detach(w, &taken);
    int rc = mvz_cw_write_detached(w, &taken, between);
    mvz_buf_free(&taken.raw);
    mvz_buf_free(&taken.cuts);
    return rc;
}

/* Opens the trace at path; its first two records are kinds 100 and 101,
 * each holding b. */
static void open_expecting_100_101(struct mvz_reader *r, const char *path, const struct mvz_buf *b)
{
    char err[256];
    assert_int_equal(mvz_reader_open(r, path, err, sizeof(err)), 0);
    struct mvz_record rec;
    for (int kind = 100; kind <= 101; kind++) {
        assert_int_equal(mvz_reader_next(r, &rec), 1);
        assert_int_equal(rec.kind, kind);
        assert_int_equal(rec.len, b->len);
        assert_memory_equal(rec.data, b->data, b->len);
    }
}

static void test_cut_blocks(void **state)
{
    (void)state;
    struct mvz_chunk_writer w;
    int fd = open_trace(&w);
    struct mvz_buf b = {0};
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 65536; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        mvz_put_u8(&b, (uint8_t)(i < 32768 ? x % 16 : 128 + x % 128));
    }
    mvz_cw_record(&w, 100, &b);
    assert_int_equal(mvz_cw_flush(&w), 0);
    size_t cuts[] = {0, 32768, 32768, 1000, 65536, 70000};
    mvz_cw_record_cut(&w, 101, &b, cuts, sizeof(cuts) / sizeof(*cuts));
    assert_int_equal(write_batch(&w, NULL), 0);
    mvz_cw_destroy(&w);
    close(fd);

    struct mvz_reader r;
    open_expecting_100_101(&r, path, &b);
    struct mvz_record rec;
    assert_int_equal(mvz_reader_next(&r, &rec), 0);
    assert_int_equal(r.bad_chunks, 0);
    mvz_reader_close(&r);

    static uint8_t file[1 << 18];
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t len = fread(file, 1, sizeof(file), f);
    fclose(f);
    uint32_t whole_len, cut_len;
    int whole = count_blocks(file, MVZ_FILE_HEADER_LEN, &whole_len);
    assert_true(MVZ_FILE_HEADER_LEN + MVZ_CHUNK_HEADER_LEN + whole_len < len);
    int cut = count_blocks(file, MVZ_FILE_HEADER_LEN + MVZ_CHUNK_HEADER_LEN + whole_len, &cut_len);
    assert_int_equal(whole, 1);
    assert_true(cut >= 2); /* up to the halves' cut, and after it */
    assert_true(cut_len < whole_len);
    mvz_buf_free(&b);
    unlink(path);
}

static void test_truncated_keeps_complete_chunks(void **state)
{
    (void)state;
    write_trace(4, 50);
    off_t size = file_size();
    /* Cut inside the last chunk: the first three chunks survive. */
    assert_int_equal(truncate(path, size - 5), 0);
    int first = 0, last = 0;
    struct mvz_reader st;
    int n = count_records(&first, &last, &st);
    assert_int_equal(n, 150);
    assert_int_equal(first, 100);
    assert_int_equal(last, 102);
    assert_int_equal(st.truncated, 1);
    unlink(path);
}

static void test_flipped_byte_skips_one_chunk(void **state)
{
    (void)state;
    write_trace(3, 50);
    /* Find the second chunk header and flip a byte in its payload. */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    static unsigned char data[1 << 16];
    size_t len = fread(data, 1, sizeof(data), f);
    int found = 0;
    for (size_t i = MVZ_FILE_HEADER_LEN + 1; i + 4 < len; i++) {
        if (!memcmp(data + i, MVZ_CHUNK_MAGIC, 4)) {
            data[i + MVZ_CHUNK_HEADER_LEN + 6] ^= 0x5a;
            found = 1;
            break;
        }
    }
    assert_true(found);
    rewind(f);
    fwrite(data, 1, len, f);
    fclose(f);
    struct mvz_reader st;
    int first = 0, last = 0;
    int n = count_records(&first, &last, &st);
    assert_int_equal(n, 100);
    assert_int_equal(first, 100);
    assert_int_equal(last, 102);
    assert_int_equal(st.bad_chunks, 1);
    unlink(path);
}

static void write_raw(const void *p, size_t n)
{
    make_path();
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(p, 1, n, f);
    fclose(f);
}

static void test_rejects_non_traces(void **state)
{
    (void)state;
    struct mvz_reader r;
    char err[256];
    write_raw("", 0);
    assert_int_equal(mvz_reader_open(&r, path, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "empty"));
    write_raw("hello world, this is not a trace", 32);
    assert_int_equal(mvz_reader_open(&r, path, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not a memviz trace"));
    unsigned char future[16] = "MVZTRACE";
    future[8] = MVZ_FORMAT_MAJOR + 1;
    write_raw(future, sizeof(future));
    assert_int_equal(mvz_reader_open(&r, path, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not supported"));
    assert_int_equal(mvz_reader_open(&r, "/nonexistent/x.mvz", err, sizeof(err)), -1);
    unlink(path);
}

static void test_varints(void **state)
{
    (void)state;
    static const uint64_t values[] = {0, 1, 127, 128, 300, 1u << 31, UINT64_MAX};
    struct mvz_buf b = {0};
    for (size_t i = 0; i < sizeof(values) / sizeof(*values); i++) {
        mvz_put_uvarint(&b, values[i]);
        mvz_put_svarint(&b, -(int64_t)(values[i] >> 1));
    }
    struct mvz_cursor c = mvz_cursor_make(b.data, b.len);
    for (size_t i = 0; i < sizeof(values) / sizeof(*values); i++) {
        assert_true(mvz_get_uvarint(&c) == values[i]);
        assert_true(mvz_get_svarint(&c) == -(int64_t)(values[i] >> 1));
    }
    assert_int_equal(c.bad, 0);
    assert_int_equal(mvz_cursor_left(&c), 0);
    mvz_get_uvarint(&c); /* past the end: flagged, not a crash */
    assert_int_equal(c.bad, 1);
    mvz_buf_free(&b);
}

static void test_event_codec(void **state)
{
    (void)state;
    struct mvz_codec_event in[] = {
        {5, 1000, 0x7f0000001000, 64, 2, MVZ_OP_ALLOC, MVZ_E_MALLOC},
        {3, 900, 0x7f0000000010, 0, 0, MVZ_OP_FREE, MVZ_E_DELETE_ARRAY},
        {9, 5000, 0, 0, 0, MVZ_OP_NOP, MVZ_E_REALLOC},
        {10, 5001, 0x10, 1u << 30, 77777, MVZ_OP_ALLOC, MVZ_E_NEW_ARRAY_ALIGNED_NOTHROW},
    };
    struct mvz_buf b = {0};
    struct mvz_codec_state st = {0, 0, 0, 0, NULL};
    for (size_t i = 0; i < 4; i++)
        mvz_event_encode(&b, &st, &in[i]);
    struct mvz_cursor c = mvz_cursor_make(b.data, b.len);
    struct mvz_codec_state rs = {0, 0, 0, 0, NULL};
    for (size_t i = 0; i < 4; i++) {
        struct mvz_codec_event out;
        assert_int_equal(mvz_event_decode(&c, &rs, &out), 0);
        assert_true(out.seq == in[i].seq && out.ts == in[i].ts && out.op == in[i].op);
        assert_int_equal(out.entry, in[i].entry);
        if (in[i].op != MVZ_OP_NOP)
            assert_true(out.addr == in[i].addr);
        if (in[i].op == MVZ_OP_ALLOC)
            assert_true(out.size == in[i].size && out.stack == in[i].stack);
    }
    struct mvz_codec_event junk;
    uint8_t bad[] = {0xff, 0x01, 0x01, 0x01};
    struct mvz_cursor c2 = mvz_cursor_make(bad, sizeof(bad));
    struct mvz_codec_state s2 = {0, 0, 0, 0, NULL};
    assert_int_equal(mvz_event_decode(&c2, &s2, &junk), -1);
    mvz_buf_free(&b);
}

/* A detached batch is compressed in pieces with a call between them, and
 * what the calls queue (the agent's writer drains rings there) goes into
 * the next chunk; both chunks read back whole, with and without cuts. */
static struct mvz_chunk_writer *pieces_writer;
static int pieces_calls;

static void queue_between(void)
{
    uint8_t v = (uint8_t)pieces_calls++;
    struct mvz_buf b = {0};
    mvz_put_u8(&b, v);
    mvz_cw_record(pieces_writer, 102, &b);
    mvz_buf_free(&b);
}

static void test_compress_in_pieces(void **state)
{
    (void)state;
    struct mvz_chunk_writer w;
    int fd = open_trace(&w);
    pieces_writer = &w;
    pieces_calls = 0;
    struct mvz_buf b = {0};
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 300000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        mvz_put_u8(&b, (uint8_t)(x % 64));
    }
    size_t cuts[] = {100000, 250000};
    mvz_cw_record(&w, 100, &b);
    mvz_cw_record_cut(&w, 101, &b, cuts, sizeof(cuts) / sizeof(*cuts));
    assert_int_equal(write_batch(&w, queue_between), 0);
    /* Segments end at the cuts: about 400,000 bytes (the first record and
     * the second's first 100,000), 150,000 and 50,000; a call after each
     * 64 KiB piece but a segment's last: 6 + 2 + 0. */
    assert_int_equal(pieces_calls, 8);
    int queued = pieces_calls;
    assert_int_equal(mvz_cw_flush(&w), 0);
    mvz_cw_destroy(&w);
    close(fd);

    struct mvz_reader r;
    open_expecting_100_101(&r, path, &b);
    struct mvz_record rec;
    for (int i = 0; i < queued; i++) {
        assert_int_equal(mvz_reader_next(&r, &rec), 1);
        assert_int_equal(rec.kind, 102);
        assert_int_equal(rec.len, 1);
        assert_int_equal(rec.data[0], i);
    }
    assert_int_equal(mvz_reader_next(&r, &rec), 0);
    assert_int_equal(r.bad_chunks, 0);
    mvz_reader_close(&r);
    unlink(path);
    mvz_buf_free(&b);
}

/* Address references: a heap-like pattern (LIFO reuse, long-lived blocks,
 * frees far back) decodes to the same addresses, most of them through
 * references, in less space; a reference past the tables is rejected. */
static void test_event_refs(void **state)
{
    (void)state;
    enum { N = 20000 };
    static struct mvz_codec_event in[N];
    uint64_t live[512];
    size_t nlive = 0, n = 0;
    uint64_t next_addr = 0x5500000000, seed = 42;
    while (n < N) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(seed >> 33);
        if (nlive && (r % 3 == 0 || nlive == 512)) { /* free: mostly recent, sometimes old */
            size_t k = r % 7 == 0 ? (r >> 8) % nlive : nlive - 1;
            in[n++] = (struct mvz_codec_event){0, n, live[k], 0, 0, MVZ_OP_FREE, MVZ_E_FREE};
            live[k] = live[--nlive];
        } else { /* alloc: often reusing a just-freed address, like an allocator */
            uint64_t a =
                r % 2 && n && in[n - 1].op == MVZ_OP_FREE ? in[n - 1].addr : (next_addr += 48);
            live[nlive++] = a;
            in[n++] = (struct mvz_codec_event){0, n, a, 48, 3, MVZ_OP_ALLOC, MVZ_E_MALLOC};
        }
    }
    static uint32_t apos[MVZ_REFS_ALLOC_POS], fpos[MVZ_REFS_FREE_POS];
    static struct mvz_addr_refs enc, dec, none;
    enc.alloc_pos = apos;
    enc.free_pos = fpos;
    unsigned flags = MVZ_EVENTS_NO_KEYS | MVZ_EVENTS_ADDR_REFS;
    struct mvz_buf b = {0}, plain = {0};
    struct mvz_codec_state st = {0, 0, 0, flags, &enc}, pst = {0, 0, 0, MVZ_EVENTS_NO_KEYS, NULL};
    for (size_t i = 0; i < N; i++) {
        mvz_event_encode(&b, &st, &in[i]);
        mvz_event_encode(&plain, &pst, &in[i]);
    }
    size_t refs = 0;
    struct mvz_cursor c = mvz_cursor_make(b.data, b.len);
    struct mvz_codec_state rs = {0, 0, 0, flags, &dec};
    for (size_t i = 0; i < N; i++) {
        struct mvz_codec_event out;
        refs += (c.p[0] & MVZ_CODE_REF) != 0;
        assert_int_equal(mvz_event_decode(&c, &rs, &out), 0);
        assert_true(out.addr == in[i].addr && out.op == in[i].op);
    }
    assert_int_equal(mvz_cursor_left(&c), 0);
    assert_true(refs > N / 2);
    assert_true(b.len < plain.len);
    /* a FREE naming an allocation the (empty) tables do not have */
    uint8_t bad[] = {MVZ_OP_FREE | MVZ_E_FREE << 2 | MVZ_CODE_REF, 0, 5};
    struct mvz_cursor c2 = mvz_cursor_make(bad, sizeof(bad));
    struct mvz_codec_state s2 = {0, 0, 0, flags, &none};
    struct mvz_codec_event junk;
    assert_int_equal(mvz_event_decode(&c2, &s2, &junk), -1);
    mvz_buf_free(&b);
    mvz_buf_free(&plain);
}

/* The payload of a format-4 HEAP record without its header: the streams. */
static struct mvz_cursor heap_payload(struct mvz_buf *payload, const struct mvz_heap_out *o)
{
    payload->len = 0;
    mvz_heap_out_finish(o, payload);
    return mvz_cursor_make(payload->data, payload->len);
}

/* Every kind of code, for the layout test below. */
static void heap_sample(struct mvz_heap_out *o)
{
    static struct mvz_heap_state st;
    mvz_heap_state_reset(&st);
    mvz_heap_put_thread(o, &st, 7, 5);
    for (int i = 0; i < 200; i++) /* sizes of one to three varint bytes */
        mvz_heap_put_alloc(o, &st, 70000ull * i, MVZ_E_MALLOC, 1u << (i % 20), (uint32_t)i);
    mvz_heap_put_free(o, &st, 1, MVZ_E_FREE, 7, 204, 205);
    mvz_heap_put_free(o, &st, 1, MVZ_E_FREE, 7, 10, 205);
    mvz_heap_put_free(o, &st, 1, MVZ_E_FREE, 7, 11, 205);
    mvz_heap_put_thread(o, &st, 9, 0);
    mvz_heap_put_free(o, &st, 2, MVZ_E_FREE, 7, 100, 205);
    mvz_heap_put_free(o, &st, 2, MVZ_E_FREE, 11, 123456, 200000);
    mvz_heap_put_free(o, &st, 2, MVZ_E_FREE, 11, 199999, 200000);
    mvz_heap_put_head(o, &st, MVZ_HEAP_FREE_UNKNOWN, MVZ_E_FREE, 3);
    mvz_heap_put_alloc_reused(o, &st, 4, MVZ_E_NEW, 8, 4, 11, 99);
    mvz_heap_put_thread(o, &st, 11, 0);
    mvz_heap_put_alloc(o, &st, 5, MVZ_E_MALLOC, 32, 5);
}

/* The writer writes interleaved records straight, and interleaves a trial
 * record's streams: both must give the same bytes, which decode (as a
 * HEAP record) to the same events as the streams (HEAP_STREAMS). */
static void test_heap_layouts(void **state)
{
    (void)state;
    static struct mvz_heap_out o, direct;
    static struct mvz_heap_state a, b;
    struct mvz_buf inter = {0}, straight = {0}, streams = {0};
    mvz_heap_out_start(&o, 1);
    heap_sample(&o);
    mvz_heap_out_finish(&o, &streams);
    mvz_heap_out_interleave(&o, &inter);
    mvz_heap_out_start(&direct, 0);
    heap_sample(&direct);
    mvz_heap_out_finish(&direct, &straight);
    assert_int_equal(inter.len, straight.len);
    assert_memory_equal(inter.data, straight.data, inter.len);
    assert_true(streams.len != inter.len);

    struct mvz_cursor cs = mvz_cursor_make(streams.data, streams.len);
    struct mvz_cursor ci = mvz_cursor_make(inter.data, inter.len);
    static struct mvz_heap_in in_s, in_i;
    assert_int_equal(mvz_heap_in_open(&in_s, &cs, 4, 1), 0);
    assert_int_equal(mvz_heap_in_open(&in_i, &ci, 4, 0), 0);
    mvz_heap_state_reset(&a);
    mvz_heap_state_reset(&b);
    int n = 0;
    for (;; n++) {
        struct mvz_heap_event es, ei;
        int rs = mvz_heap_decode(&in_s, &a, &es), ri = mvz_heap_decode(&in_i, &b, &ei);
        assert_int_equal(rs, ri);
        if (rs < 0)
            break;
        assert_true(es.op == ei.op && es.tid == ei.tid && es.block == ei.block &&
                    es.size == ei.size && es.stack == ei.stack && es.ts == ei.ts);
    }
    assert_int_equal(n, 209); /* every event, then the end of the record */
    for (int i = 0; i < MVZ_HS_COUNT; i++)
        for (int j = 0; j < MVZ_HS_PARTS; j++) {
            mvz_buf_free(&o.part[i][j]);
            mvz_buf_free(&direct.part[i][j]);
        }
    mvz_buf_free(&inter);
    mvz_buf_free(&straight);
    mvz_buf_free(&streams);
}

/* HEAP records: every way of naming a block decodes to the block the
 * encoder meant, and the encoder picks the short form. */
static void test_heap_codec(void **state)
{
    (void)state;
    static struct mvz_heap_state enc, dec;
    static struct mvz_heap_out o;
    struct mvz_buf payload = {0};
    mvz_heap_state_reset(&enc);
    mvz_heap_out_start(&o, 1);
    /* thread 7 (5 allocations before this record) allocates 4 blocks */
    assert_int_equal(mvz_heap_put_thread(&o, &enc, 7, 5), 0);
    for (int i = 0; i < 4; i++)
        mvz_heap_put_alloc(&o, &enc, 100000ull * i, MVZ_E_MALLOC, 16 + i, 3);
    size_t before = o.s[MVZ_HS_CODE][0]->len;
    mvz_heap_put_free(&o, &enc, 400000, MVZ_E_FREE, 7, 8, 9); /* its latest: FREE, age 1 */
    assert_int_equal(o.s[MVZ_HS_CODE][0]->data[before] & MVZ_HEAP_OP_MASK, MVZ_HEAP_FREE);
    mvz_heap_put_free(&o, &enc, 400000, MVZ_E_FREE, 7, 5, 9); /* age 4 */
    before = o.s[MVZ_HS_CODE][0]->len;
    mvz_heap_put_free(&o, &enc, 400000, MVZ_E_FREE, 7, 6, 9); /* the next one made */
    assert_int_equal(o.s[MVZ_HS_CODE][0]->data[before] & MVZ_HEAP_OP_MASK, MVZ_HEAP_FREE_NEXT);
    /* thread 9 frees 7's block 7 (age 1 in 7's allocations), then two
     * blocks of thread 11, which the record had not named: the first
     * release names it, the second is by age */
    assert_int_equal(mvz_heap_put_thread(&o, &enc, 9, 0), 0);
    mvz_heap_put_free(&o, &enc, 500000, MVZ_E_FREE, 7, 7, 9);
    mvz_heap_put_free(&o, &enc, 500000, MVZ_E_FREE, 11, 123456, 200000);
    assert_int_equal(enc.nthreads, 3);
    before = o.s[MVZ_HS_REF][0]->len;
    mvz_heap_put_free(&o, &enc, 500000, MVZ_E_FREE, 11, 199999, 200000);
    assert_int_equal(o.s[MVZ_HS_REF][0]->len - before, 1); /* age 1: one byte */
    /* a block of a thread the record named, with a serial beyond what the
     * record knows of it (a reused name): by thread id, naming nothing */
    mvz_heap_put_free(&o, &enc, 500000, MVZ_E_FREE, 7, 500, 501);
    assert_int_equal(enc.nthreads, 3);
    mvz_heap_put_head(&o, &enc, MVZ_HEAP_FREE_UNKNOWN, MVZ_E_FREE, 500000);
    mvz_heap_put_alloc_reused(&o, &enc, 600000, MVZ_E_NEW, 8, 4, 11, 99);
    /* thread 11 itself, named by the release above, allocates: its serial
     * goes on from what the release said */
    assert_int_equal(mvz_heap_put_thread(&o, &enc, 11, 0), 0);
    mvz_heap_put_alloc(&o, &enc, 700000, MVZ_E_MALLOC, 32, 5);

    const struct {
        uint8_t op;
        uint32_t tid;
        uint64_t block;
    } want[] = {
        {MVZ_HEAP_ALLOC, 7, mvz_heap_block(7, 5)},
        {MVZ_HEAP_ALLOC, 7, mvz_heap_block(7, 6)},
        {MVZ_HEAP_ALLOC, 7, mvz_heap_block(7, 7)},
        {MVZ_HEAP_ALLOC, 7, mvz_heap_block(7, 8)},
        {MVZ_HEAP_FREE, 7, mvz_heap_block(7, 8)},
        {MVZ_HEAP_FREE, 7, mvz_heap_block(7, 5)},
        {MVZ_HEAP_FREE_NEXT, 7, mvz_heap_block(7, 6)},
        {MVZ_HEAP_FREE_OTHER, 9, mvz_heap_block(7, 7)},
        {MVZ_HEAP_FREE_OTHER, 9, mvz_heap_block(11, 123456)},
        {MVZ_HEAP_FREE_OTHER, 9, mvz_heap_block(11, 199999)},
        {MVZ_HEAP_FREE_OTHER, 9, mvz_heap_block(7, 500)},
        {MVZ_HEAP_FREE_UNKNOWN, 9, 0},
        {MVZ_HEAP_ALLOC_REUSED, 9, mvz_heap_block(11, 99)},
        {MVZ_HEAP_ALLOC, 11, mvz_heap_block(11, 200000)},
    };
    struct mvz_cursor c = heap_payload(&payload, &o);
    struct mvz_heap_in in;
    assert_int_equal(mvz_heap_in_open(&in, &c, 4, 1), 0);
    mvz_heap_state_reset(&dec);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct mvz_heap_event e;
        assert_int_equal(mvz_heap_decode(&in, &dec, &e), 0);
        assert_int_equal(e.op, want[i].op);
        assert_int_equal(e.tid, want[i].tid);
        assert_int_equal(e.block, want[i].block);
        if (i < 4) {
            assert_int_equal(e.size, 16 + i);
            assert_int_equal(e.stack, 3);
            /* times are kept in 2^16 ns units */
            assert_int_equal(e.ts, (100000ull * i) >> 16 << 16);
        }
    }
    for (int i = 0; i < MVZ_HS_COUNT; i++)
        for (int j = 0; j < MVZ_HS_PARTS; j++)
            assert_int_equal(mvz_cursor_left(&in.c[i][j]), 0);

    /* part lengths beyond the payload */
    uint8_t long_stream[MVZ_HS_COUNT * MVZ_HS_PARTS] = {2};
    c = mvz_cursor_make(long_stream, sizeof(long_stream));
    assert_int_equal(mvz_heap_in_open(&in, &c, 4, 1), -1);

    /* format 3, one stream: damage is an event before any THREAD code, a
     * release older than the thread's first allocation, an unknown op */
    const uint8_t no_thread[] = {MVZ_HEAP_ALLOC, 0, 16, 3};
    const uint8_t too_old[] = {MVZ_HEAP_THREAD, 0, 7, 2, MVZ_HEAP_FREE, 0, 3};
    const uint8_t bad_op[] = {MVZ_HEAP_THREAD, 0, 7, 2, 6, 0};
    /* a thread id of 2^24: block names hold 24 bits of it */
    const uint8_t big_tid[] = {MVZ_HEAP_THREAD, 0, 0x80, 0x80, 0x80, 0x08, 0,
                               MVZ_HEAP_ALLOC,  0, 16,   3};
    const uint8_t *bad[] = {no_thread, too_old, bad_op, big_tid};
    size_t bad_len[] = {sizeof(no_thread), sizeof(too_old), sizeof(bad_op), sizeof(big_tid)};
    for (int i = 0; i < 4; i++) {
        struct mvz_heap_event e;
        c = mvz_cursor_make(bad[i], bad_len[i]);
        assert_int_equal(mvz_heap_in_open(&in, &c, 3, 0), 0);
        mvz_heap_state_reset(&dec);
        assert_int_equal(mvz_heap_decode(&in, &dec, &e), -1);
    }
    /* format 3: a release by thread id and serial, names nothing */
    const uint8_t v3[] = {
        MVZ_HEAP_THREAD, 0,   7, 2, MVZ_HEAP_FREE_OTHER | MVZ_E_FREE << 3, 0, 1, 11,
        0x80 | 0x40,     0x01};
    c = mvz_cursor_make(v3, sizeof(v3));
    assert_int_equal(mvz_heap_in_open(&in, &c, 3, 0), 0);
    mvz_heap_state_reset(&dec);
    struct mvz_heap_event e;
    assert_int_equal(mvz_heap_decode(&in, &dec, &e), 0);
    assert_int_equal(e.block, mvz_heap_block(11, 0xc0));
    assert_int_equal(dec.nthreads, 1);

    /* a record names at most MVZ_HEAP_MAX_THREADS threads */
    mvz_heap_state_reset(&enc);
    for (uint32_t t = 0; t < MVZ_HEAP_MAX_THREADS; t++)
        assert_int_equal(mvz_heap_put_thread(&o, &enc, t + 1, 0), 0);
    assert_int_equal(mvz_heap_put_thread(&o, &enc, 100000, 0), -1);
    for (int i = 0; i < MVZ_HS_COUNT; i++)
        for (int j = 0; j < MVZ_HS_PARTS; j++)
            mvz_buf_free(&o.part[i][j]);
    mvz_buf_free(&payload);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_cut_blocks),
        cmocka_unit_test(test_compress_in_pieces),
        cmocka_unit_test(test_event_refs),
        cmocka_unit_test(test_truncated_keeps_complete_chunks),
        cmocka_unit_test(test_flipped_byte_skips_one_chunk),
        cmocka_unit_test(test_rejects_non_traces),
        cmocka_unit_test(test_varints),
        cmocka_unit_test(test_event_codec),
        cmocka_unit_test(test_heap_codec),
        cmocka_unit_test(test_heap_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
