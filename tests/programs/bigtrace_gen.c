/*
 * bigtrace_gen - writes a synthetic memviz trace larger than 4 GiB, whose
 * heap events are known exactly, for tests/integration/cases_bigtrace.py
 * (a trace that big must be written and read back completely).
 *
 *   bigtrace_gen OUT.mvz PAD_CHUNKS
 *
 * It uses the agent's own chunk writer (src/trace/chunk_writer.c) and event
 * encoder, as tests/unit/test_profile.c does, and is not itself profiled.
 * The trace: PROCESS, a MODULE_LOAD of this executable (so that the stacks,
 * made of addresses inside the functions named below, symbolize to them),
 * one THREAD (tid 4243), then
 *   early phase, one chunk:
 *     early_keep:   1,000 x malloc(1000) at 0x10000000 + i * 0x1000, kept
 *     early_temp:   1,000 x (calloc(8, 8) = 64 bytes, freed at once): temporary
 *   PAD_CHUNKS times (the middle phase):
 *     a chunk holding one record of kind PAD_KIND (unknown to readers, who
 *     must skip it) with PAD_BYTES of random, incompressible bytes: the chunk
 *     is as large in the file as in memory (zstd stores it raw); then
 *     middle_churn: 1,000 x (malloc(100), freed at once) in a NO_KEYS
 *     EVENTS record (keyless, ordered by its place in the file)
 *   late phase, one chunk, written after the last padding:
 *     late_peak:    16 x malloc(1 MiB); the 16th makes the peak, 1,000,000 +
 *                   16 MiB = 17,777,216 bytes; then the first 8 are freed
 *     late_leak:    7 x malloc(4321), kept
 *     the first 400 early_keep blocks are freed (blocks allocated before the
 *     4 GiB mark, released after it)
 *   EXIT (returned from main, status 0) and END.
 * Event n (counted from 0 over the whole trace) happens at n microseconds;
 * EXIT and END come 1 us after the last event. Keyed events carry keys
 * 1, 2, ...; a WATERMARK follows every EVENTS record.
 *
 * On stdout: "bigtrace: chunks C events E pad_offset P pad_len N
 * late_offset L size S": the file offset P and length N of the last padding
 * chunk, the offset L at which the late phase's chunk starts, the file size S.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace/chunk_writer.h"
#include "trace/event_codec.h"
#include "trace/format.h"

#define TID 4243
#define PAD_KIND 63                     /* no record kind: readers skip it */
#define PAD_BYTES ((64u << 20) - 4096u) /* one padding record per chunk */
#define MIB (1u << 20)

static struct mvz_chunk_writer w;
static uint64_t next_index; /* events written so far (also their time in us) */
static uint64_t key;        /* the last key given to an event */
static uint64_t chunks;

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void flush(void)
{
    if (mvz_cw_flush(&w) < 0)
        die("bigtrace_gen: write");
    chunks++;
}

static void put_watermark(uint64_t mark)
{
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, mark);
    mvz_cw_record(&w, MVZ_REC_WATERMARK, &b);
    mvz_buf_free(&b);
}

/* A batch of events of thread TID; keyed events get the next keys. */
struct batch {
    struct mvz_codec_event ev[4096];
    unsigned n;
};

static void add(struct batch *bt, int op, int entry, uint64_t addr, uint64_t size, uint32_t stack)
{
    struct mvz_codec_event *e = &bt->ev[bt->n++];
    e->seq = 0;
    e->ts = (next_index + bt->n - 1) * 1000;
    e->addr = addr;
    e->size = size;
    e->stack = stack;
    e->op = (uint8_t)op;
    e->entry = (uint8_t)entry;
}

static void put_batch(struct batch *bt, unsigned flags)
{
    struct mvz_buf b = {0};
    struct mvz_codec_state st = {.flags = flags};
    mvz_put_uvarint(&b, TID);
    mvz_put_uvarint(&b, next_index);
    mvz_put_uvarint(&b, bt->n);
    mvz_put_uvarint(&b, flags);
    for (unsigned i = 0; i < bt->n; i++) {
        if (!(flags & MVZ_EVENTS_NO_KEYS))
            bt->ev[i].seq = ++key;
        mvz_event_encode(&b, &st, &bt->ev[i]);
    }
    mvz_cw_record(&w, MVZ_REC_EVENTS, &b);
    mvz_buf_free(&b);
    next_index += bt->n;
    bt->n = 0;
    /* Keyless events take the previous watermark as their key; the next
     * watermark must be above it to release them. */
    if (flags & MVZ_EVENTS_NO_KEYS)
        key++;
    put_watermark(key + 1);
}

