/*
 * buf.h - byte buffers and LEB128 varints, the encoding primitives of the
 * trace format, shared by the agent (encoding) and the CLI (decoding).
 *
 * Encoding appends to a growable buffer; a failed growth sets `oom` and
 * later appends are dropped, so callers check once at the end.
 * Decoding reads through a cursor that never passes its end: a read past
 * the end sets `bad` and returns 0, so a corrupt record cannot crash a reader.
 */
#ifndef MVZ_TRACE_BUF_H
#define MVZ_TRACE_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct mvz_buf {
    uint8_t *data;
    size_t len, cap;
    int oom;
};

#ifdef MVZ_AGENT_MEM
/* In the agent, buffers never come from the program's malloc: see
 * src/agent/mapped.c. */
void *mvz_mem_grow(void *old, size_t old_cap, size_t cap);
void mvz_mem_put(void *p, size_t cap);
#define mvz_buf_mem_grow mvz_mem_grow
#define mvz_buf_mem_put mvz_mem_put
/* Every mapping the agent makes for itself is noted (owned.c): a heap
 * snapshot must not scan it as the program's memory, and its bytes are
 * memviz's share of the program's RSS (mapped.c). map notes and counts;
 * unmap forgets and uncounts; mvz_mapped_count counts only. */
void mvz_owned_map(const void *p, size_t len);
void mvz_owned_unmap(const void *p, size_t len);
void mvz_mapped_count(long delta);
#else
/* Elsewhere (the CLI, test programs) the C library's allocator serves. */
static inline void mvz_buf_mem_put(void *p, size_t cap)
{
    (void)cap;
    free(p);
}

static inline void *mvz_buf_mem_grow(void *old, size_t old_cap, size_t cap)
{
    (void)old_cap;
    return realloc(old, cap);
}
#endif

static inline int mvz_buf_reserve(struct mvz_buf *b, size_t more)
{
    if (b->oom)
        return -1;
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    uint8_t *p = mvz_buf_mem_grow(b->data, b->cap, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

static inline void mvz_buf_free(struct mvz_buf *b)
{
    if (b->data)
        mvz_buf_mem_put(b->data, b->cap);
    memset(b, 0, sizeof(*b));
}

static inline void mvz_put_bytes(struct mvz_buf *b, const void *p, size_t n)
{
    if (mvz_buf_reserve(b, n) == 0) {
        if (n)
            memcpy(b->data + b->len, p, n);
        b->len += n;
    }
}

static inline void mvz_put_u8(struct mvz_buf *b, uint8_t v)
{
    mvz_put_bytes(b, &v, 1);
}

static inline size_t mvz_uvarint_encode(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static inline void mvz_put_uvarint(struct mvz_buf *b, uint64_t v)
{
    if (mvz_buf_reserve(b, 10) == 0)
        b->len += mvz_uvarint_encode(b->data + b->len, v);
}

static inline uint64_t mvz_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t mvz_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline void mvz_put_svarint(struct mvz_buf *b, int64_t v)
{
    mvz_put_uvarint(b, mvz_zigzag(v));
}

static inline void mvz_put_str(struct mvz_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    mvz_put_uvarint(b, n);
    mvz_put_bytes(b, s, n);
}

/* Appends one record: kind, payload length, payload. */
static inline void mvz_put_record(struct mvz_buf *b, uint8_t kind, const struct mvz_buf *payload)
{
    mvz_put_u8(b, kind);
    mvz_put_uvarint(b, payload->len);
    mvz_put_bytes(b, payload->data, payload->len);
}

struct mvz_cursor {
    const uint8_t *p, *end;
    int bad;
};

static inline struct mvz_cursor mvz_cursor_make(const void *p, size_t n)
{
    struct mvz_cursor c = {(const uint8_t *)p, (const uint8_t *)p + n, 0};
    return c;
}

static inline size_t mvz_cursor_left(const struct mvz_cursor *c)
{
    return (size_t)(c->end - c->p);
}

static inline uint8_t mvz_get_u8(struct mvz_cursor *c)
{
    if (c->p >= c->end) {
        c->bad = 1;
        return 0;
    }
    return *c->p++;
}

static inline uint64_t mvz_get_uvarint(struct mvz_cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end) {
            c->bad = 1;
            return 0;
        }
        uint8_t byte = *c->p++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    c->bad = 1;
    return 0;
}

static inline int64_t mvz_get_svarint(struct mvz_cursor *c)
{
    return mvz_unzigzag(mvz_get_uvarint(c));
}

/* Returns a pointer to n bytes inside the cursor's data, or NULL (and sets
 * bad) when fewer are left. */
static inline const uint8_t *mvz_get_bytes(struct mvz_cursor *c, size_t n)
{
    if (mvz_cursor_left(c) < n) {
        c->bad = 1;
        c->p = c->end;
        return NULL;
    }
    const uint8_t *p = c->p;
    c->p += n;
    return p;
}

/* Reads a length-prefixed string into a fresh NUL-terminated heap copy
 * (NULL when malformed). The caller frees it. */
static inline char *mvz_get_str(struct mvz_cursor *c)
{
    uint64_t n = mvz_get_uvarint(c);
    const uint8_t *p = c->bad ? NULL : mvz_get_bytes(c, (size_t)n);
    if (!p)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    memcpy(s, p, (size_t)n);
    s[n] = 0;
    return s;
}

#endif
