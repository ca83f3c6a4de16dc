/*
 * fuzz_trace.c - libFuzzer target for every part of the memviz CLI that
 * reads untrusted trace bytes: the chunk reader (src/trace/reader.c), the
 * record decoder and replay (src/analysis/replay.c), the profile, the
 * symbolization of every site with elfutils, and the printers.
 *
 * Each input is a trace file. It is written to a memfd and analysed exactly
 * as `memviz report --json /proc/self/fd/N` would (cmd_report itself, with
 * its output sent to /dev/null); then one more command, chosen by a hash of
 * the input so that a given input always runs the same code, reads it too:
 * the text report with trees, windows and per-thread tables, timeline,
 * diff, or one of the exports. An input may make the CLI report an error;
 * it must never crash, hang, use unbounded memory or leak (libFuzzer with
 * AddressSanitizer, UndefinedBehaviorSanitizer and LeakSanitizer checks).
 *
 * Chunks are zstd frames with a checksum, so byte flips on a trace mostly
 * exercise the damage handling of the chunk reader. A custom mutator
 * therefore also decompresses a chunk, mutates its records (a payload, a
 * kind, a record duplicated, dropped or moved) and compresses it again, so
 * that mutated records reach the decoders; chunks are duplicated, dropped,
 * swapped and taken from other inputs too. Inputs stay trace files: the
 * corpus can be read by `memviz report` as it is.
 *
 * Separate debug files (/usr/lib/debug) are hidden from elfutils (see
 * open() below): decompressing libc's DWARF again for every input took 90%
 * of the time, and it is trusted system data, not trace input. The test
 * programs' own DWARF still goes through every symbolization path. Set
 * MVZ_FUZZ_SYSTEM_DEBUGINFO=1 to keep them.
 *
 *     make fuzz-build && build/fuzz/fuzz_trace tests/fuzz/corpus
 *
 * tests/fuzz/fuzz.mk has the replay run by `make test` and the long run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zstd.h>

#include "cmd/cmd.h"
#include "trace/buf.h"
#include "trace/format.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1, const uint8_t *data2,
                                 size_t size2, uint8_t *out, size_t max_out_size,
                                 unsigned int seed);

static int trace_fd = -1;
static char trace_path[64];
static int hide_debug_files = 1;

/* Interposes open(2) for elfutils, which looks for separate debug files
 * with it. */
int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if (hide_debug_files && strncmp(path, "/usr/lib/debug/", 15) == 0) {
        errno = ENOENT;
        return -1;
    }
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

/* The second command of each input: its words up to NULL, then the
 * trace's path (twice for diff, which compares the trace with itself). */
struct variant {
    int (*cmd)(int argc, char **argv);
    int paths;
    const char *args[10];
};

static const struct variant variants[] = {
    {cmd_report, 1, {"report", "--tree", "top-down", "--threads", "--histogram"}},
    {cmd_report, 1, {"report", "--tree", "bottom-up", "--min-percent", "0", "--by", "function"}},
    {cmd_report, 1, {"report", "--json", "--from", "0.0001", "--to", "0.01", "--by", "file"}},
    {cmd_report, 1, {"report", "--json", "--at", "peak", "--threads", "--histogram"}},
    {cmd_report, 1, {"report", "--at", "0.001", "--by", "module", "--top", "3"}},
    {cmd_timeline, 1, {"timeline", "--json", "--points", "50"}},
    {cmd_timeline, 1, {"timeline", "--points", "40", "--height", "5"}},
    {cmd_diff, 2, {"diff", "--json"}},
    {cmd_export, 1, {"export", "--format", "pprof", "-o", "/dev/null"}},
    {cmd_export, 1, {"export", "--format", "collapsed", "--cost", "leaked", "-o", "/dev/null"}},
    {cmd_export, 1, {"export", "--format", "massif", "-o", "/dev/null"}},
    {cmd_export, 1, {"export", "--format", "callgrind", "-o", "/dev/null"}},
    {cmd_export, 1, {"export", "--format", "speedscope", "-o", "/dev/null"}},
    {cmd_export, 1, {"export", "--format", "chrome", "-o", "/dev/null"}},
    {cmd_html, 1, {"html", "-o", "/dev/null"}}, /* every UI document (src/ui) */
    {cmd_callgraph, 1, {"callgraph", "--json", "--depth", "30"}},
    {cmd_callgraph, 1, {"callgraph", "--depth", "12", "--function", "main"}},
    {cmd_export, 1, {"export", "--format", "dot", "-o", "/dev/null"}},
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))
#define MAX_ARGS (sizeof(variants[0].args) / sizeof(variants[0].args[0]))

