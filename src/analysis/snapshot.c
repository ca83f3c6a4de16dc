/*
 * snapshot.c - reads heap snapshots from a trace (snapshot.h).
 *
 * A snapshot's records come in one process's chunks, in order: SNAPSHOT,
 * BLOCKS, EDGES (block by block from a first index), ROOTS, END. Other
 * chunks (the program's own, other snapshots') may come between them.
 * Invariant of a loaded graph: every edge's target is below nblocks, and
 * first_edge is nondecreasing with first_edge[nblocks] == nedges; records
 * that would break it are damage and are dropped.
 */
#include "analysis/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/buf.h"
#include "trace/format.h"
#include "trace/reader.h"

const char *mvz_snap_trigger_name(uint32_t trigger)
{
    switch (trigger) {
    case MVZ_SNAP_API:
        return "api";
    case MVZ_SNAP_SIGNAL:
        return "signal";
    case MVZ_SNAP_EVERY:
        return "every";
    case MVZ_SNAP_COMMAND:
        return "command";
    case MVZ_SNAP_EXIT:
        return "exit";
    default:
        return "unknown";
    }
}

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *n = realloc(*v, c * size);
    if (!n)
        return -1;
    *v = n;
    *cap = c;
    return 0;
}

static int parse_header(struct mvz_cursor *c, struct mvz_snap_info *i)
{
    memset(i, 0, sizeof(*i));
    i->id = (uint32_t)mvz_get_uvarint(c);
    i->trigger = (uint32_t)mvz_get_uvarint(c);
    i->ts = mvz_get_uvarint(c);
    i->name = mvz_get_str(c);
    i->events = mvz_get_uvarint(c);
    i->tid = (uint32_t)mvz_get_uvarint(c);
    i->threads_running = (uint32_t)mvz_get_uvarint(c);
    i->nblocks = mvz_get_uvarint(c);
    if (c->bad || !i->name) {
        free(i->name);
        i->name = NULL;
        return -1;
    }
    return 0;
}

static void parse_end(struct mvz_cursor *c, struct mvz_snap_info *i)
{
    uint64_t pause = mvz_get_uvarint(c), nb = mvz_get_uvarint(c), ne = mvz_get_uvarint(c),
             nr = mvz_get_uvarint(c), nre = mvz_get_uvarint(c), sc = mvz_get_uvarint(c),
             un = mvz_get_uvarint(c), ns = mvz_get_uvarint(c);
    if (c->bad || nb != i->nblocks)
        return;
    i->too_large = mvz_cursor_left(c) ? mvz_get_uvarint(c) : 0;
    i->pause_ns = pause;
    i->nedges = ne;
    i->nregions = nr;
    i->nroot_edges = nre;
    i->scanned = sc;
    i->unreadable = un;
    i->scan_ns = ns;
    i->complete = 1;
}

int mvz_snap_list(const char *path, struct mvz_snap_info **out, size_t *n, char *err, size_t errlen)
{
    struct mvz_reader rd;
    struct mvz_record rec;
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    if (mvz_reader_open(&rd, path, err, errlen) < 0)
        return -1;
    while (mvz_reader_next(&rd, &rec) == 1) {
        if (rec.kind != MVZ_REC_SNAPSHOT && rec.kind != MVZ_REC_SNAPSHOT_END &&
            rec.kind != MVZ_REC_SNAPSHOT_CONTENTS)
            continue;
        struct mvz_cursor c = mvz_cursor_make(rec.data, rec.len);
        if (rec.kind == MVZ_REC_SNAPSHOT_CONTENTS) {
            uint32_t id = (uint32_t)mvz_get_uvarint(&c);
            for (size_t k = *n; k-- > 0;)
                if ((*out)[k].id == id) {
                    (*out)[k].has_contents = 1;
                    break;
                }
            continue;
        }
        if (rec.kind == MVZ_REC_SNAPSHOT) {
            if (grow((void **)out, &cap, *n + 1, sizeof(**out)) < 0)
                break;
            if (parse_header(&c, &(*out)[*n]) == 0)
                (*n)++;
            continue;
        }
        uint32_t id = (uint32_t)mvz_get_uvarint(&c);
        for (size_t k = *n; k-- > 0;)
            if ((*out)[k].id == id && !(*out)[k].complete) {
                parse_end(&c, &(*out)[k]);
                break;
            }
    }
    mvz_reader_close(&rd);
    return 0;
}

void mvz_snap_infos_free(struct mvz_snap_info *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
    free(v);
}

