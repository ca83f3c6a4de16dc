/*
 * chrome.c - `memviz export --format chrome`: the heap over time as Chrome
 * trace event JSON (the Trace Event Format's object form), which Perfetto
 * UI and chrome://tracing open.
 *
 * The trace holds counter events ("ph":"C"): "heap", the requested bytes
 * live, sampled at evenly spaced times of the window by the timeline replay
 * (src/analysis/timeline.h), plus one sample at the peak so that the
 * counter's maximum is the window's peak; "rss" when the agent sampled the
 * resident set size. An instant event marks the peak, and metadata events
 * name the process and its threads. Times are microseconds since the
 * agent started, as in `memviz report`.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/timeline.h"
#include "cmd/cmd.h"
#include "export/export.h"
#include "util/json.h"
#include "util/fmt.h"

/* A few hundred points: smooth enough to read the shape in Perfetto, small
 * enough that the file stays a few tens of KiB. */
#define CHROME_POINTS 400

/* The fields every event of a process carries: name, ph, pid, tid. */
static void begin_event(struct mvz_json *j, const char *name, const char *ph, int pid, int tid)
{
    mvz_json_begin_object(j);
    mvz_json_put_string(j, "name", name);
    mvz_json_put_string(j, "ph", ph);
    mvz_json_put_uint(j, "pid", (uint64_t)pid);
    mvz_json_put_uint(j, "tid", (uint64_t)tid);
}

static void name_event(struct mvz_json *j, const char *what, int pid, int tid, const char *name)
{
    begin_event(j, what, "M", pid, tid);
    mvz_json_put_uint(j, "ts",
                      0); /* not required for metadata, but some readers want every event timed */
    mvz_json_key(j, "args");
    mvz_json_begin_object(j);
    mvz_json_put_string(j, "name", name);
    mvz_json_end_object(j);
    mvz_json_end_object(j);
}

/* A thread that was named more than once keeps its last name. */
static int renamed_later(const struct mvz_trace *t, size_t i)
{
    for (size_t k = i + 1; k < t->nthreads; k++)
        if (t->threads[k].tid == t->threads[i].tid && t->threads[k].name)
            return 1;
    return 0;
}

static void metadata(struct mvz_json *j, const struct mvz_trace *t)
{
    const char *exe = t->argc ? t->argv[0] : t->exe ? t->exe : "process";
    char name[512];
    snprintf(name, sizeof(name), "%s (pid %d, memviz)", mvz_base_name(exe), t->pid);
    name_event(j, "process_name", t->pid, t->pid, name);
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].name && !renamed_later(t, i))
            name_event(j, "thread_name", t->pid, t->threads[i].tid, t->threads[i].name);
}

/* Counter values are process-wide: tid is the process's main thread. */
static void counter(struct mvz_json *j, const char *name, int pid, uint64_t ts_ns, uint64_t bytes)
{
    begin_event(j, name, "C", pid, pid);
    mvz_json_put_uint(j, "ts", ts_ns / 1000);
    mvz_json_key(j, "args");
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "bytes", bytes);
    mvz_json_end_object(j);
    mvz_json_end_object(j);
}

/* The heap series: the timeline's points in time order, with the peak
 * merged in before the first point at or after it. At the very start of
 * the run nothing is live yet, which gives the series its first value. */
static void heap_counter(struct mvz_json *j, const struct mvz_export *x,
                         const struct mvz_timeline *tl)
{
    int pid = x->p->trace.pid, peak_done = 0;
    if (tl->from_ns == 0 && x->peak_time_ns > 0)
        counter(j, "heap", pid, 0, 0);
    for (size_t i = 0; i < tl->npoints; i++) {
        if (!peak_done && x->peak_time_ns <= tl->t[i]) {
            counter(j, "heap", pid, x->peak_time_ns, x->peak_bytes);
            peak_done = 1;
        }
        counter(j, "heap", pid, tl->t[i], tl->heap[i]);
    }
    if (!peak_done)
        counter(j, "heap", pid, x->peak_time_ns, x->peak_bytes);
}

/* RSS as the timeline saw it; 0 means no sample had been taken yet. */
static void rss_counter(struct mvz_json *j, const struct mvz_export *x,
                        const struct mvz_timeline *tl)
{
    if (!x->p->trace.rss_samples)
        return;
    for (size_t i = 0; i < tl->npoints; i++)
        if (tl->rss[i])
            counter(j, "rss", x->p->trace.pid, tl->t[i], tl->rss[i]);
}

static void peak_instant(struct mvz_json *j, const struct mvz_export *x)
{
    begin_event(j, "heap peak", "i", x->p->trace.pid, x->p->trace.pid);
    mvz_json_put_uint(j, "ts", x->peak_time_ns / 1000);
    mvz_json_put_string(j, "s", "p");
    mvz_json_key(j, "args");
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "bytes", x->peak_bytes);
    mvz_json_put_uint(j, "time_ns", x->peak_time_ns);
    mvz_json_end_object(j);
    mvz_json_end_object(j);
}

/* otherData: where the numbers come from, for whoever opens the file. */
static void other_data(struct mvz_json *j, const struct mvz_export *x,
                       const struct mvz_timeline *tl)
{
    mvz_json_key(j, "otherData");
    mvz_json_begin_object(j);
    mvz_json_put_string(j, "memviz_trace", x->trace_path);
    mvz_json_put_uint(j, "from_ns", tl->from_ns);
    mvz_json_put_uint(j, "to_ns", tl->to_ns);
    mvz_json_put_uint(j, "peak_bytes", x->p->sum.peak_bytes);
    mvz_json_put_uint(j, "peak_time_ns", x->p->sum.peak_time_ns);
    mvz_json_put_string(j, "heap", "bytes requested and not yet released (docs/METRICS.md)");
    mvz_json_end_object(j);
}

static void write_trace(const struct mvz_export *x, const struct mvz_timeline *tl)
{
    struct mvz_json j;
    mvz_json_init(&j, x->out);
    mvz_json_begin_object(&j);
    mvz_json_key(&j, "traceEvents");
    mvz_json_begin_array(&j);
    metadata(&j, &x->p->trace);
    heap_counter(&j, x, tl);
    rss_counter(&j, x, tl);
    peak_instant(&j, x);
    mvz_json_end_array(&j);
    mvz_json_put_string(&j, "displayTimeUnit", "ms");
    other_data(&j, x, tl);
    mvz_json_end_object(&j);
    fputc('\n', x->out);
}

int mvz_export_chrome(struct mvz_export *x)
{
    struct mvz_timeline tl;
    if (mvz_export_heap_points(x, CHROME_POINTS, &tl) < 0)
        return -1;
    write_trace(x, &tl);
    mvz_timeline_free(&tl);
    return 0;
}
