/*
 * chunk_writer.c - compresses batches of records into zstd chunks and writes
 * them. See chunk_writer.h for the contract and docs/FORMAT.md for the bytes.
 */
#include "trace/chunk_writer.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

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

int mvz_cw_init(struct mvz_chunk_writer *w, int fd)
{
    memset(w, 0, sizeof(*w));
    w->fd = fd;
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    if (!cctx)
        return -1;
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, MVZ_ZSTD_LEVEL);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, MVZ_ZSTD_WINDOW_LOG);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_enableLongDistanceMatching, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_ldmMinMatch, MVZ_ZSTD_LDM_MIN_MATCH);
    w->cctx = cctx;
    return 0;
}

void mvz_cw_destroy(struct mvz_chunk_writer *w)
{
    ZSTD_freeCCtx(w->cctx);
    mvz_buf_free(&w->raw);
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
    mvz_put_record(&w->raw, kind, payload);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Compresses and writes raw as one chunk; raw is emptied. */
static int write_chunk(struct mvz_chunk_writer *w, struct mvz_buf *raw)
{
    if (w->error || raw->oom) {
        w->bytes_lost += raw->len;
        raw->len = 0;
        raw->oom = 0;
        return -1;
    }
    size_t bound = ZSTD_compressBound(raw->len) + MVZ_CHUNK_HEADER_LEN;
    w->out.len = 0;
    if (mvz_buf_reserve(&w->out, bound) < 0) {
        w->out.oom = 0;
        w->bytes_lost += raw->len;
        raw->len = 0;
        return -1;
    }
    size_t n = ZSTD_compress2(w->cctx, w->out.data + MVZ_CHUNK_HEADER_LEN,
                              bound - MVZ_CHUNK_HEADER_LEN, raw->data, raw->len);
    if (ZSTD_isError(n)) {
        w->bytes_lost += raw->len;
        raw->len = 0;
        return -1;
    }
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
    if (w->raw.len == 0)
        return w->error ? -1 : 0;
    w->chunks++;
    return write_chunk(w, &w->raw);
}

void mvz_cw_detach(struct mvz_chunk_writer *w, struct mvz_buf *taken)
{
    struct mvz_buf empty = *taken;
    *taken = w->raw;
    w->raw = empty;
    w->raw.len = 0;
    if (taken->len)
        w->chunks++;
}

int mvz_cw_write_detached(struct mvz_chunk_writer *w, struct mvz_buf *taken)
{
    if (taken->len == 0)
        return w->error ? -1 : 0;
    return write_chunk(w, taken);
}
