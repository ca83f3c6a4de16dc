/*
 * framestore.h - stacks kept as symbolized frames rather than addresses:
 * the stacks of a profile merged from several traces (merge.h), where one
 * return address means different code in different processes. Equal frame
 * sequences get the same id, so the same code path in two processes is one
 * site.
 */
#ifndef MVZ_ANALYSIS_FRAMESTORE_H
#define MVZ_ANALYSIS_FRAMESTORE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/symbolize.h"

struct mvz_framestore;

struct mvz_framestore *mvz_framestore_new(void);
void mvz_framestore_free(struct mvz_framestore *fs);
/* The id of the stack made of frames f[0..n) (innermost first; strings are
 * copied, addresses are not kept): ids start at 1, and the same frames give
 * the same id. 0 when out of memory. */
uint32_t mvz_framestore_add(struct mvz_framestore *fs, const struct mvz_frame *f, size_t n);
/* Fills out with at most max frames of stack id; returns how many (0 for
 * an unknown id). The strings live as long as fs. */
size_t mvz_framestore_get(const struct mvz_framestore *fs, uint32_t id, struct mvz_frame *out,
                          size_t max);

#endif