/* ---- the functions the stacks name ---- */
static uintptr_t inside(void (*fn)(void))
{
    return (uintptr_t)fn + 4; /* a "return address" within the function */
}

#define SITE(name)                                                                                 \
    __attribute__((noinline)) void name(void)                                                      \
    {                                                                                              \
        __asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");                                \
    }
SITE(early_keep)
SITE(early_temp)
SITE(middle_churn)
SITE(late_peak)
SITE(late_leak)

enum { S_EARLY_KEEP = 2, S_EARLY_TEMP, S_MIDDLE, S_LATE_PEAK, S_LATE_LEAK };

int main(int argc, char **argv);

static void put_stack(uint32_t id, void (*site)(void))
{
    uintptr_t frames[2] = {inside(site), (uintptr_t)main + 4};
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, id);
    mvz_put_uvarint(&b, 1); /* generation */
    mvz_put_uvarint(&b, 2);
    mvz_put_uvarint(&b, 0); /* no base */
    mvz_put_uvarint(&b, 0);
    uintptr_t prev = 0;
    for (int i = 0; i < 2; i++) {
        mvz_put_svarint(&b, (int64_t)(frames[i] - prev));
        prev = frames[i];
    }
    mvz_cw_record(&w, MVZ_REC_STACK, &b);
    mvz_buf_free(&b);
}

static void put_process(int argc, char **argv, const char *exe)
{
    struct mvz_buf b = {0};
    char cwd[4096] = "/";
    if (!getcwd(cwd, sizeof(cwd)))
        strcpy(cwd, "/");
    mvz_put_uvarint(&b, 4242); /* pid */
    mvz_put_uvarint(&b, 1);    /* ppid */
    mvz_put_uvarint(&b, 0);    /* realtime start */
    mvz_put_uvarint(&b, 0);    /* monotonic start */
    mvz_put_uvarint(&b, 4096); /* page size */
    mvz_put_uvarint(&b, 256);  /* depth */
    mvz_put_uvarint(&b, 0);    /* first image */
    mvz_put_str(&b, "");
    mvz_put_str(&b, exe);
    mvz_put_str(&b, cwd);
    mvz_put_uvarint(&b, (uint64_t)argc);
    for (int i = 0; i < argc; i++)
        mvz_put_str(&b, argv[i]);
    mvz_cw_record(&w, MVZ_REC_PROCESS, &b);
    mvz_buf_free(&b);
}

/* MODULE_LOAD of the main executable (the first object dl_iterate_phdr
 * reports), so that the frames above symbolize. */
