/*
 * index.c - writes and reads a trace's index (index.h).
 *
 * The profile's tables go out as the structures they are in memory
 * (struct mvz_summary, mvz_site, mvz_profile_thread, mvz_site_entries):
 * an index is read only by the build that wrote it, which the head record
 * checks (LAYOUT and the structures' sizes), so no field needs a coding
 * of its own. Everything else in it is the trace's own records.
 */
#include "analysis/index.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace/buf.h"
#include "trace/chunk_writer.h"
#include "trace/format.h"
#include "trace/reader.h"

/* Bumped whenever what the index holds, or how, changes. */
#define LAYOUT 2
#define SITES_PER_RECORD 8192
#define CHANGES_PER_RECORD 65536
#define FLUSH_AT (8u << 20)

int mvz_index_path(const char *trace, char *out, size_t n)
{
    int k = snprintf(out, n, "%si", trace);
    return k > 0 && (size_t)k < n ? 0 : -1;
}

static uint64_t mtime_ns(const struct stat *st)
{
    return (uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec;
}

/* ---- writing ---- */
/* The trace's records but its heap events and snapshot contents. */
static int skipped(uint8_t kind)
{
    switch (kind) {
    case MVZ_REC_HEAP:
    case MVZ_REC_HEAP_STREAMS:
    case MVZ_REC_EVENTS:
    case MVZ_REC_WATERMARK:
    case MVZ_REC_ADDRS:
    case MVZ_REC_SNAPSHOT_BLOCKS:
    case MVZ_REC_SNAPSHOT_EDGES:
    case MVZ_REC_SNAPSHOT_ROOTS:
    case MVZ_REC_SNAPSHOT_CONTENTS:
        return 1;
    default:
        return kind >= MVZ_REC_INDEX_HEAD && kind <= MVZ_REC_INDEX_CHANGES;
    }
}

static int put(struct mvz_chunk_writer *w, uint8_t kind, const struct mvz_buf *b)
{
    if (b->oom)
        return -1;
    mvz_cw_record(w, kind, b);
    return w->queued.raw.len >= FLUSH_AT ? mvz_cw_flush(w) : 0;
}

static int copy_metadata(struct mvz_chunk_writer *w, const char *path, char *err, size_t errlen)
{
    struct mvz_reader rd;
    if (mvz_reader_open(&rd, path, err, errlen) < 0)
        return -1;
    if (rd.major != MVZ_FORMAT_MAJOR) { /* its records read as this format's would not */
        snprintf(err, errlen, "%s: a trace of format %d is not indexed", path, rd.major);
        mvz_reader_close(&rd);
        return -1;
    }
    struct mvz_record rec;
    int rc = 0;
    while (rc == 0 && mvz_reader_next(&rd, &rec)) {
        if (skipped(rec.kind))
            continue;
        struct mvz_buf b = {(uint8_t *)rec.data, rec.len, rec.len, 0};
        rc = put(w, rec.kind, &b);
    }
    mvz_reader_close(&rd);
    return rc;
}

static void put_raw(struct mvz_buf *b, const void *p, size_t n)
{
    mvz_put_bytes(b, p, n);
}

static int write_head(struct mvz_chunk_writer *w, const struct stat *st)
{
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, LAYOUT);
    mvz_put_uvarint(&b, sizeof(struct mvz_summary));
    mvz_put_uvarint(&b, sizeof(struct mvz_site));
    mvz_put_uvarint(&b, sizeof(struct mvz_profile_thread));
    mvz_put_uvarint(&b, sizeof(struct mvz_site_entries));
    mvz_put_uvarint(&b, (uint64_t)st->st_size);
    mvz_put_uvarint(&b, mtime_ns(st));
    int rc = put(w, MVZ_REC_INDEX_HEAD, &b);
    mvz_buf_free(&b);
    return rc;
}

/* What the replay of the events left in the trace's own fields. */
#define TRACE_FIELDS_N 9

static void trace_fields(const struct mvz_trace *t, uint64_t *v)
{
    uint64_t f[] = {t->last_ts,          t->bad_chunks,          t->bad_records,
                    t->skipped_bytes,    t->bad_events,          t->missing_seqs,
                    t->unordered_events, (uint64_t)t->truncated, t->addrs_records};
    memcpy(v, f, sizeof(f));
}

