/*
 * trace_meta.h - decoding a trace's metadata records into struct
 * mvz_trace (trace_meta.c); used by the replay only. Each takes the
 * record's payload in c (c->bad set when it is damaged).
 */
#ifndef MVZ_ANALYSIS_TRACE_META_H
#define MVZ_ANALYSIS_TRACE_META_H

#include "analysis/replay.h"
#include "trace/buf.h"

/* Stack ids are dense and defined near their first use: an id far above
 * the stacks defined so far is damage, and is not given memory. */
static inline uint64_t mvz_trace_max_stack_id(const struct mvz_trace *t)
{
    return 2 * (uint64_t)t->nstacks + 65536;
}

void mvz_meta_process(struct mvz_trace *t, struct mvz_cursor *c);
void mvz_meta_module_load(struct mvz_trace *t, struct mvz_cursor *c);
void mvz_meta_module_unload(struct mvz_trace *t, struct mvz_cursor *c);
/* major: the trace's format version (stacks changed in 4) */
void mvz_meta_stack(struct mvz_trace *t, struct mvz_cursor *c, int major);
void mvz_meta_thread(struct mvz_trace *t, struct mvz_cursor *c);
void mvz_meta_child(struct mvz_trace *t, struct mvz_cursor *c);
void mvz_meta_notice(struct mvz_trace *t, struct mvz_cursor *c);
void mvz_meta_exit(struct mvz_trace *t, struct mvz_cursor *c);

#endif
