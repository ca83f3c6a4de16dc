/*
 * merge.h - one profile of several traces: the images of a process tree
 * (`memviz report --children`, `memviz export --children`). Each image's
 * sites are symbolized and keyed by their frames under one outermost frame
 * naming the image's program, so equal code paths of one program in two
 * processes are one site; the summary and the threads are the images'
 * together. Numbers "at the peak" are at each image's own peak (summed: the
 * images' peaks need not coincide); see docs/METRICS.md.
 *
 * Memory: one image's profile at a time, plus the merged sites and their
 * frames.
 */
#ifndef MVZ_ANALYSIS_MERGE_H
#define MVZ_ANALYSIS_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/profile.h"
#include "analysis/symbols.h"

struct mvz_merge {
    /* Sites by merged stack id; trace: the first image's metadata with no
     * stack table (ids are the frame store's), and every image's threads. */
    struct mvz_profile p;
    size_t nimages;
    /* private */
    struct mvz_framestore *fs;
    struct mvz_frame *frames;
    uint64_t first_start_ns, end_ns; /* wall clock */
    int failed;
};

int mvz_merge_init(struct mvz_merge *m);
/* Adds an image's loaded profile under an outermost frame named `program`.
 * The first image's trace is taken over (img->trace is left empty). */
int mvz_merge_add(struct mvz_merge *m, struct mvz_profile *img, const char *program,
                  const char *exe);
/* Moves the merged profile to *out (free it with mvz_profile_free) and
 * returns the symbols of its stacks (free with mvz_symbols_free); NULL when
 * out of memory, m freed either way. */
struct mvz_symbols *mvz_merge_finish(struct mvz_merge *m, struct mvz_profile *out);
void mvz_merge_free(struct mvz_merge *m);

#endif
