/*
 * tags.c - see tags.h. A marked block stays in the table until its
 * release (removed with a backward shift, so no tombstones pile up).
 */
#include "analysis/tags.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(const struct mvz_tags *t, uint64_t name)
{
    return (size_t)((name * 0x9E3779B97F4A7C15ull) >> 17) & (t->slots - 1);
}

static long find(const struct mvz_tags *t, uint64_t name)
{
    if (!t->slots)
        return -1;
    for (size_t i = slot_of(t, name);; i = (i + 1) & (t->slots - 1)) {
        if (!t->tags[i])
            return -1;
        if (t->names[i] == name)
            return (long)i;
    }
}

static int grow(struct mvz_tags *t)
{
    size_t n = t->slots ? 2 * t->slots : 1024;
    struct mvz_tags g = {t->by_id, t->nids, calloc(n, 8), calloc(n, 8), calloc(n, 4), calloc(n, 1),
                         n,        0};
    if (!g.names || !g.sizes || !g.tags || !g.live) {
        free(g.names), free(g.sizes), free(g.tags), free(g.live);
        return -1;
    }
    for (size_t i = 0; i < t->slots; i++) {
        if (!t->tags[i])
            continue;
        size_t j = slot_of(&g, t->names[i]);
        while (g.tags[j])
            j = (j + 1) & (n - 1);
        g.names[j] = t->names[i], g.sizes[j] = t->sizes[i], g.tags[j] = t->tags[i];
        g.live[j] = t->live[i];
        g.used++;
    }
    free(t->names), free(t->sizes), free(t->tags), free(t->live);
    *t = g;
    return 0;
}

static struct mvz_tag_stats *stats(struct mvz_tags *t, uint32_t tag)
{
    if (tag >= t->nids) {
        size_t n = tag + 16;
        struct mvz_tag_stats *v = realloc(t->by_id, n * sizeof(*v));
        if (!v)
            return NULL;
        memset(v + t->nids, 0, (n - t->nids) * sizeof(*v));
        t->by_id = v;
        t->nids = n;
    }
    return &t->by_id[tag];
}

static void went_live(struct mvz_tag_stats *s, uint64_t size, uint64_t ts)
{
    s->live_blocks++;
    s->live_bytes += size;
    if (s->live_bytes > s->max_bytes) {
        s->max_bytes = s->live_bytes;
        s->max_ts = ts;
    }
}

void mvz_tags_mark(struct mvz_tags *t, uint32_t tag, uint64_t name, uint64_t size, int live,
                   uint64_t ts)
{
    struct mvz_tag_stats *s = stats(t, tag);
    if (!s || find(t, name) >= 0) /* marked twice: the first tag stands */
        return;
    if (2 * (t->used + 1) > t->slots && grow(t) < 0)
        return;
    size_t i = slot_of(t, name);
    while (t->tags[i])
        i = (i + 1) & (t->slots - 1);
    t->names[i] = name, t->sizes[i] = size, t->tags[i] = tag + 1, t->live[i] = (uint8_t)live;
    t->used++;
    s->marked++;
    if (live)
        went_live(s, size, ts);
}

void mvz_tags_alloc(struct mvz_tags *t, uint64_t name, uint64_t ts)
{
    long i = find(t, name);
    if (i < 0 || t->live[i])
        return;
    t->live[i] = 1;
    went_live(&t->by_id[t->tags[i] - 1], t->sizes[i], ts);
}

void mvz_tags_free(struct mvz_tags *t, uint64_t name)
{
    long at = find(t, name);
    if (at < 0)
        return;
    size_t i = (size_t)at;
    if (t->live[i]) {
        struct mvz_tag_stats *s = &t->by_id[t->tags[i] - 1];
        s->live_blocks--;
        s->live_bytes -= t->sizes[i];
    }
    /* backward shift: the entries after it that belong before it move up */
    for (size_t j = (i + 1) & (t->slots - 1);; j = (j + 1) & (t->slots - 1)) {
        if (!t->tags[j])
            break;
        size_t home = slot_of(t, t->names[j]);
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            t->names[i] = t->names[j], t->sizes[i] = t->sizes[j], t->tags[i] = t->tags[j];
            t->live[i] = t->live[j];
            i = j;
        }
    }
    t->tags[i] = 0;
    t->used--;
}

void mvz_tags_clear(struct mvz_tags *t)
{
    free(t->by_id), free(t->names), free(t->sizes), free(t->tags), free(t->live);
    memset(t, 0, sizeof(*t));
}
