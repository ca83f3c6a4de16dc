/*
 * synth.h - pieces of synthetic traces shared by the unit tests that write
 * traces by hand.
 */
#ifndef MVZ_TESTS_SYNTH_H
#define MVZ_TESTS_SYNTH_H

#include "trace/chunk_writer.h"
#include "trace/format.h"

/* The PROCESS record of a made-up `/bin/true`, pid 42. */
static inline void synth_put_process(struct mvz_chunk_writer *w)
{
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, 42);   /* pid */
    mvz_put_uvarint(&b, 1);    /* ppid */
    mvz_put_uvarint(&b, 0);    /* realtime */
    mvz_put_uvarint(&b, 0);    /* monotonic */
    mvz_put_uvarint(&b, 4096); /* page size */
    mvz_put_uvarint(&b, 64);   /* depth */
    mvz_put_uvarint(&b, 0);    /* child how */
    mvz_put_str(&b, "");
    mvz_put_str(&b, "/bin/true");
    mvz_put_str(&b, "/");
    mvz_put_uvarint(&b, 1);
    mvz_put_str(&b, "true");
    mvz_cw_record(w, MVZ_REC_PROCESS, &b);
    mvz_buf_free(&b);
}

#endif