static void run_variant(const struct variant *v)
{
    char *argv[MAX_ARGS + 3];
    int argc = 0;
    for (size_t i = 0; i < MAX_ARGS && v->args[i]; i++)
        argv[argc++] = (char *)v->args[i];
    for (int i = 0; i < v->paths; i++)
        argv[argc++] = trace_path;
    argv[argc] = NULL;
    v->cmd(argc, argv);
}

static uint64_t fnv1a(const uint8_t *data, size_t size)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ull;
    return h;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* The commands print to stdout: nobody reads it here. */
    if (!freopen("/dev/null", "w", stdout))
        abort();
    trace_fd = memfd_create("fuzz_trace.mvz", MFD_CLOEXEC);
    if (trace_fd < 0)
        abort();
    snprintf(trace_path, sizeof(trace_path), "/proc/self/fd/%d", trace_fd);
    /* Symbolization must never wait on the network. */
    unsetenv("DEBUGINFOD_URLS");
    const char *e = getenv("MVZ_FUZZ_SYSTEM_DEBUGINFO");
    hide_debug_files = !(e && *e && strcmp(e, "0") != 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (ftruncate(trace_fd, 0) < 0)
        abort();
    for (size_t done = 0; done < size;) {
        ssize_t n = pwrite(trace_fd, data + done, size - done, (off_t)done);
        if (n <= 0)
            abort();
        done += (size_t)n;
    }
    char *argv[] = {"report", "--json", trace_path, NULL};
    cmd_report(3, argv);
    run_variant(&variants[fnv1a(data, size) % NVARIANTS]);
    return 0;
}

/* ---- structure-aware mutation ---- */

#define MAX_CHUNKS 256
#define MAX_RECORDS 4096
#define MAX_RAW (1u << 20) /* chunks decompressing to more are left alone */
#define MAX_GROWTH 512     /* bytes a mutated payload may grow by */
#define MAX_OUT (1u << 21) /* bound on the file the mutator assembles */

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return n ? (uint32_t)(rng % n) : 0;
}

struct span {
    size_t off, len;
};

/* The chunks of a trace that decode as chunks (header, frame, sizes);
 * whatever follows the last one is the tail. Returns 0 when data is not a
 * trace at all. */
struct layout {
    struct span chunk[MAX_CHUNKS];
    size_t nchunks, tail;
};

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static int parse_layout(const uint8_t *data, size_t size, struct layout *l)
{
    if (size < MVZ_FILE_HEADER_LEN || memcmp(data, MVZ_FILE_MAGIC, MVZ_FILE_MAGIC_LEN) != 0)
        return 0;
    l->nchunks = 0;
    size_t pos = MVZ_FILE_HEADER_LEN;
    while (l->nchunks < MAX_CHUNKS && size - pos >= MVZ_CHUNK_HEADER_LEN &&
           memcmp(data + pos, MVZ_CHUNK_MAGIC, 4) == 0) {
        uint32_t clen = get_le32(data + pos + 4), rlen = get_le32(data + pos + 8);
        if (clen > size - pos - MVZ_CHUNK_HEADER_LEN || rlen > MAX_RAW ||
            ZSTD_getFrameContentSize(data + pos + MVZ_CHUNK_HEADER_LEN, clen) != rlen)
            break;
        l->chunk[l->nchunks++] = (struct span){pos, MVZ_CHUNK_HEADER_LEN + clen};
        pos += MVZ_CHUNK_HEADER_LEN + clen;
    }
    l->tail = pos;
    return 1;
}

static uint8_t raw_a[MAX_RAW + MAX_GROWTH + 16], raw_b[MAX_RAW + 2 * MAX_GROWTH + 32];
static uint8_t chunk_buf[MVZ_CHUNK_HEADER_LEN + MAX_RAW + (MAX_RAW >> 7) + 1024];
static uint8_t out_buf[MAX_OUT];
static uint8_t payload[MAX_RAW + MAX_GROWTH];

