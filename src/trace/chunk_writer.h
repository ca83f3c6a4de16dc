/*
 * chunk_writer.h - writes a trace file: the file header, then records grouped
 * into independently compressed chunks. Used by the agent for the whole trace
 * and by the CLI to append the authoritative EXIT record after the run.
 *
 * Each chunk goes out in one write(2) on an O_APPEND descriptor, so chunks
 * appended by several processes (a child announcing itself to its parent's
 * trace) never interleave inside a chunk.
 */
#ifndef MVZ_TRACE_CHUNK_WRITER_H
#define MVZ_TRACE_CHUNK_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "trace/buf.h"

/* Queued records, and where among them a compressed block should end
 * (uint32_t offsets into raw, increasing): zstd codes the literals of a
 * block with one Huffman table, and a block that mixes unlike data (a
 * HEAP_STREAMS record's sizes and block ages, say) codes both worse. */
struct mvz_cw_batch {
    struct mvz_buf raw;
    struct mvz_buf cuts;
};

struct mvz_chunk_writer {
    int fd;
    void *cctx;                 /* ZSTD_CCtx */
    struct mvz_cw_batch queued; /* records waiting for the next flush */
    struct mvz_buf out;         /* compressed chunk being written */
    uint64_t bytes_written;
    int error;           /* errno of the first failed write; later flushes are dropped */
    uint64_t bytes_lost; /* raw bytes that could not be written */
    uint64_t chunks;     /* flushes that consumed queued records (written or lost) */
    /* raw and compressed bytes of the latest chunk written; compression
     * may run outside the lock that guards the rest, so these are read
     * and written with relaxed atomics */
    uint64_t last_raw, last_packed;
};

/* A zstd compression context (ZSTD_CCtx) whose memory is mapped from the
 * kernel rather than taken from malloc; free it with ZSTD_freeCCtx. NULL
 * when out of memory. */
void *mvz_cw_new_cctx(void);

/* Compressing outside the lock that guards queued records: detach moves the
 * queued records into *taken (an empty buffer; they form the next chunk) and
 * leaves the writer an empty queue; write_detached compresses and writes
 * them later. Chunks are written in the order they were detached or
 * flushed only if the caller serializes the writes. */
void mvz_cw_detach(struct mvz_chunk_writer *w, struct mvz_cw_batch *taken);
/* between, when not NULL, is called after every MVZ_CW_PIECE bytes of
 * the batch compressed: a compression takes milliseconds, and the agent's
 * writer drains the threads' buffers meanwhile. It must not use the
 * writer's compression state (w->cctx, w->out). */
int mvz_cw_write_detached(struct mvz_chunk_writer *w, struct mvz_cw_batch *taken,
                          void (*between)(void));
#define MVZ_CW_PIECE (64u << 10)

/* Creates a writer for fd (opened O_WRONLY|O_APPEND). Returns 0 or -1. */
int mvz_cw_init(struct mvz_chunk_writer *w, int fd);
void mvz_cw_destroy(struct mvz_chunk_writer *w);

/* Writes the 16-byte file header; call once on a new, empty file. */
int mvz_cw_write_header(struct mvz_chunk_writer *w);

/* Queues one record for the next chunk. */
void mvz_cw_record(struct mvz_chunk_writer *w, uint8_t kind, const struct mvz_buf *payload);
/* The same, for a payload made of unlike parts: a compressed block ends
 * before each of the ncuts offsets into the payload (increasing; those
 * past its end are ignored). Only the compression changes: readers see
 * one zstd frame either way. */
void mvz_cw_record_cut(struct mvz_chunk_writer *w, uint8_t kind, const struct mvz_buf *payload,
                       const size_t *cuts, size_t ncuts);

/* Compresses the queued records into one chunk and writes it. Returns 0, or
 * -1 when the write failed (w->error says why). */
int mvz_cw_flush(struct mvz_chunk_writer *w);

/* Flushes when the queued records exceed this many bytes. */
#define MVZ_CW_FLUSH_AT (4u << 20)
/* The agent's writer compresses once this much is queued (or time is up). */
#define MVZ_CW_COMPRESS_AT (1u << 20)

#endif