static int write_profile(struct mvz_chunk_writer *w, const struct mvz_profile *p)
{
    struct mvz_buf b = {0};
    uint64_t f[TRACE_FIELDS_N];
    trace_fields(&p->trace, f);
    put_raw(&b, &p->sum, sizeof(p->sum));
    mvz_put_uvarint(&b, (uint64_t)p->in_window);
    mvz_put_uvarint(&b, p->peak_epoch);
    mvz_put_uvarint(&b, p->heap_events);
    for (size_t i = 0; i < TRACE_FIELDS_N; i++)
        mvz_put_uvarint(&b, f[i]);
    int rc = put(w, MVZ_REC_INDEX_SUMMARY, &b);
    b.len = 0;
    for (size_t i = 0, n = 0; rc == 0 && i <= p->sites_cap; i++) {
        int last = i == p->sites_cap;
        if (!last && (p->sites[i].stack || p->sites[i].allocations)) {
            put_raw(&b, &p->sites[i], sizeof(p->sites[i]));
            n++;
        }
        if (n && (n == SITES_PER_RECORD || last)) {
            rc = put(w, MVZ_REC_INDEX_SITES, &b);
            b.len = 0;
            n = 0;
        }
    }
    put_raw(&b, p->threads, p->nthreads * sizeof(*p->threads));
    if (rc == 0)
        rc = put(w, MVZ_REC_INDEX_THREADS, &b);
    b.len = 0;
    put_raw(&b, p->mixed, p->nmixed * sizeof(*p->mixed));
    if (rc == 0)
        rc = put(w, MVZ_REC_INDEX_MIXED, &b);
    mvz_buf_free(&b);
    return rc;
}

static int write_timeline(struct mvz_chunk_writer *w, const struct mvz_timeline *tl)
{
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, tl->from_ns);
    mvz_put_uvarint(&b, tl->to_ns);
    mvz_put_uvarint(&b, tl->step_ns);
    mvz_put_uvarint(&b, tl->npoints);
    const uint64_t *arrays[4] = {tl->t, tl->heap, tl->heap_max, tl->rss};
    for (int k = 0; k < 4; k++)
        put_raw(&b, arrays[k], tl->npoints * sizeof(uint64_t));
    int rc = put(w, MVZ_REC_INDEX_TIMELINE, &b);
    for (size_t i = 0; rc == 0 && i < tl->nchanges; i += CHANGES_PER_RECORD) {
        size_t n = tl->nchanges - i < CHANGES_PER_RECORD ? tl->nchanges - i : CHANGES_PER_RECORD;
        b.len = 0;
        put_raw(&b, tl->changes + i, n * sizeof(*tl->changes));
        rc = put(w, MVZ_REC_INDEX_CHANGES, &b);
    }
    mvz_buf_free(&b);
    return rc;
}

/* Whether the trace can be indexed: complete, of this format, and the
 * same file as before the replay (a trace still growing would be indexed
 * as what was read of it, with the size it had after). */
static int indexable(const char *path, const struct stat *before, const struct mvz_profile *p,
                     struct stat *st, char *err, size_t errlen)
{
    if (!p->trace.have_end && !p->trace.have_exec) {
        snprintf(err, errlen, "%s: the trace has no end (still being written, or cut short)", path);
        return 0;
    }
    if (stat(path, st) < 0 || st->st_size != before->st_size || mtime_ns(st) != mtime_ns(before)) {
        snprintf(err, errlen, "%s: the trace changed while it was read", path);
        return 0;
    }
    return 1;
}