/* Decompresses chunk c of data into raw_a; returns its length or -1. */
static long decompress_chunk(const uint8_t *data, const struct span *c)
{
    uint32_t rlen = get_le32(data + c->off + 8);
    size_t n = ZSTD_decompress(raw_a, sizeof(raw_a), data + c->off + MVZ_CHUNK_HEADER_LEN,
                               c->len - MVZ_CHUNK_HEADER_LEN);
    if (ZSTD_isError(n) || n != rlen)
        return -1;
    return (long)n;
}

/* Compresses raw[0..n) into chunk_buf as a whole chunk; returns its
 * length or 0. */
static size_t compress_chunk(const uint8_t *raw, size_t n)
{
    static ZSTD_CCtx *cctx;
    if (!cctx) {
        cctx = ZSTD_createCCtx();
        if (!cctx)
            return 0;
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    }
    size_t c = ZSTD_compress2(cctx, chunk_buf + MVZ_CHUNK_HEADER_LEN,
                              sizeof(chunk_buf) - MVZ_CHUNK_HEADER_LEN, raw, n);
    if (ZSTD_isError(c))
        return 0;
    memcpy(chunk_buf, MVZ_CHUNK_MAGIC, 4);
    put_le32(chunk_buf + 4, (uint32_t)c);
    put_le32(chunk_buf + 8, (uint32_t)n);
    return MVZ_CHUNK_HEADER_LEN + c;
}

/* The records of a decompressed chunk: where each starts and where its
 * payload starts and ends. Bytes after the last whole record are junk. */
struct rec {
    size_t off, data, end;
};
static struct rec recs[MAX_RECORDS];

static size_t parse_records(const uint8_t *raw, size_t len, size_t *junk)
{
    size_t n = 0, pos = 0;
    while (n < MAX_RECORDS && len - pos >= 2) {
        size_t p = pos + 1;
        uint64_t plen = 0;
        unsigned shift = 0;
        while (p < len && shift < 64) {
            plen |= (uint64_t)(raw[p] & 0x7f) << shift;
            shift += 7;
            if (!(raw[p++] & 0x80))
                break;
        }
        if (p > len || (p == len && (raw[p - 1] & 0x80)) || plen > len - p)
            break;
        recs[n++] = (struct rec){pos, p, p + (size_t)plen};
        pos = p + (size_t)plen;
    }
    *junk = pos;
    return n;
}

static const uint8_t kinds[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 32, 33, 34, 0, 255};

/* Mutates the records in raw_a[0..len) into raw_b; returns the new length,
 * or -1 when nothing could be done. */
static long mutate_records(size_t len)
{
    size_t junk;
    size_t n = parse_records(raw_a, len, &junk);
    size_t o = 0;
    if (n == 0 || rnd(10) == 0) { /* damage the framing itself */
        memcpy(raw_b, raw_a, len);
        return (long)LLVMFuzzerMutate(raw_b, len, len + MAX_GROWTH);
    }
    size_t i = rnd((uint32_t)n), j = rnd((uint32_t)n);
    switch (rnd(8)) {
    case 0: /* a kind changes */
        memcpy(raw_b, raw_a, len);
        raw_b[recs[i].off] = kinds[rnd(sizeof(kinds))];
        return (long)len;
    case 1: /* record i appears again before record j */
        if (len + (recs[i].end - recs[i].off) > MAX_RAW)
            return -1;
        memcpy(raw_b, raw_a, recs[j].off);
        o = recs[j].off;
        memcpy(raw_b + o, raw_a + recs[i].off, recs[i].end - recs[i].off);
        o += recs[i].end - recs[i].off;
        memcpy(raw_b + o, raw_a + recs[j].off, len - recs[j].off);
        return (long)(o + len - recs[j].off);
    case 2: /* record i is lost */
        memcpy(raw_b, raw_a, recs[i].off);
        memcpy(raw_b + recs[i].off, raw_a + recs[i].end, len - recs[i].end);
        return (long)(len - (recs[i].end - recs[i].off));
    case 3: /* records i and j change places */
        if (i > j) {
            size_t t = i;
            i = j;
            j = t;
        }
        if (i == j)
            return -1;
        memcpy(raw_b, raw_a, recs[i].off);
        o = recs[i].off;
        memcpy(raw_b + o, raw_a + recs[j].off, recs[j].end - recs[j].off);
        o += recs[j].end - recs[j].off;
        memcpy(raw_b + o, raw_a + recs[i].end, recs[j].off - recs[i].end);
        o += recs[j].off - recs[i].end;
        memcpy(raw_b + o, raw_a + recs[i].off, recs[i].end - recs[i].off);
        o += recs[i].end - recs[i].off;
        memcpy(raw_b + o, raw_a + recs[j].end, len - recs[j].end);
        return (long)(o + len - recs[j].end);
    default: { /* a payload changes, its length follows */
        size_t plen = recs[i].end - recs[i].data;
        memcpy(payload, raw_a + recs[i].data, plen);
        size_t m = LLVMFuzzerMutate(payload, plen, plen + MAX_GROWTH);
        memcpy(raw_b, raw_a, recs[i].off + 1);
        o = recs[i].off + 1;
        o += mvz_uvarint_encode(raw_b + o, m);
        memcpy(raw_b + o, payload, m);
        o += m;
        memcpy(raw_b + o, raw_a + recs[i].end, len - recs[i].end);
        return (long)(o + len - recs[i].end);
    }
    }
}