/* ---- one graph ---- */
struct loader {
    struct mvz_snapshot *s;
    size_t edges_cap, roots_cap, root_edges_cap;
    size_t next_block; /* BLOCKS and EDGES come in block order */
    size_t next_edges;
    int in; /* between its SNAPSHOT and its END */
    int failed;
};

static void load_blocks(struct loader *l, struct mvz_cursor *c)
{
    struct mvz_snapshot *s = l->s;
    uint64_t first = mvz_get_uvarint(c), count = mvz_get_uvarint(c);
    if (c->bad || first != l->next_block || count > s->nblocks - first)
        return;
    uint64_t addr = first ? s->blocks[first - 1].addr : 0;
    for (uint64_t i = first; i < first + count; i++) {
        struct mvz_snap_block *b = &s->blocks[i];
        addr += mvz_get_uvarint(c);
        b->addr = addr;
        b->size = mvz_get_uvarint(c);
        b->tid = (uint32_t)mvz_get_uvarint(c);
        b->serial = mvz_get_uvarint(c);
        b->stack = (uint32_t)mvz_get_uvarint(c);
        b->flags = (uint32_t)mvz_get_uvarint(c);
    }
    if (!c->bad)
        l->next_block = first + count;
}

static int put_edge(struct loader *l, struct mvz_snap_edge **v, size_t *n, size_t *cap,
                    struct mvz_snap_edge e)
{
    if (grow((void **)v, cap, *n + 1, sizeof(**v)) < 0) {
        l->failed = 1;
        return -1;
    }
    (*v)[(*n)++] = e;
    return 0;
}

static void load_edges(struct loader *l, struct mvz_cursor *c)
{
    struct mvz_snapshot *s = l->s;
    uint64_t first = mvz_get_uvarint(c);
    if (c->bad || first != l->next_edges || first >= s->nblocks)
        return;
    for (uint64_t i = first; mvz_cursor_left(c) && i < s->nblocks && !c->bad; i++) {
        uint64_t n = mvz_get_uvarint(c);
        int64_t target = (int64_t)i;
        s->first_edge[i] = s->nedges;
        for (uint64_t k = 0; k < n && !c->bad; k++) {
            target += mvz_get_svarint(c);
            uint64_t off_kind = mvz_get_uvarint(c);
            if (target < 0 || (uint64_t)target >= s->nblocks || (off_kind & 7) >= MVZ_EDGE_KINDS) {
                c->bad = 1;
                break;
            }
            struct mvz_snap_edge e = {(uint32_t)target, (uint8_t)(off_kind & 7),
                                      (off_kind >> 3) * 8};
            if (put_edge(l, &s->edges, &s->nedges, &l->edges_cap, e) < 0)
                return;
        }
        s->first_edge[i + 1] = s->nedges;
        l->next_edges = i + 1;
    }
}

static void load_roots(struct loader *l, struct mvz_cursor *c)
{
    struct mvz_snapshot *s = l->s;
    struct mvz_snap_root r = {0};
    r.kind = (int)mvz_get_uvarint(c);
    r.tid = (uint32_t)mvz_get_uvarint(c);
    r.name = mvz_get_str(c);
    r.addr = mvz_get_uvarint(c);
    r.len = mvz_get_uvarint(c);
    uint64_t n = mvz_get_uvarint(c), off = 0;
    if (c->bad || !r.name ||
        grow((void **)&s->roots, &l->roots_cap, s->nroots + 1, sizeof(*s->roots)) < 0) {
        free(r.name);
        return;
    }
    r.first_edge = s->nroot_edges;
    for (uint64_t k = 0; k < n && !c->bad; k++) {
        off += mvz_get_uvarint(c) * 8;
        uint64_t target = mvz_get_uvarint(c), kind = mvz_get_uvarint(c);
        if (target >= s->nblocks || kind >= MVZ_EDGE_KINDS || off >= r.len) {
            c->bad = 1;
            break;
        }
        struct mvz_snap_edge e = {(uint32_t)target, (uint8_t)kind, off};
        if (put_edge(l, &s->root_edges, &s->nroot_edges, &l->root_edges_cap, e) < 0)
            break;
    }
    if (c->bad) { /* damaged: the region's edges go */
        s->nroot_edges = r.first_edge;
        free(r.name);
        return;
    }
    r.nedges = s->nroot_edges - r.first_edge;
    s->roots[s->nroots++] = r;
}

/* A SNAPSHOT record: the one wanted starts the graph. */
static void begin(struct loader *l, struct mvz_cursor *c, uint32_t id)
{
    struct mvz_snap_info info;
    if (parse_header(c, &info) < 0)
        return;
    if (info.id != id || l->in || l->s->blocks || info.nblocks > (1ull << 34)) {
        free(info.name);
        return;
    }
    struct mvz_snapshot *s = l->s;
    s->info = info;
    s->nblocks = info.nblocks;
    s->blocks = calloc(s->nblocks + 1, sizeof(*s->blocks));
    s->first_edge = calloc(s->nblocks + 1, sizeof(*s->first_edge));
    if (!s->blocks || !s->first_edge)
        l->failed = 1;
    l->in = 1;
}