static int put_self(struct dl_phdr_info *info, size_t size, void *exe)
{
    (void)size;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < lo)
            lo = start;
        if (start + ph->p_memsz > hi)
            hi = start + ph->p_memsz;
    }
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, 1); /* module id */
    mvz_put_uvarint(&b, 1); /* generation */
    mvz_put_uvarint(&b, info->dlpi_addr);
    mvz_put_uvarint(&b, lo);
    mvz_put_uvarint(&b, hi);
    mvz_put_str(&b, exe);
    mvz_put_uvarint(&b, 0); /* no build-id: the path is enough */
    mvz_cw_record(&w, MVZ_REC_MODULE_LOAD, &b);
    mvz_buf_free(&b);
    return 1; /* the first object only */
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bigtrace_gen OUT.mvz PAD_CHUNKS\n");
        return 2;
    }
    long pad_chunks = atol(argv[2]);
    if (pad_chunks < 0)
        return 2;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        die("bigtrace_gen: /proc/self/exe");
    exe[n] = 0;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        die(argv[1]);
    if (mvz_cw_init(&w, fd) < 0 || mvz_cw_write_header(&w) < 0)
        die("bigtrace_gen: header");

    put_process(argc, argv, exe);
    dl_iterate_phdr(put_self, exe);
    put_stack(S_EARLY_KEEP, early_keep);
    put_stack(S_EARLY_TEMP, early_temp);
    put_stack(S_MIDDLE, middle_churn);
    put_stack(S_LATE_PEAK, late_peak);
    put_stack(S_LATE_LEAK, late_leak);
    struct mvz_buf t = {0};
    mvz_put_uvarint(&t, TID);
    mvz_put_uvarint(&t, 0);
    mvz_put_str(&t, "bigtrace");
    mvz_cw_record(&w, MVZ_REC_THREAD, &t);
    mvz_buf_free(&t);

    static struct batch bt;
    /* early phase */
    for (uint64_t i = 0; i < 1000; i++)
        add(&bt, MVZ_OP_ALLOC, MVZ_E_MALLOC, 0x10000000 + i * 0x1000, 1000, S_EARLY_KEEP);
    put_batch(&bt, 0);
    for (uint64_t i = 0; i < 1000; i++) {
        add(&bt, MVZ_OP_ALLOC, MVZ_E_CALLOC, 0x20000000, 64, S_EARLY_TEMP);
        add(&bt, MVZ_OP_FREE, MVZ_E_FREE, 0x20000000, 0, 0);
        if (bt.n == 2000)
            put_batch(&bt, 0);
    }
    flush();

    /* middle phase: incompressible padding, with keyless events after each */
    uint64_t *pad = malloc(PAD_BYTES);
    if (!pad)
        die("bigtrace_gen: malloc");
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < PAD_BYTES / 8; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        pad[i] = s * 0x2545F4914F6CDD1Dull;
    }
    struct mvz_buf padrec = {(uint8_t *)pad, PAD_BYTES, PAD_BYTES, 0};
    uint64_t pad_offset = 0, pad_len = 0; /* the last padding chunk's place */
    for (long c = 0; c < pad_chunks; c++) {
        pad[0] = (uint64_t)c; /* every chunk different */
        mvz_cw_record(&w, PAD_KIND, &padrec);
        pad_offset = w.bytes_written;
        flush();
        pad_len = w.bytes_written - pad_offset;
        for (uint64_t i = 0; i < 1000; i++) {
            add(&bt, MVZ_OP_ALLOC, MVZ_E_MALLOC, 0x30000000 + (i % 16) * 0x100, 100, S_MIDDLE);
            add(&bt, MVZ_OP_FREE, MVZ_E_FREE, 0x30000000 + (i % 16) * 0x100, 0, 0);
        }
        put_batch(&bt, MVZ_EVENTS_NO_KEYS);
        flush();
    }
    free(pad);

    /* late phase: past the padding */
    uint64_t late_offset = w.bytes_written;
    for (uint64_t i = 0; i < 16; i++)
        add(&bt, MVZ_OP_ALLOC, MVZ_E_MALLOC, 0x40000000 + i * 0x200000, MIB, S_LATE_PEAK);
    for (uint64_t i = 0; i < 8; i++)
        add(&bt, MVZ_OP_FREE, MVZ_E_FREE, 0x40000000 + i * 0x200000, 0, 0);
    for (uint64_t i = 0; i < 7; i++)
        add(&bt, MVZ_OP_ALLOC, MVZ_E_MALLOC, 0x50000000 + i * 0x2000, 4321, S_LATE_LEAK);
    put_batch(&bt, 0);
    for (uint64_t i = 0; i < 400; i++)
        add(&bt, MVZ_OP_FREE, MVZ_E_FREE, 0x10000000 + i * 0x1000, 0, 0);
    put_batch(&bt, 0);

    uint64_t end_ts = next_index * 1000; /* 1 us after the last event */
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, MVZ_EXIT_RETURN);
    mvz_put_uvarint(&b, MVZ_EXIT_FROM_AGENT);
    mvz_put_svarint(&b, 0);
    mvz_put_uvarint(&b, 0);
    mvz_put_uvarint(&b, end_ts);
    mvz_put_uvarint(&b, 0);
    mvz_cw_record(&w, MVZ_REC_EXIT, &b);
    b.len = 0;
    mvz_put_uvarint(&b, end_ts);
    mvz_put_uvarint(&b, 0);
    mvz_put_uvarint(&b, 0); /* lost */
    mvz_cw_record(&w, MVZ_REC_END, &b);
    mvz_buf_free(&b);
    flush();
    if (close(fd) < 0)
        die("bigtrace_gen: close");
    mvz_cw_destroy(&w);
    struct stat st;
    if (stat(argv[1], &st) < 0)
        die(argv[1]);
    printf("bigtrace: chunks %llu events %llu pad_offset %llu pad_len %llu late_offset %llu "
           "size %llu\n",
           (unsigned long long)chunks, (unsigned long long)next_index,
           (unsigned long long)pad_offset, (unsigned long long)pad_len,
           (unsigned long long)late_offset, (unsigned long long)st.st_size);
    return 0;
}
