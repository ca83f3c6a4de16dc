/*
 * tags.h - the blocks a program marked with a tag (memviz_tag_mark,
 * include/memviz.h): per tag, how many marked blocks are live and their
 * bytes, the most bytes and when, and how many were marked, kept by the
 * profile as the replay goes (USER TAG records name each block marked).
 *
 * A mark may come in the file before the block's allocation (the writer
 * names the block as soon as it takes the mark, the allocation's record
 * may wait in a group): it waits for the block, by name.
 */
#ifndef MVZ_ANALYSIS_TAGS_H
#define MVZ_ANALYSIS_TAGS_H

#include <stddef.h>
#include <stdint.h>

struct mvz_tag_stats {
    uint64_t live_blocks, live_bytes, max_bytes, max_ts, marked;
};

struct mvz_tags {
    struct mvz_tag_stats *by_id; /* by the tag's instrument id */
    size_t nids;
    /* marked blocks by name: name, tag + 1 (0 empty), size, live */
    uint64_t *names, *sizes;
    uint32_t *tags;
    uint8_t *live;
    size_t slots, used;
};

/* Block `name` (size bytes) marked with tag at ts; live says whether the
 * replay has it live (else it is yet to come). */
void mvz_tags_mark(struct mvz_tags *t, uint32_t tag, uint64_t name, uint64_t size, int live,
                   uint64_t ts);
/* Block `name` was allocated / released at ts (only when t->used). */
void mvz_tags_alloc(struct mvz_tags *t, uint64_t name, uint64_t ts);
void mvz_tags_free(struct mvz_tags *t, uint64_t name);
void mvz_tags_clear(struct mvz_tags *t);

#endif
