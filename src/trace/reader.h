/*
 * reader.h - reads a trace file record by record, surviving damage: a chunk
 * that fails its checksum or is cut short is skipped (the reader resyncs on
 * the next chunk header) and counted, so callers can warn and still report
 * what was readable. The file is read with pread, one chunk at a time, so
 * memory use is bounded by one chunk whatever the size of the trace.
 */
#ifndef MVZ_TRACE_READER_H
#define MVZ_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>

struct mvz_record {
    uint64_t chunk; /* number of the chunk it came from, from 1 */
    uint8_t kind;
    const uint8_t *data;
    size_t len;
};

struct mvz_reader {
    int fd;
    uint64_t size; /* file size when opened */
    uint64_t pos;  /* offset of the next chunk header */
    uint8_t *comp; /* current chunk, compressed */
    size_t comp_cap;
    int major, minor;
    void *dctx;
    uint8_t *raw; /* current chunk, decompressed */
    size_t raw_cap, raw_len, raw_pos;
    /* damage seen so far */
    uint64_t bad_chunks;    /* chunks that failed to decompress or verify */
    uint64_t bad_records;   /* records cut short inside a chunk */
    uint64_t skipped_bytes; /* bytes passed over while resyncing */
    int truncated;          /* the file ends inside a chunk */
    uint64_t chunks;        /* chunks loaded so far */
    /* Follow mode (a trace still being written): at what is written so
     * far, mvz_reader_next returns 0 for now; the caller may wait and call
     * it again, and it reads on from there. A chunk written in part is not
     * damage but the rest to come. wait_more, when set, is how the replay
     * waits: it returns 1 to read on, 0 to stop. */
    int follow;
    int (*wait_more)(void *arg);
    void *wait_arg;
};

/* Opens and maps path, checks the header. On error returns -1 and writes a
 * one-line reason into err. */
int mvz_reader_open(struct mvz_reader *r, const char *path, char *err, size_t errlen);
/* Returns 1 and fills rec, or 0 at the end of the file. */
int mvz_reader_next(struct mvz_reader *r, struct mvz_record *rec);
void mvz_reader_close(struct mvz_reader *r);
/* Moves the reader to the last chunks of the file, at least `bytes` of
 * them compressed (or 256 chunks), walking only their headers: where a
 * complete trace's last records are. 0, or -1 (damage on the way; the
 * reader has not moved). */
int mvz_reader_tail(struct mvz_reader *r, uint64_t bytes);

#endif
