/*
 * chunk_writer.c - compresses batches of records into zstd chunks and writes
 * them. See chunk_writer.h for the contract and docs/FORMAT.md for the bytes.
 */
#include "trace/chunk_writer.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createCCtx_advanced */
#include <zstd.h>
#include <zstd_errors.h>

#include "trace/format.h"

/* Level 1 trades a little size for speed; traces compress well anyway.
 * Long-distance matching, with a window that covers a whole chunk, finds
 * what repeats far apart in a chunk (a loop's allocations, hundreds of KB
 * of events later), which level 1's match finder misses: the sqlite bench
 * trace went from 1.58 to 1.12 MB, CPython's from 407 to 311 KB, the deep
 * stack churn's from 381 to 217 KB (level 3 without it: 214 KB, at a
 * higher cost in the writer). Its matches start at 128 bytes rather than
 * zstd's 64: shorter ones, taken first, broke the runs level 1 itself
 * would have matched in periodic events (two threads churning a
 * std::list, grouped: 138 -> 102 KB; deep churn 49 -> 41 KB, sqlite 1.10
 * -> 1.02 MB; cc1plus 2.19 -> 2.21 MB). */
#define MVZ_ZSTD_LEVEL 1
#define MVZ_ZSTD_WINDOW_LOG 21
#define MVZ_ZSTD_LDM_MIN_MATCH 128
/* The long-distance matcher's table: 2^14 buckets of 4 entries. zstd's
 * own choice for this window took 21% more instructions on the CPython
 * bench trace's raw stream, 14% more on sqlite3's, for the same sizes
 * (+0.1%, -0.6%); the matcher is most of the writer's zstd time. */
#define MVZ_ZSTD_LDM_HASH_LOG 14
#define MVZ_ZSTD_LDM_BUCKET_LOG 2

/* zstd's memory comes straight from the kernel, as large buffers do (see
 * buf.h): a context's workspace is megabytes, and zstd frees and takes it
 * again when its needs change, which through malloc would move glibc's
 * mmap threshold under the program. Each piece has a 64-byte header that
 * keeps its mapped length and the alignment zstd expects. */
#define MAPPED_HEADER 64

static void *mapped_alloc(void *opaque, size_t size)
{
    (void)opaque;
    size_t total = size + MAPPED_HEADER;
    void *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MVZ_AGENT_MEM
    mvz_owned_map(p, total);
#endif
    *(size_t *)p = total;
    return (char *)p + MAPPED_HEADER;
}

static void mapped_free(void *opaque, void *addr)
{
    (void)opaque;
    if (!addr)
        return;
    char *p = (char *)addr - MAPPED_HEADER;
#ifdef MVZ_AGENT_MEM
    mvz_owned_unmap(p, *(size_t *)p);
#endif
    munmap(p, *(size_t *)p);
}

void *mvz_cw_new_cctx(void)
{
    ZSTD_customMem mem = {mapped_alloc, mapped_free, NULL};
    return ZSTD_createCCtx_advanced(mem);
}

int mvz_cw_init(struct mvz_chunk_writer *w, int fd)
{
    memset(w, 0, sizeof(*w));
    w->fd = fd;
    ZSTD_CCtx *cctx = mvz_cw_new_cctx();
    if (!cctx)
        return -1;
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, MVZ_ZSTD_LEVEL);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, MVZ_ZSTD_WINDOW_LOG);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_enableLongDistanceMatching, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_ldmMinMatch, MVZ_ZSTD_LDM_MIN_MATCH);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_ldmHashLog, MVZ_ZSTD_LDM_HASH_LOG);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_ldmBucketSizeLog, MVZ_ZSTD_LDM_BUCKET_LOG);
    w->cctx = cctx;
    return 0;
}

void mvz_cw_destroy(struct mvz_chunk_writer *w)
{
    ZSTD_freeCCtx(w->cctx);
    mvz_buf_free(&w->queued.raw);
    mvz_buf_free(&w->queued.cuts);
    mvz_buf_free(&w->out);
    w->cctx = NULL;
}

static int write_all(struct mvz_chunk_writer *w, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            w->error = k < 0 ? errno : ENOSPC;
            return -1;
        }
        p += k;
        n -= (size_t)k;
        w->bytes_written += (uint64_t)k;
    }
    return 0;
}

int mvz_cw_write_header(struct mvz_chunk_writer *w)
{
    uint8_t h[MVZ_FILE_HEADER_LEN] = {0};
    memcpy(h, MVZ_FILE_MAGIC, MVZ_FILE_MAGIC_LEN);
    h[8] = MVZ_FORMAT_MAJOR & 0xff;
    h[9] = MVZ_FORMAT_MAJOR >> 8;
    h[10] = MVZ_FORMAT_MINOR & 0xff;
    h[11] = MVZ_FORMAT_MINOR >> 8;
    return write_all(w, h, sizeof(h));
}

void mvz_cw_record(struct mvz_chunk_writer *w, uint8_t kind, const struct mvz_buf *payload)
{
    mvz_put_record(&w->queued.raw, kind, payload);
}

/* A cut at offset `at` of the queued records. Cuts past what a chunk can
 * hold (4 GiB) are not kept: the records are compressed without them. */
static void put_cut(struct mvz_cw_batch *q, size_t at)
{
    if (at > UINT32_MAX)
        return;
    uint32_t v = (uint32_t)at;
    mvz_put_bytes(&q->cuts, &v, sizeof(v));
    q->cuts.oom = 0; /* out of memory: fewer cuts, the same bytes */
}

