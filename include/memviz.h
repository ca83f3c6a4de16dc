/*
 * memviz.h - what a program can ask of memviz, the memory profiler.
 *
 * Every function does nothing when the program runs without memviz: link
 * with -lmemviz-stub (installed with memviz; memviz's agent, preloaded by
 * `memviz run`, takes the calls over), or declare the functions weak and
 * test them before calling:
 *
 *     void memviz_snapshot(const char *name) __attribute__((weak));
 *     ...
 *     if (memviz_snapshot)
 *         memviz_snapshot("after-load");
 *
 * docs/SNAPSHOTS.md says what a snapshot holds and how to read it.
 */
#ifndef MEMVIZ_H
#define MEMVIZ_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Takes a heap snapshot named `name` (NULL or "": "snapshot-N"). Returns
 * once the snapshot is consistent; the scan goes on while the program runs.
 * The program's other threads are held meanwhile (milliseconds). Not for a
 * signal handler (it takes locks): `memviz run --snapshot-on SIGNAL` takes
 * snapshots on a signal for you. */
void memviz_snapshot(const char *name);

/* Memory memviz does not know to scan for pointers (a region the program
 * got from a custom allocator, say) is a root from now on: the blocks it
 * points to are reachable. n == 0 stops it being one. */
void memviz_register_root(const void *p, size_t n);

/* The heap block at `block` (and what it alone keeps alive) is not to be
 * reported as lost: it counts as still reachable. Forgotten when the block
 * is freed. */
void memviz_ignore(const void *block);

#ifdef __cplusplus
}
#endif

#endif
