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
#include <stdint.h>

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

/* ---- instruments (docs/LIVE.md): seen live by `memviz run --live` and
 * `memviz live`, and afterwards by `memviz report` ----
 *
 * A handle is made once (by name: the same name gives the same handle)
 * and updated as often as wanted: an update is one atomic add or store, a
 * few nanoseconds, with no lock and nothing written; memviz reads every
 * instrument every 100 ms. Handles are never freed. Without memviz the
 * functions do nothing and the handles are dummies. */
typedef struct memviz_counter memviz_counter;
typedef struct memviz_value memviz_value;

/* A count: passes through a loop, requests served, bytes sent. */
memviz_counter *memviz_counter_new(const char *name);
void memviz_counter_add(memviz_counter *c, int64_t n);

/* A value the program sets: a queue's length, a cache's size. */
memviz_value *memviz_value_new(const char *name);
memviz_value *memviz_value_new_double(const char *name);
void memviz_value_set(memviz_value *v, int64_t x);
void memviz_value_set_double(memviz_value *v, double x);
/* A value that is a string: a state's name, a configuration. The set
 * copies s (its first 127 bytes) under a spin lock: tens of nanoseconds,
 * not for a tight loop. memviz keeps the latest text of each period. */
memviz_value *memviz_value_new_string(const char *name);
void memviz_value_set_string(memviz_value *v, const char *s);

/* A value memviz reads by calling read(ctx) every 100 ms, on a thread of
 * its own (not the program's): read must be safe to call from any thread
 * (take the locks what it reads needs), and should be quick. */
void memviz_value_poll(const char *name, int64_t (*read)(void *ctx), void *ctx);

/* A table's statistics, filled by fill(ctx, s) every 100 ms on memviz's
 * thread (same rules as memviz_value_poll); they show as the values
 * "NAME.elements", "NAME.buckets", "NAME.empty_buckets" and
 * "NAME.longest_chain". include/memviz.hpp has the adapter for
 * std::unordered_map and std::unordered_set. */
struct memviz_table_stats {
    size_t elements, buckets, empty_buckets, longest_chain;
};
void memviz_table(const char *name, void (*fill)(void *ctx, struct memviz_table_stats *s),
                  void *ctx);

/* The time spent in sections of the program, per thread and in all:
 * start and stop in any places (not necessarily one function); a start
 * while it runs, or a stop while it does not, is ignored. */
typedef struct memviz_stopwatch memviz_stopwatch;
memviz_stopwatch *memviz_stopwatch_new(const char *name);
void memviz_stopwatch_start(memviz_stopwatch *s);
void memviz_stopwatch_stop(memviz_stopwatch *s);

/* Blocks of one kind the program marks (a session, a request's buffers):
 * how many marked blocks are live, their bytes, their most and when, how
 * many were marked. A block is marked once (a second tag is ignored) and
 * forgotten when freed; mark it after allocating it. */
typedef struct memviz_tag memviz_tag;
memviz_tag *memviz_tag_new(const char *name);
void memviz_tag_mark(memviz_tag *tag, const void *block);

/* A line in the trace's log, printf-like, with its time and thread (at
 * most 1,023 bytes). */
void memviz_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* From now on the program is in phase `name` ("load", "serve"): `memviz
 * report --phase NAME` reports that stretch of the run alone. */
void memviz_phase(const char *name);

#ifdef __cplusplus
}
#endif

#endif