int mvz_index_write(const char *path, const struct stat *before, const struct mvz_profile *p,
                    const struct mvz_timeline *tl, char *err, size_t errlen)
{
    char final[4096], tmp[4200];
    struct stat st;
    err[0] = 0;
    if (mvz_index_path(path, final, sizeof(final)) < 0) {
        snprintf(err, errlen, "%s: too long a name", path);
        return -1;
    }
    if (!indexable(path, before, p, &st, err, errlen))
        return -1;
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", final, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        return -1;
    }
    struct mvz_chunk_writer w;
    int rc = mvz_cw_init(&w, fd);
    if (rc == 0) {
        rc = mvz_cw_write_header(&w);
        if (rc == 0)
            rc = write_head(&w, &st);
        if (rc == 0)
            rc = copy_metadata(&w, path, err, errlen);
        if (rc == 0)
            rc = write_profile(&w, p);
        if (rc == 0)
            rc = write_timeline(&w, tl);
        if (rc == 0)
            rc = mvz_cw_flush(&w);
        mvz_cw_destroy(&w);
    }
    if (close(fd) < 0 || rc < 0 || rename(tmp, final) < 0) {
        if (!err[0] || rc == 0)
            snprintf(err, errlen, "%s: %s", final, strerror(errno ? errno : EIO));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* ---- reading ---- */
struct loading {
    struct mvz_profile *p;
    struct mvz_timeline *tl;
    const struct stat *st;
    int head_ok, stale, bad;
    uint64_t fields[TRACE_FIELDS_N];
};

static void read_head(struct loading *l, struct mvz_cursor *c)
{
    const uint64_t want[] = {LAYOUT,
                             sizeof(struct mvz_summary),
                             sizeof(struct mvz_site),
                             sizeof(struct mvz_profile_thread),
                             sizeof(struct mvz_site_entries),
                             (uint64_t)l->st->st_size,
                             mtime_ns(l->st)};
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
        if (mvz_get_uvarint(c) != want[i])
            l->stale = 1;
    l->head_ok = !c->bad;
}

/* n bytes of c into dst; 0, or -1 when c has fewer. */
static int get_raw(struct mvz_cursor *c, void *dst, size_t n)
{
    if ((size_t)(c->end - c->p) < n) {
        c->bad = 1;
        return -1;
    }
    memcpy(dst, c->p, n);
    c->p += n;
    return 0;
}

static void read_summary(struct loading *l, struct mvz_cursor *c)
{
    struct mvz_profile *p = l->p;
    get_raw(c, &p->sum, sizeof(p->sum));
    p->in_window = (int)mvz_get_uvarint(c);
    p->peak_epoch = mvz_get_uvarint(c);
    p->heap_events = mvz_get_uvarint(c);
    for (size_t i = 0; i < TRACE_FIELDS_N; i++)
        l->fields[i] = mvz_get_uvarint(c);
}

static void read_sites(struct loading *l, struct mvz_cursor *c)
{
    struct mvz_site s;
    while (c->p < c->end && get_raw(c, &s, sizeof(s)) == 0) {
        /* the stacks came first: a site of another stack is damage */
        struct mvz_site *to = s.stack && !mvz_trace_stack(&l->p->trace, s.stack)
                                  ? NULL
                                  : mvz_profile_site(l->p, s.stack);
        if (!to) {
            l->bad = 1;
            return;
        }
        *to = s;
    }
}

/* A table of n-byte entries: the whole rest of the record. */
static void *read_table(struct mvz_cursor *c, size_t n, size_t *count)
{
    size_t len = (size_t)(c->end - c->p);
    void *v = malloc(len + 1);
    if (!v || len % n) {
        free(v);
        c->bad = 1;
        return NULL;
    }
    memcpy(v, c->p, len);
    c->p = c->end;
    *count = len / n;
    return v;
}

static void read_timeline(struct loading *l, struct mvz_cursor *c)
{
    struct mvz_timeline *tl = l->tl;
    if (tl->t) { /* one only */
        c->bad = 1;
        return;
    }
    tl->from_ns = mvz_get_uvarint(c);
    tl->to_ns = mvz_get_uvarint(c);
    tl->step_ns = mvz_get_uvarint(c);
    size_t n = (size_t)mvz_get_uvarint(c);
    if (c->bad || n > (size_t)(c->end - c->p) / 32) {
        c->bad = 1;
        return;
    }
    uint64_t **arrays[4] = {&tl->t, &tl->heap, &tl->heap_max, &tl->rss};
    for (int k = 0; k < 4; k++) {
        *arrays[k] = malloc((n + 1) * sizeof(uint64_t));
        if (!*arrays[k] || get_raw(c, *arrays[k], n * sizeof(uint64_t)) < 0) {
            c->bad = 1;
            return;
        }
    }
    tl->npoints = n;
}

/* Site changes, appended (checked once all are read: changes_sound). */
static void read_changes(struct loading *l, struct mvz_cursor *c)
{
    struct mvz_timeline *tl = l->tl;
    size_t len = (size_t)(c->end - c->p), n = len / sizeof(*tl->changes);
    if (len % sizeof(*tl->changes) || tl->nchanges + n > MVZ_SITE_CHANGES_MAX) {
        c->bad = 1;
        return;
    }
    struct mvz_site_change *v = realloc(tl->changes, (tl->nchanges + n + 1) * sizeof(*v));
    if (!v) {
        c->bad = 1;
        return;
    }
    tl->changes = v;
    memcpy(v + tl->nchanges, c->p, len);
    c->p = c->end;
    tl->nchanges += n;
}

/* Each change names a point and a stack the index has, in point order
 * (series.c walks them so, and indexes the points by them). */
static int changes_sound(const struct mvz_profile *p, const struct mvz_timeline *tl)
{
    for (size_t i = 0; i < tl->nchanges; i++) {
        const struct mvz_site_change *c = &tl->changes[i];
        if (c->point >= tl->npoints || (i && c->point < tl->changes[i - 1].point) ||
            !mvz_trace_stack(&p->trace, c->stack))
            return 0;
    }
    return 1;
}

static void on_record(void *ctx, const struct mvz_record *rec)
{
    struct loading *l = ctx;
    struct mvz_cursor c = mvz_cursor_make(rec->data, rec->len);
    if (rec->kind == MVZ_REC_INDEX_HEAD) {
        read_head(l, &c);
        return;
    }
    if (!l->head_ok || l->stale)
        return;
    switch (rec->kind) {
    case MVZ_REC_INDEX_SUMMARY:
        read_summary(l, &c);
        break;
    case MVZ_REC_INDEX_SITES:
        read_sites(l, &c);
        break;
    case MVZ_REC_INDEX_THREADS:
        free(l->p->threads);
        l->p->threads = read_table(&c, sizeof(*l->p->threads), &l->p->nthreads);
        break;
    case MVZ_REC_INDEX_MIXED:
        free(l->p->mixed);
        l->p->mixed = read_table(&c, sizeof(*l->p->mixed), &l->p->nmixed);
        l->p->mixed_cap = l->p->nmixed;
        break;
    case MVZ_REC_INDEX_TIMELINE:
        read_timeline(l, &c);
        break;
    case MVZ_REC_INDEX_CHANGES:
        read_changes(l, &c);
        break;
    default:
        return;
    }
    l->bad |= c.bad;
}

/* Whether every site names a stack the trace defines, and entry counts
 * the index has: the tables are taken as they are, but never trusted to
 * index memory. */
static int sites_sound(const struct mvz_profile *p)
{
    for (size_t i = 0; i < p->sites_cap; i++) {
        const struct mvz_site *s = &p->sites[i];
        if ((s->stack || s->allocations) && (s->stack != i || s->mixed > p->nmixed ||
                                             (s->stack && !mvz_trace_stack(&p->trace, s->stack))))
            return 0;
    }
    return 1;
}

/* The trace's own fields the events had set. */
static void restore_fields(struct mvz_trace *t, const uint64_t *f)
{
    if (f[0] > t->last_ts)
        t->last_ts = f[0];
    t->bad_chunks = f[1];
    t->bad_records = f[2];
    t->skipped_bytes = f[3];
    t->bad_events = f[4];
    t->missing_seqs = f[5];
    t->unordered_events = f[6];
    t->truncated = (int)f[7];
    t->addrs_records = f[8];
}

int mvz_index_load(const char *path, struct mvz_profile *p, struct mvz_timeline *tl, char *err,
                   size_t errlen)
{
    char ipath[4096];
    struct stat st, ist;
    memset(p, 0, sizeof(*p));
    memset(tl, 0, sizeof(*tl));
    if (mvz_index_path(path, ipath, sizeof(ipath)) < 0 || stat(path, &st) < 0 ||
        stat(ipath, &ist) < 0)
        return 0;
    struct loading l = {.p = p, .tl = tl, .st = &st};
    struct mvz_replay_ops ops = {.other = on_record};
    char why[512];
    if (mvz_replay(ipath, &p->trace, &ops, &l, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "a damaged index (%s)", why);
        return -1;
    }
    int ok = l.head_ok && !l.stale && !l.bad && tl->npoints && !p->trace.bad_chunks &&
             !p->trace.truncated && sites_sound(p) && changes_sound(p, tl);
    if (!ok) {
        if (l.head_ok && !l.stale)
            snprintf(err, errlen, "%s: a damaged index", ipath);
        mvz_profile_free(p);
        mvz_timeline_free(tl);
        memset(tl, 0, sizeof(*tl));
        return l.head_ok && !l.stale ? -1 : 0;
    }
    p->trace.path = path;
    p->opt.to_ns = UINT64_MAX;
    restore_fields(&p->trace, l.fields);
    return 1;
}
