/*
 * addrs.c - ADDRS records (addrs.h): each address a signed difference
 * from the record's one before, its varint's byte j in part min(j, 3).
 */
#include "analysis/addrs.h"

#include <stdlib.h>
#include <string.h>

void mvz_addrs_keep(struct mvz_addrs *a, struct mvz_cursor *c)
{
    uint64_t first = mvz_get_uvarint(c), n = mvz_get_uvarint(c), lens[MVZ_HS_PARTS - 1];
    for (int j = 0; j < MVZ_HS_PARTS - 1; j++)
        lens[j] = mvz_get_uvarint(c);
    size_t len = mvz_cursor_left(c);
    a->have = 0;
    if (c->bad || lens[0] > len || lens[1] > len - lens[0] || lens[2] > len - lens[0] - lens[1])
        return;
    if (len > a->cap) {
        uint8_t *d = realloc(a->data, len);
        if (!d)
            return;
        a->data = d;
        a->cap = len;
    }
    memcpy(a->data, c->p, len);
    size_t at = 0;
    for (int j = 0; j < MVZ_HS_PARTS; j++) {
        size_t l = j < MVZ_HS_PARTS - 1 ? lens[j] : len - at;
        a->part[j] = mvz_cursor_make(a->data + at, l);
        at += l;
    }
    a->first = first;
    a->n = n;
    a->have = 1;
}

void mvz_addrs_begin(struct mvz_addrs *a, uint64_t first, struct mvz_addrs_cursor *w)
{
    w->on = a->have && a->first == first;
    a->have = 0;
    if (w->on) {
        memcpy(w->part, a->part, sizeof(w->part));
        w->left = a->n;
        w->prev = 0;
    }
}

/* A varint whose byte j is in part min(j, 3); -1 when a part runs out. */
static int get_varint(struct mvz_addrs_cursor *w, uint64_t *v)
{
    *v = 0;
    for (unsigned j = 0, shift = 0; shift < 64; j++, shift += 7) {
        struct mvz_cursor *c = &w->part[j < MVZ_HS_PARTS - 1 ? j : MVZ_HS_PARTS - 1];
        if (c->p >= c->end)
            return -1;
        uint8_t b = *c->p++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

int mvz_addrs_next(struct mvz_addrs_cursor *w, uint64_t *addr)
{
    uint64_t v;
    if (!w->on || !w->left || get_varint(w, &v) < 0) {
        w->on = 0;
        return -1;
    }
    w->left--;
    w->prev += (uint64_t)mvz_unzigzag(v);
    *addr = w->prev;
    return 0;
}

void mvz_addrs_free(struct mvz_addrs *a)
{
    free(a->data);
    memset(a, 0, sizeof(*a));
}