static void load_record(struct loader *l, const struct mvz_record *rec, uint32_t id)
{
    struct mvz_cursor c = mvz_cursor_make(rec->data, rec->len);
    if (rec->kind == MVZ_REC_SNAPSHOT) {
        begin(l, &c, id);
        return;
    }
    if (!l->in || (uint32_t)mvz_get_uvarint(&c) != id || c.bad)
        return;
    switch (rec->kind) {
    case MVZ_REC_SNAPSHOT_BLOCKS:
        load_blocks(l, &c);
        break;
    case MVZ_REC_SNAPSHOT_EDGES:
        load_edges(l, &c);
        break;
    case MVZ_REC_SNAPSHOT_ROOTS:
        load_roots(l, &c);
        break;
    case MVZ_REC_SNAPSHOT_END:
        parse_end(&c, &l->s->info);
        l->in = 0;
        break;
    default:
        break;
    }
}

int mvz_snap_load(const char *path, uint32_t id, struct mvz_snapshot *s, char *err, size_t errlen)
{
    struct mvz_reader rd;
    struct mvz_record rec;
    struct loader l = {.s = s};
    memset(s, 0, sizeof(*s));
    if (mvz_reader_open(&rd, path, err, errlen) < 0)
        return -1;
    while (!l.failed && mvz_reader_next(&rd, &rec) == 1)
        if (rec.kind == MVZ_REC_SNAPSHOT ||
            (rec.kind >= MVZ_REC_SNAPSHOT_BLOCKS && rec.kind <= MVZ_REC_SNAPSHOT_END))
            load_record(&l, &rec, id);
    mvz_reader_close(&rd);
    if (l.failed) {
        snprintf(err, errlen, "out of memory loading snapshot %u of %s", id, path);
        mvz_snap_free(s);
        return -1;
    }
    if (!s->blocks) {
        snprintf(err, errlen, "%s has no snapshot %u", path, id);
        return -1;
    }
    /* blocks whose edges never came (a snapshot cut short) have none */
    for (size_t i = l.next_edges; i < s->nblocks; i++)
        s->first_edge[i + 1] = s->nedges;
    if (l.next_block != s->nblocks)
        s->info.complete = 0;
    return 0;
}

/* ---- a block's bytes ---- */
/* The pieces of one CONTENTS record that fall in block `block`. */
static uint64_t copy_pieces(struct mvz_cursor *c, uint32_t block, uint64_t size, uint8_t *buf,
                            uint8_t *known)
{
    uint64_t at = 0, found = 0;
    while (mvz_cursor_left(c) && !c->bad) {
        at += mvz_get_uvarint(c);
        uint64_t off = mvz_get_uvarint(c), n = mvz_get_uvarint(c);
        const uint8_t *bytes = mvz_get_bytes(c, n);
        if (c->bad || !bytes)
            break;
        if (at != block || off >= size || n > size - off)
            continue;
        memcpy(buf + off, bytes, n);
        for (uint64_t k = 0; k < n; k++) {
            found += !known[off + k];
            known[off + k] = 1;
        }
    }
    return found;
}

long long mvz_snap_contents(const char *path, uint32_t id, uint32_t block, uint64_t size,
                            uint8_t *buf, uint8_t *known, char *err, size_t errlen)
{
    struct mvz_reader rd;
    struct mvz_record rec;
    uint64_t found = 0;
    memset(known, 0, size);
    if (mvz_reader_open(&rd, path, err, errlen) < 0)
        return -1;
    while (mvz_reader_next(&rd, &rec) == 1) {
        if (rec.kind != MVZ_REC_SNAPSHOT_CONTENTS)
            continue;
        struct mvz_cursor c = mvz_cursor_make(rec.data, rec.len);
        if ((uint32_t)mvz_get_uvarint(&c) == id && !c.bad)
            found += copy_pieces(&c, block, size, buf, known);
    }
    mvz_reader_close(&rd);
    return (long long)found;
}

void mvz_snap_free(struct mvz_snapshot *s)
{
    free(s->info.name);
    free(s->blocks);
    free(s->first_edge);
    free(s->edges);
    for (size_t i = 0; i < s->nroots; i++)
        free(s->roots[i].name);
    free(s->roots);
    free(s->root_edges);
    memset(s, 0, sizeof(*s));
}
