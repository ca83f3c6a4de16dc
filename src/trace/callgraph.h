/*
 * callgraph.h - the call graph's part of the trace format (5.9), shared by
 * the agent (src/agent/callgraph.c) and the readers (src/analysis/callgraph.c).
 *
 * An instrumented program calls the agent at every entry (and exit) of
 * its functions. The agent keeps, per thread, the calling-context tree:
 * one node per distinct chain of calls from the synthetic root, each node
 * named by (parent node, callee's address), with its calls counted by
 * call site (the return address into the caller): a recursion's contexts
 * are as many as its depth, whichever of its sites made each call. A CALLGRAPH record holds one
 * thread's whole tree as it stood when written (the counts are totals, not
 * increments); a later record of the same thread supersedes an earlier one.
 *
 * A context's identity across threads (and across the STACK records that
 * name it) is its path hash, mvz_cg_path applied from the root down; two
 * contexts with the same path on two threads are one context of the merged
 * tree. With the call graph on, an allocation's stack is made from the
 * shadow stack: the call sites from the outermost, the allocation's own
 * return address innermost, and, outermost of all, a mark frame carrying
 * the context's path hash with the top bit set (no user-space address has
 * it). Readers take the mark out of the stack's frames.
 */
#ifndef MVZ_TRACE_CALLGRAPH_H
#define MVZ_TRACE_CALLGRAPH_H

#include <stdint.h>

/* The root's path hash; every other node's is mvz_cg_path(parent's, fn). */
#define MVZ_CG_ROOT_PATH UINT64_C(0x6d656d76697a4347)
#define MVZ_CG_MARK_BIT (UINT64_C(1) << 63)

/* (A macro too, for code built for other registers than its callers.) */
#define MVZ_CG_PATH_MIX(h) ((h) ^ ((h) >> 29))
#define MVZ_CG_PATH(parent, fn)                                                                    \
    ((MVZ_CG_PATH_MIX(((parent) ^ ((parent) >> 31) ^ (fn)) * UINT64_C(0x9E3779B97F4A7C15)) *       \
      UINT64_C(0xbf58476d1ce4e5b9)) ^                                                              \
     ((MVZ_CG_PATH_MIX(((parent) ^ ((parent) >> 31) ^ (fn)) * UINT64_C(0x9E3779B97F4A7C15)) *      \
       UINT64_C(0xbf58476d1ce4e5b9)) >>                                                            \
      32))

static inline uint64_t mvz_cg_path(uint64_t parent, uint64_t fn)
{
    return MVZ_CG_PATH(parent, fn);
}

/* The stack frame that names a context. */
static inline uint64_t mvz_cg_mark(uint64_t path)
{
    return path | MVZ_CG_MARK_BIT;
}

/* CALLGRAPH record flags. */
enum {
    MVZ_CG_ENDED = 1, /* the thread had ended: its tree is final */
};

/*
 * CALLGRAPH payload:
 *   uvarint tid, uvarint thread serial (unique in the process), uvarint ts
 *   (ns since the start), uvarint flags, uvarint module generation (of the
 *   addresses), uvarint first (the index of the first node listed, >= 1),
 *   uvarint n (nodes listed); then per node, in the order they were made
 *   (a parent before its children; the root, node 0, is never listed; a
 *   thread's tree comes in records of consecutive nodes, the first one's
 *   first being 1):
 *     uvarint parent, svarint fn - previous fn, svarint site - previous
 *     site, uvarint calls, uvarint inclusive ns;
 *   then uvarint unmatched (exits that matched no open call), uvarint
 *   untracked (calls beyond the agent's limits, counted in no node).
 */
/* MEMVIZ_CALLGRAPH_TIME, how often the agent times a call once a context
 * has had its first exact ones: "exact" (every call: 1) or N, a power of
 * two up to 1024 (one call in N, weighted N); NULL: the default, 8. 0: not
 * a valid value. */
#define MVZ_CG_TIME_EVERY_DEFAULT 8
static inline uint32_t mvz_cg_time_every_parse(const char *v)
{
    if (!v)
        return MVZ_CG_TIME_EVERY_DEFAULT;
    if (v[0] == 'e' && v[1] == 'x' && v[2] == 'a' && v[3] == 'c' && v[4] == 't' && !v[5])
        return 1;
    uint32_t n = 0;
    for (const char *c = v; *c; c++) {
        if (*c < '0' || *c > '9' || n > 1024)
            return 0;
        n = n * 10 + (uint32_t)(*c - '0');
    }
    return n >= 1 && n <= 1024 && !(n & (n - 1)) ? n : 0;
}

#endif
