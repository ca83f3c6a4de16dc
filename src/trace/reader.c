/*
 * reader.c - reads a trace file chunk by chunk (pread, so that memory does
 * not grow with the file), verifies and decompresses each, and hands out
 * records. See reader.h for how damage is handled.
 */
#include "trace/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "trace/buf.h"
#include "trace/format.h"

static void set_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
    if (err && errlen)
        snprintf(err, errlen, fmt, a, b);
}

/* Reads exactly n bytes at off; returns 0, or -1 on a short read. */
static int read_at(struct mvz_reader *r, void *buf, size_t n, uint64_t off)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t k = pread(r->fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

int mvz_reader_open(struct mvz_reader *r, const char *path, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(r->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        set_err(err, errlen, "%s: %s", path, "not a regular file");
        mvz_reader_close(r);
        return -1;
    }
    r->size = (uint64_t)st.st_size;
    uint8_t h[MVZ_FILE_HEADER_LEN];
    if (r->size < MVZ_FILE_HEADER_LEN || read_at(r, h, sizeof(h), 0) < 0) {
        set_err(err, errlen, "%s: %s", path,
                r->size == 0 ? "empty file, not a memviz trace" : "not a memviz trace");
        mvz_reader_close(r);
        return -1;
    }
    if (memcmp(h, MVZ_FILE_MAGIC, MVZ_FILE_MAGIC_LEN) != 0) {
        set_err(err, errlen, "%s: %s", path, "not a memviz trace (bad magic)");
        mvz_reader_close(r);
        return -1;
    }
    r->major = h[8] | h[9] << 8;
    r->minor = h[10] | h[11] << 8;
    if (r->major < MVZ_FORMAT_MAJOR_OLDEST || r->major > MVZ_FORMAT_MAJOR) {
        char v[32];
        snprintf(v, sizeof(v), "%d.%d", r->major, r->minor);
        set_err(err, errlen, "%s: trace format version %s is not supported by this memviz", path,
                v);
        mvz_reader_close(r);
        return -1;
    }
    r->pos = MVZ_FILE_HEADER_LEN;
    r->dctx = ZSTD_createDCtx();
    if (!r->dctx) {
        set_err(err, errlen, "%s: %s", path, "out of memory");
        mvz_reader_close(r);
        return -1;
    }
    return 0;
}

void mvz_reader_close(struct mvz_reader *r)
{
    if (r->fd >= 0)
        close(r->fd);
    ZSTD_freeDCtx(r->dctx);
    free(r->raw);
    free(r->comp);
    memset(r, 0, sizeof(*r));
    r->fd = -1;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Moves pos to the next chunk magic after the current position, reading
 * the file in blocks that overlap by the magic's length less one. */
static void resync(struct mvz_reader *r)
{
    static uint8_t block[1 << 16];
    uint64_t from = r->pos + 1, next = r->size;
    while (from + 4 <= r->size) {
        size_t n = r->size - from < sizeof(block) ? (size_t)(r->size - from) : sizeof(block);
        if (read_at(r, block, n, from) < 0)
            break;
        const uint8_t *hit = memmem(block, n, MVZ_CHUNK_MAGIC, 4);
        if (hit) {
            next = from + (uint64_t)(hit - block);
            break;
        }
        from += n - 3;
    }
    r->skipped_bytes += next - r->pos;
    r->pos = next;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    uint8_t *p = realloc(*buf, need);
    if (!p)
        return -1;
    *buf = p;
    *cap = need;
    return 0;
}

/* Tries to decompress the chunk at pos. Returns 1 on success, 0 when the
 * chunk is damaged (caller resyncs), -1 at the end of the file. */
static int load_chunk(struct mvz_reader *r)
{
    if (r->pos >= r->size)
        return -1;
    uint8_t h[MVZ_CHUNK_HEADER_LEN];
    if (r->size - r->pos < MVZ_CHUNK_HEADER_LEN || read_at(r, h, sizeof(h), r->pos) < 0) {
        r->truncated = 1;
        r->skipped_bytes += r->size - r->pos;
        r->pos = r->size;
        return -1;
    }
    if (memcmp(h, MVZ_CHUNK_MAGIC, 4) != 0)
        return 0;
    uint32_t clen = le32(h + 4), rlen = le32(h + 8);
    if (rlen > MVZ_CHUNK_MAX_RAW || clen > ZSTD_compressBound(MVZ_CHUNK_MAX_RAW))
        return 0;
    if (clen > r->size - r->pos - MVZ_CHUNK_HEADER_LEN) {
        r->truncated = 1; /* cut short, or a damaged length: resync decides */
        return 0;
    }
    /* Before reading clen bytes, check that a zstd frame of exactly rlen
     * bytes starts here: a stray "MVZC" inside damaged data is then
     * rejected at the cost of a few bytes, not of clen. */
    uint8_t fh[18]; /* ZSTD_FRAMEHEADERSIZE_MAX */
    size_t fhn = clen < sizeof(fh) ? clen : sizeof(fh);
    if (read_at(r, fh, fhn, r->pos + MVZ_CHUNK_HEADER_LEN) < 0 ||
        ZSTD_getFrameContentSize(fh, fhn) != rlen)
        return 0;
    if (grow(&r->comp, &r->comp_cap, clen) < 0 || grow(&r->raw, &r->raw_cap, rlen) < 0 ||
        read_at(r, r->comp, clen, r->pos + MVZ_CHUNK_HEADER_LEN) < 0)
        return 0;
    size_t n = ZSTD_decompressDCtx(r->dctx, r->raw, rlen, r->comp, clen);
    if (ZSTD_isError(n) || n != rlen)
        return 0;
    r->raw_len = rlen;
    r->raw_pos = 0;
    r->chunks++;
    r->pos += MVZ_CHUNK_HEADER_LEN + clen;
    return 1;
}

/* Follow mode: whether the chunk at pos is written whole (a writer may be
 * in the middle of it); a damaged header counts as whole, for
 * load_chunk to judge. */
static int chunk_written(struct mvz_reader *r)
{
    struct stat st;
    if (fstat(r->fd, &st) == 0 && (uint64_t)st.st_size > r->size)
        r->size = (uint64_t)st.st_size;
    uint8_t h[MVZ_CHUNK_HEADER_LEN];
    if (r->size < r->pos + MVZ_CHUNK_HEADER_LEN || read_at(r, h, sizeof(h), r->pos) < 0)
        return 0;
    if (memcmp(h, MVZ_CHUNK_MAGIC, 4) != 0)
        return 1;
    return le32(h + 4) <= r->size - r->pos - MVZ_CHUNK_HEADER_LEN;
}

static int next_chunk(struct mvz_reader *r)
{
    for (;;) {
        if (r->follow && !chunk_written(r))
            return 0; /* for now: the caller waits and asks again */
        int rc = load_chunk(r);
        if (rc != 0)
            return rc > 0;
        r->bad_chunks++;
        resync(r);
    }
}

int mvz_reader_next(struct mvz_reader *r, struct mvz_record *rec)
{
    while (r->raw_pos >= r->raw_len) {
        if (!next_chunk(r))
            return 0;
    }
    struct mvz_cursor c = mvz_cursor_make(r->raw + r->raw_pos, r->raw_len - r->raw_pos);
    rec->chunk = r->chunks;
    rec->kind = mvz_get_u8(&c);
    uint64_t len = mvz_get_uvarint(&c);
    if (c.bad || len > mvz_cursor_left(&c)) {
        r->bad_records++;
        r->raw_pos = r->raw_len;
        return mvz_reader_next(r, rec);
    }
    rec->data = c.p;
    rec->len = (size_t)len;
    r->raw_pos = (size_t)(c.p - r->raw) + (size_t)len;
    return 1;
}

/* Walks the chunk headers from the start (reading nothing else) and moves
 * the reader to the last chunks: the fewest whose compressed bytes reach
 * `bytes`, or MVZ_TAIL_CHUNKS of them. -1 when a header on the way is not
 * a chunk's (damage: the reader stays where it was). */
#define MVZ_TAIL_CHUNKS 256

int mvz_reader_tail(struct mvz_reader *r, uint64_t bytes)
{
    uint64_t at[MVZ_TAIL_CHUNKS], len[MVZ_TAIL_CHUNKS], pos = MVZ_FILE_HEADER_LEN;
    size_t n = 0;
    uint8_t h[MVZ_CHUNK_HEADER_LEN];
    while (pos + MVZ_CHUNK_HEADER_LEN <= r->size) {
        if (read_at(r, h, sizeof(h), pos) < 0 || memcmp(h, MVZ_CHUNK_MAGIC, 4) != 0)
            return -1;
        uint64_t clen =
            (uint64_t)h[4] | (uint64_t)h[5] << 8 | (uint64_t)h[6] << 16 | (uint64_t)h[7] << 24;
        at[n % MVZ_TAIL_CHUNKS] = pos;
        len[n % MVZ_TAIL_CHUNKS] = clen;
        n++;
        pos += MVZ_CHUNK_HEADER_LEN + clen;
    }
    if (!n)
        return -1;
    size_t k = 1;
    for (uint64_t sum = len[(n - 1) % MVZ_TAIL_CHUNKS]; k < n && k < MVZ_TAIL_CHUNKS && sum < bytes;
         k++)
        sum += len[(n - 1 - k) % MVZ_TAIL_CHUNKS];
    r->pos = at[(n - k) % MVZ_TAIL_CHUNKS];
    return 0;
}
