/*
 * growth.c - see growth.h. Two passes over the file's records: the list of
 * snapshots (which are complete), then their BLOCKS records summed by
 * stack into a table grown as larger stack ids appear.
 */
#include "analysis/growth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/buf.h"
#include "trace/format.h"
#include "trace/reader.h"

/* The index among the complete snapshots of snapshot id, or -1. */
static long snap_index(const struct mvz_growth *g, uint32_t id)
{
    for (size_t k = 0; k < g->nsnaps; k++)
        if (g->snaps[k].id == id)
            return (long)k;
    return -1;
}

static int grow_stacks(struct mvz_growth *g, uint32_t stack)
{
    if (stack < g->nstacks)
        return 0;
    uint32_t n = g->nstacks ? g->nstacks : 256;
    while (n <= stack)
        n *= 2;
    size_t cells = (size_t)n * g->nsnaps, old = (size_t)g->nstacks * g->nsnaps;
    uint64_t *b = realloc(g->bytes, (cells ? cells : 1) * sizeof(*b));
    if (!b)
        return -1;
    g->bytes = b;
    uint64_t *c = realloc(g->blocks, (cells ? cells : 1) * sizeof(*c));
    if (!c)
        return -1;
    g->blocks = c;
    memset(g->bytes + old, 0, (cells - old) * sizeof(*b));
    memset(g->blocks + old, 0, (cells - old) * sizeof(*c));
    g->nstacks = n;
    return 0;
}

static int add_blocks(struct mvz_growth *g, size_t k, struct mvz_cursor *c)
{
    mvz_get_uvarint(c); /* first */
    uint64_t count = mvz_get_uvarint(c);
    for (uint64_t i = 0; i < count && !c->bad; i++) {
        mvz_get_uvarint(c); /* address */
        uint64_t size = mvz_get_uvarint(c);
        mvz_get_uvarint(c); /* tid */
        mvz_get_uvarint(c); /* serial */
        uint64_t stack = mvz_get_uvarint(c);
        mvz_get_uvarint(c); /* flags */
        if (c->bad || stack > UINT32_MAX - 1)
            break;
        if (grow_stacks(g, (uint32_t)stack) < 0)
            return -1;
        g->bytes[stack * g->nsnaps + k] += size;
        g->blocks[stack * g->nsnaps + k]++;
    }
    return 0;
}

int mvz_growth_load(const char *path, struct mvz_growth *g, char *err, size_t errlen)
{
    memset(g, 0, sizeof(*g));
    if (mvz_snap_list(path, &g->all, &g->nall, err, errlen) < 0)
        return -1;
    g->snaps = malloc((g->nall ? g->nall : 1) * sizeof(*g->snaps));
    if (!g->snaps) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < g->nall; i++)
        if (g->all[i].complete)
            g->snaps[g->nsnaps++] = g->all[i]; /* names stay owned by all[] */
    struct mvz_reader rd;
    struct mvz_record rec;
    if (mvz_reader_open(&rd, path, err, errlen) < 0)
        return -1;
    int rc = 0;
    while (rc == 0 && mvz_reader_next(&rd, &rec) == 1) {
        if (rec.kind != MVZ_REC_SNAPSHOT_BLOCKS)
            continue;
        struct mvz_cursor c = mvz_cursor_make(rec.data, rec.len);
        long k = snap_index(g, (uint32_t)mvz_get_uvarint(&c));
        if (k >= 0 && !c.bad)
            rc = add_blocks(g, (size_t)k, &c);
    }
    mvz_reader_close(&rd);
    if (rc < 0)
        snprintf(err, errlen, "out of memory reading the snapshots of %s", path);
    return rc;
}

void mvz_growth_free(struct mvz_growth *g)
{
    free(g->snaps);
    mvz_snap_infos_free(g->all, g->nall);
    free(g->bytes);
    free(g->blocks);
    memset(g, 0, sizeof(*g));
}
