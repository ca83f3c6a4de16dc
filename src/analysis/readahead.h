/*
 * readahead.h - reads a trace's records in a second thread, ahead of the
 * replay: reading, decompressing and decoding HEAP records (most of a
 * trace) then overlap with the analysis of the events before them.
 * Records come out in file order, in batches; HEAP records as decoded
 * events, every other record as a copy of its payload.
 *
 * Without a second thread (it cannot be created) the same calls do the
 * work in the caller's thread.
 */
#ifndef MVZ_ANALYSIS_READAHEAD_H
#define MVZ_ANALYSIS_READAHEAD_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/replay.h"
#include "trace/reader.h"

/* One record of a batch. */
struct mvz_batch_record {
    struct mvz_record rec; /* data points into the batch's copy */
    /* HEAP records only: */
    int bad_header;                /* the header is damage: no events */
    int bad_event;                 /* decoding stopped at damage after n events */
    uint64_t first, claimed, late; /* from the header */
    size_t ev, n;                  /* its events: the batch's ev[ev .. ev + n) */
};

struct mvz_batch {
    struct mvz_batch *next;
    struct mvz_batch_record *recs;
    size_t nrecs, recs_cap;
    struct mvz_event *ev; /* in order; addr holds the block's name */
    size_t nev, ev_cap;
    uint8_t *copy; /* the records' payloads */
    size_t ncopy, copy_cap;
};

/* A release of an address that held no block gets this name. */
#define MVZ_NAME_NO_BLOCK UINT64_MAX

struct mvz_readahead;

/* Starts reading rd, which must stay open until mvz_readahead_stop.
 * Returns NULL when out of memory. */
struct mvz_readahead *mvz_readahead_start(struct mvz_reader *rd);
/* The next batch of records, or NULL at the end of the trace. */
struct mvz_batch *mvz_readahead_next(struct mvz_readahead *ra);
/* Gives a batch back once the caller is done with it. */
void mvz_readahead_done(struct mvz_readahead *ra, struct mvz_batch *b);
/* Stops the reading thread and frees everything. */
void mvz_readahead_stop(struct mvz_readahead *ra);

#endif