/* Assembles into out_buf: data[0..cut), then `ins` (ins_len bytes), then
 * data[resume..size). Returns the length, or 0 when over max. */
static size_t assemble(const uint8_t *data, size_t size, size_t cut, const uint8_t *ins,
                       size_t ins_len, size_t resume, size_t max)
{
    size_t n = cut + ins_len + (size - resume);
    if (n > max || n > sizeof(out_buf))
        return 0;
    memcpy(out_buf, data, cut);
    if (ins_len)
        memcpy(out_buf + cut, ins, ins_len);
    memcpy(out_buf + cut + ins_len, data + resume, size - resume);
    return n;
}

static size_t mutate_trace(const uint8_t *data, size_t size, size_t max_size)
{
    static struct layout l;
    if (!parse_layout(data, size, &l) || l.nchunks == 0 || rnd(8) == 0)
        return 0; /* plain byte mutation */
    const struct span *c = &l.chunk[rnd((uint32_t)l.nchunks)];
    const struct span *d = &l.chunk[rnd((uint32_t)l.nchunks)];
    switch (rnd(10)) {
    case 0: /* a chunk twice */
        return assemble(data, size, d->off, data + c->off, c->len, d->off, max_size);
    case 1: /* a chunk lost */
        return assemble(data, size, c->off, NULL, 0, c->off + c->len, max_size);
    case 2: /* the file cut short */
        return assemble(data, size, rnd((uint32_t)size) + 1, NULL, 0, size, max_size);
    default: { /* the records of a chunk */
        long len = decompress_chunk(data, c);
        if (len < 0)
            return 0;
        long m = mutate_records((size_t)len);
        size_t clen = m >= 0 ? compress_chunk(raw_b, (size_t)m) : 0;
        if (!clen)
            return 0;
        return assemble(data, size, c->off, chunk_buf, clen, c->off + c->len, max_size);
    }
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    rng = (uint64_t)seed * 0x9E3779B97F4A7C15ull + 1;
    size_t n = mutate_trace(data, size, max_size);
    if (n == 0)
        return LLVMFuzzerMutate(data, size, max_size);
    memcpy(data, out_buf, n);
    return n;
}

/* Inserts a chunk of the second input among the chunks of the first. */
size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1, const uint8_t *data2,
                                 size_t size2, uint8_t *out, size_t max_out_size, unsigned int seed)
{
    static struct layout l1, l2;
    rng = (uint64_t)seed * 0x9E3779B97F4A7C15ull + 1;
    if (!parse_layout(data1, size1, &l1) || !parse_layout(data2, size2, &l2) || !l2.nchunks)
        return 0;
    const struct span *c = &l2.chunk[rnd((uint32_t)l2.nchunks)];
    size_t at = l1.nchunks ? l1.chunk[rnd((uint32_t)l1.nchunks)].off : l1.tail;
    size_t n = assemble(data1, size1, at, data2 + c->off, c->len, at, max_out_size);
    if (n)
        memcpy(out, out_buf, n);
    return n;
}