void mvz_cw_record_cut(struct mvz_chunk_writer *w, uint8_t kind, const struct mvz_buf *payload,
                       const size_t *cuts, size_t ncuts)
{
    struct mvz_cw_batch *q = &w->queued;
    mvz_cw_record(w, kind, payload);
    if (q->raw.oom)
        return;
    size_t start = q->raw.len - payload->len; /* the payload ends the queue */
    for (size_t i = 0; i < ncuts; i++)
        if (cuts[i] <= payload->len) /* not into the next record */
            put_cut(q, start + cuts[i]);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Feeds raw[in->pos, end) to zstd, MVZ_CW_PIECE bytes at a time with
 * between() after each piece, ending with `how`. */
static size_t compress_to(ZSTD_CCtx *cctx, ZSTD_outBuffer *out, ZSTD_inBuffer *in, size_t end,
                          ZSTD_EndDirective how, void (*between)(void))
{
    for (;;) {
        size_t step = between && end - in->pos > MVZ_CW_PIECE ? in->pos + MVZ_CW_PIECE : end;
        ZSTD_EndDirective now = step == end ? how : ZSTD_e_continue;
        in->size = step;
        size_t left;
        do {
            left = ZSTD_compressStream2(cctx, out, in, now);
            if (ZSTD_isError(left))
                return left;
            if (left && out->pos == out->size)
                return (size_t)-ZSTD_error_dstSize_tooSmall;
        } while ((now != ZSTD_e_continue && left) || in->pos < in->size);
        if (step == end)
            return 0;
        between();
    }
}

/* Compresses raw into dst (cap bytes) as one zstd frame whose blocks end
 * at the cuts (as well as every 128 KiB); returns its size or a zstd
 * error code. */
static size_t compress_cut(ZSTD_CCtx *cctx, uint8_t *dst, size_t cap, const struct mvz_buf *raw,
                           const struct mvz_buf *cuts, void (*between)(void))
{
    const uint32_t *cut = (const uint32_t *)(const void *)cuts->data;
    size_t ncuts = cuts->len / sizeof(*cut);
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
    ZSTD_CCtx_setPledgedSrcSize(cctx, raw->len); /* readers check the frame's content size */
    ZSTD_outBuffer out = {dst, cap, 0};
    ZSTD_inBuffer in = {raw->data, 0, 0};
    for (size_t i = 0; i <= ncuts; i++) {
        int last = i == ncuts;
        size_t end = last ? raw->len : cut[i];
        if (!last && (end <= in.size || end >= raw->len))
            continue; /* out of order, or at or past the end: ignored */
        size_t rc = compress_to(cctx, &out, &in, end, last ? ZSTD_e_end : ZSTD_e_flush, between);
        if (ZSTD_isError(rc))
            return rc;
    }
    return out.pos;
}

/* A batch that cannot be written: counted as lost, and emptied. */
static int drop_batch(struct mvz_chunk_writer *w, struct mvz_cw_batch *q)
{
    w->bytes_lost += q->raw.len;
    q->raw.len = q->cuts.len = 0;
    q->raw.oom = 0;
    return -1;
}

/* Compresses and writes a batch as one chunk; the batch is emptied. */
static int write_chunk(struct mvz_chunk_writer *w, struct mvz_cw_batch *q, void (*between)(void))
{
    struct mvz_buf *raw = &q->raw;
    size_t ncuts = q->cuts.len / sizeof(uint32_t);
    if (w->error || raw->oom)
        return drop_batch(w, q);
    /* each block has a 3-byte header: room for those of the cuts */
    size_t bound = ZSTD_compressBound(raw->len) + 4 * ncuts + MVZ_CHUNK_HEADER_LEN;
    w->out.len = 0;
    if (mvz_buf_reserve(&w->out, bound) < 0) {
        w->out.oom = 0;
        return drop_batch(w, q);
    }
    uint8_t *dst = w->out.data + MVZ_CHUNK_HEADER_LEN;
    size_t cap = bound - MVZ_CHUNK_HEADER_LEN;
    size_t n = ncuts || between ? compress_cut(w->cctx, dst, cap, raw, &q->cuts, between)
                                : ZSTD_compress2(w->cctx, dst, cap, raw->data, raw->len);
    q->cuts.len = 0;
    if (ZSTD_isError(n))
        return drop_batch(w, q);
    __atomic_store_n(&w->last_raw, raw->len, __ATOMIC_RELAXED);
    __atomic_store_n(&w->last_packed, n, __ATOMIC_RELAXED);
    memcpy(w->out.data, MVZ_CHUNK_MAGIC, 4);
    put_le32(w->out.data + 4, (uint32_t)n);
    put_le32(w->out.data + 8, (uint32_t)raw->len);
    int rc = write_all(w, w->out.data, n + MVZ_CHUNK_HEADER_LEN);
    if (rc < 0)
        w->bytes_lost += raw->len;
    raw->len = 0;
    return rc;
}

int mvz_cw_flush(struct mvz_chunk_writer *w)
{
    if (w->queued.raw.len == 0)
        return w->error ? -1 : 0;
    w->chunks++;
    return write_chunk(w, &w->queued, NULL);
}

/* Swaps buffers, so that both keep their memory. */
void mvz_cw_detach(struct mvz_chunk_writer *w, struct mvz_cw_batch *taken)
{
    struct mvz_cw_batch empty = *taken;
    *taken = w->queued;
    w->queued = empty;
    w->queued.raw.len = w->queued.cuts.len = 0;
    if (taken->raw.len)
        w->chunks++;
}

int mvz_cw_write_detached(struct mvz_chunk_writer *w, struct mvz_cw_batch *taken,
                          void (*between)(void))
{
    if (taken->raw.len == 0)
        return w->error ? -1 : 0;
    return write_chunk(w, taken, between);
}
