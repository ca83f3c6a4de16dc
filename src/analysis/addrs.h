/*
 * addrs.h - the ADDRS records of a trace made with `memviz run
 * --addresses` (format 5.8, docs/FORMAT.md): the replay keeps the latest
 * one until the HEAP record it is for, then takes its addresses one by
 * one, a new block's each.
 */
#ifndef MVZ_ANALYSIS_ADDRS_H
#define MVZ_ANALYSIS_ADDRS_H

#include <stddef.h>
#include <stdint.h>

#include "trace/buf.h"
#include "trace/heap_codec.h"

struct mvz_addrs {
    int have; /* a record is kept, not yet taken */
    uint64_t first, n;
    uint8_t *data;
    size_t cap;
    struct mvz_cursor part[MVZ_HS_PARTS];
};

/* The addresses of one HEAP record, as they are taken. */
struct mvz_addrs_cursor {
    struct mvz_cursor part[MVZ_HS_PARTS];
    uint64_t left, prev;
    int on; /* addresses to take */
};

/* Keeps the ADDRS record read from c (a damaged one, or one that cannot
 * be copied, is dropped: its blocks have no address). */
void mvz_addrs_keep(struct mvz_addrs *a, struct mvz_cursor *c);
/* Starts on the HEAP record `first`: w->on when the kept record is for it.
 * Either way the kept record is used up. */
void mvz_addrs_begin(struct mvz_addrs *a, uint64_t first, struct mvz_addrs_cursor *w);
/* The next new block's address: 0, or -1 when they ran out or are
 * damaged (w->on is then 0: the blocks after have none). */
int mvz_addrs_next(struct mvz_addrs_cursor *w, uint64_t *addr);
void mvz_addrs_free(struct mvz_addrs *a);

#endif
