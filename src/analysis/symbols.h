/*
 * symbols.h - symbolizes a trace's stacks: for each stack, the modules that
 * were mapped in its generation are handed to a symbolizer (one per
 * generation, created on first use), which resolves every return address.
 */
#ifndef MVZ_ANALYSIS_SYMBOLS_H
#define MVZ_ANALYSIS_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/replay.h"
#include "analysis/symbolize.h"

struct mvz_symbols;

/* Takes over t's warmed symbolizer (below) when there is one. */
struct mvz_symbols *mvz_symbols_new(const struct mvz_trace *t);
/* The variable at data address addr in generation gen, and the offset in
 * it; NULL when none. */
const char *mvz_symbols_data(struct mvz_symbols *s, uint32_t gen, uint64_t addr, uint64_t *offset);
/* The DWARF of the module holding addr in generation gen, and its bias;
 * NULL when none (analysis/types.h reads types from it). */
Dwarf *mvz_symbols_dwarf(struct mvz_symbols *s, uint32_t gen, uint64_t addr, uint64_t *bias);
/* Symbols of stacks kept as frames (a merged profile): takes over fs. */
struct mvz_framestore;
struct mvz_symbols *mvz_symbols_new_stored(struct mvz_framestore *fs);
void mvz_symbols_free(struct mvz_symbols *s);
/* Fills out with the frames of stack `id`, innermost first, inlined frames
 * included; returns how many (at least 1: stacks that were not recorded get
 * one descriptive pseudo-frame). */
size_t mvz_symbols_stack(struct mvz_symbols *s, uint32_t id, struct mvz_frame *out, size_t max);
/* The frames of one return address of a stack captured in module
 * generation gen, its inlined calls expanded: what mvz_symbols_stack
 * gives for that address. */
size_t mvz_symbols_address(struct mvz_symbols *s, uint32_t gen, uint64_t pc, struct mvz_frame *out,
                           size_t max);

/*
 * Warming up: most of a small report's time went to opening debugging
 * information (decompressing it) after the replay. The replay starts a
 * thread that builds and warms the symbolizer of the modules mapped at
 * the start as soon as they are known (mvz_symbols_warm_start), joins it at
 * its end (mvz_symbols_warm_finish), and mvz_symbols_new adopts it.
 */
struct mvz_symbols_warm;
struct mvz_symbols_warm *mvz_symbols_warm_start(const struct mvz_trace *t, uint32_t gen);
void mvz_symbols_warm_finish(struct mvz_symbols_warm *w);
void mvz_symbols_warm_free(struct mvz_symbols_warm *w);

#endif
