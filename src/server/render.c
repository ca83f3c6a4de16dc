/*
 * render.c - the live state as readers get it (live.h): Prometheus text
 * metrics, the state document and the update lines of docs/LIVE.md. Each
 * rendering takes the published state under the lock and writes a string.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/live_priv.h"
#include "trace/format.h"
#include "util/fmt.h"
#include "util/json.h"

/* Prometheus label values: backslash, quote and newline escaped. */
static void label_value(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

static const char *program_of(const struct mvz_live *l, char *buf, size_t cap)
{
    size_t n = strcspn(l->command, " ");
    snprintf(buf, cap, "%.*s", (int)n, l->command);
    return mvz_base_name(buf);
}

/* "family{pid="..",program=".."[,name=".."]} " */
static void series(FILE *f, const char *family, const struct mvz_live *l, const char *name)
{
    char buf[512];
    fprintf(f, "%s{pid=\"%d\",program=\"", family, l->pid);
    label_value(f, program_of(l, buf, sizeof(buf)));
    if (name) {
        fputs("\",name=\"", f);
        label_value(f, name);
    }
    fputs("\"} ", f);
}

/* An info series: the string in a label, the sample 1. */
static void series_text(FILE *f, const char *family, const struct mvz_live *l, const char *name,
                        const char *text)
{
    char buf[512];
    fprintf(f, "%s{pid=\"%d\",program=\"", family, l->pid);
    label_value(f, program_of(l, buf, sizeof(buf)));
    fputs("\",name=\"", f);
    label_value(f, name);
    fputs("\",value=\"", f);
    label_value(f, text);
    fputs("\"} 1\n", f);
}

static void header(FILE *f, const char *family, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", family, help, family, type);
}

/* The heap's families: one series per process that has a sample. */
static void heap_metrics(FILE *f, struct mvz_live **v, size_t n)
{
    static const struct {
        const char *family, *type, *help;
    } fam[] = {
        {"memviz_heap_live_bytes", "gauge", "Bytes the program asked for in heap blocks live now."},
        {"memviz_heap_live_blocks", "gauge", "Heap blocks live now."},
        {"memviz_heap_peak_bytes", "gauge",
         "The most bytes live in heap blocks at any moment so far."},
        {"memviz_allocations_total", "counter", "Allocation calls so far."},
        {"memviz_allocated_bytes_total", "counter", "Bytes allocated so far."},
        {"memviz_frees_total", "counter", "Releases of heap blocks so far."},
        {"process_resident_memory_bytes", "gauge",
         "Resident memory of the process (its last RSS sample)."},
    };
    for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
        int any = 0;
        for (size_t i = 0; i < n; i++) {
            const struct mvz_live *l = v[i];
            if (!l->seq)
                continue;
            const struct sample *s = &l->ring[(l->seq - 1) % l->cap];
            uint64_t x[] = {s->heap_bytes,      s->heap_blocks, l->peak_bytes, s->allocations,
                            s->allocated_bytes, s->frees,       s->rss};
            if (!any++)
                header(f, fam[k].family, fam[k].type, fam[k].help);
            series(f, fam[k].family, l, NULL);
            fprintf(f, "%" PRIu64 "\n", x[k]);
        }
    }
}

/* The programs' instruments: counters, values, and stopwatches' time and
 * sections, a series each, labelled by name as well. */
static void user_metrics(FILE *f, struct mvz_live **v, size_t n)
{
    static const struct {
        int kind;
        const char *family, *type, *help;
    } fam[] = {
        {MVZ_USER_COUNTER, "memviz_instrument_total", "counter",
         "The program's counters (memviz_counter_add)."},
        {MVZ_USER_VALUE_INT, "memviz_instrument_value", "gauge",
         "The program's values (memviz_value_set)."},
        {MVZ_USER_STOPWATCH, "memviz_stopwatch_seconds_total", "counter",
         "Time in the program's stopwatches' sections, all threads."},
        {-MVZ_USER_STOPWATCH, "memviz_stopwatch_sections_total", "counter",
         "Sections the program's stopwatches timed."},
        {MVZ_USER_TAG_KIND, "memviz_tag_live_bytes", "gauge",
         "Bytes of the live blocks the program marked with the tag."},
        {-MVZ_USER_TAG_KIND, "memviz_tag_live_blocks", "gauge",
         "Live blocks the program marked with the tag."},
        {MVZ_USER_VALUE_TEXT, "memviz_instrument_info", "gauge",
         "The program's string values (memviz_value_set_string) in the label value; always 1."},
    };
    for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
        int any = 0, want = fam[k].kind < 0 ? -fam[k].kind : fam[k].kind;
        for (size_t p = 0; p < n; p++)
            for (size_t i = 0; i < v[p]->nins; i++) {
                const struct pub_instrument *in = &v[p]->ins[i];
                int kind = in->kind == MVZ_USER_VALUE_DOUBLE ? MVZ_USER_VALUE_INT : in->kind;
                if (kind != want)
                    continue;
                if (!any++)
                    header(f, fam[k].family, fam[k].type, fam[k].help);
                if (kind == MVZ_USER_VALUE_TEXT) {
                    series_text(f, fam[k].family, v[p], in->name, in->text);
                    continue;
                }
                series(f, fam[k].family, v[p], in->name);
                if (fam[k].kind < 0) {
                    fprintf(f, "%" PRIu64 "\n", in->count);
                } else if (kind == MVZ_USER_TAG_KIND) {
                    fprintf(f, "%" PRId64 "\n", in->value);
                } else if (kind == MVZ_USER_STOPWATCH) {
                    fprintf(f, "%.9f\n", (double)in->ns / 1e9);
                } else if (in->kind == MVZ_USER_VALUE_DOUBLE) {
                    double d;
                    memcpy(&d, &in->value, sizeof(d));
                    fprintf(f, "%.17g\n", d);
                } else {
                    fprintf(f, "%" PRId64 "\n", in->value);
                }
            }
    }
}

int mvz_live_metrics_all(struct mvz_live **v, size_t n, char **out, size_t *len)
{
    FILE *f = open_memstream(out, len);
    if (!f)
        return -1;
    for (size_t i = 0; i < n; i++) /* always in this order: no other place takes two */
        pthread_mutex_lock(&v[i]->mu);
    heap_metrics(f, v, n);
    user_metrics(f, v, n);
    for (size_t i = n; i-- > 0;)
        pthread_mutex_unlock(&v[i]->mu);
    return fclose(f) == 0 ? 0 : -1;
}

int mvz_live_metrics(struct mvz_live *l, char **out, size_t *len)
{
    return mvz_live_metrics_all(&l, 1, out, len);
}

static void kv_u(struct mvz_json *j, const char *k, uint64_t v)
{
    mvz_json_key(j, k);
    mvz_json_uint(j, v);
}

/* The top sites; their frames are JSON already. */
static void json_sites(struct mvz_live *l, struct mvz_json *j)
{
    mvz_json_key(j, "sites");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < l->ntop; i++) {
        const struct top_site *t = &l->top[i];
        mvz_json_begin_object(j);
        kv_u(j, "live_bytes", t->live_bytes);
        kv_u(j, "live_blocks", t->live_blocks);
        kv_u(j, "allocations", t->allocations);
        kv_u(j, "allocated_bytes", t->allocated_bytes);
        mvz_json_key(j, "frames");
        mvz_json_raw(j, t->frames ? t->frames : "[]");
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void json_sample(struct mvz_json *j, const struct sample *s)
{
    mvz_json_begin_object(j);
    kv_u(j, "t_ns", s->t_ns);
    kv_u(j, "heap_bytes", s->heap_bytes);
    kv_u(j, "heap_blocks", s->heap_blocks);
    kv_u(j, "rss_bytes", s->rss);
    kv_u(j, "allocations", s->allocations);
    kv_u(j, "frees", s->frees);
    kv_u(j, "allocated_bytes", s->allocated_bytes);
    mvz_json_end_object(j);
}

static void json_texts(struct mvz_json *j, const char *key, const char *field,
                       const struct pub_text *v, size_t n)
{
    mvz_json_key(j, key);
    mvz_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        mvz_json_begin_object(j);
        mvz_json_key(j, field);
        mvz_json_string(j, v[i].text);
        kv_u(j, "t_ns", v[i].ts);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

/* The program's instruments, phases and last log lines. */
static void json_user(struct mvz_live *l, struct mvz_json *j)
{
    mvz_json_key(j, "instruments");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < l->nins; i++) {
        const struct pub_instrument *in = &l->ins[i];
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "name", in->name);
        mvz_json_key(j, "kind");
        mvz_json_string(j, in->kind == MVZ_USER_COUNTER     ? "counter"
                           : in->kind == MVZ_USER_STOPWATCH ? "stopwatch"
                           : in->kind == MVZ_USER_TAG_KIND  ? "tag"
                                                            : "value");
        if (in->kind == MVZ_USER_STOPWATCH) {
            kv_u(j, "count", in->count);
            kv_u(j, "total_ns", in->ns);
            mvz_json_end_object(j);
            continue;
        }
        if (in->kind == MVZ_USER_TAG_KIND) {
            kv_u(j, "live_blocks", in->count);
            kv_u(j, "live_bytes", (uint64_t)in->value);
            kv_u(j, "max_bytes", in->ns);
            kv_u(j, "marked", in->marked);
            mvz_json_end_object(j);
            continue;
        }
        mvz_json_key(j, "value");
        if (in->kind == MVZ_USER_VALUE_TEXT) {
            mvz_json_string(j, in->text);
        } else if (in->kind == MVZ_USER_VALUE_DOUBLE) {
            double d;
            char buf[64];
            memcpy(&d, &in->value, sizeof(d));
            snprintf(buf, sizeof(buf), "%.17g", d);
            mvz_json_raw(j, buf);
        } else {
            mvz_json_int(j, in->value);
        }
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
    json_texts(j, "phases", "name", l->phases, l->nphases);
    json_texts(j, "log", "text", l->log, l->nlog);
    json_texts(j, "snapshots", "name", l->snaps, l->nsnaps);
    mvz_json_key(j, "threads");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < l->nthreads; i++) {
        mvz_json_begin_object(j);
        kv_u(j, "tid", l->threads[i].tid);
        mvz_json_put_string(j, "name", l->threads[i].name);
        kv_u(j, "live_bytes", l->threads[i].live_bytes);
        kv_u(j, "allocations", l->threads[i].allocations);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void json_common(struct mvz_live *l, struct mvz_json *j)
{
    kv_u(j, "peak_bytes", l->peak_bytes);
    kv_u(j, "peak_time_ns", l->peak_time_ns);
    mvz_json_key(j, "ended");
    mvz_json_bool(j, l->ended);
}

int mvz_live_state_json(struct mvz_live *l, char **out, size_t *len)
{
    FILE *f = open_memstream(out, len);
    if (!f)
        return -1;
    struct mvz_json j;
    mvz_json_init(&j, f);
    pthread_mutex_lock(&l->mu);
    mvz_json_begin_object(&j);
    kv_u(&j, "memviz_live", 1);
    mvz_json_key(&j, "process");
    mvz_json_begin_object(&j);
    kv_u(&j, "pid", (uint64_t)l->pid);
    mvz_json_put_string(&j, "command", l->command);
    kv_u(&j, "start_realtime_ns", l->start_realtime_ns);
    mvz_json_end_object(&j);
    kv_u(&j, "period_ns", l->o.period_ns);
    kv_u(&j, "sample_bytes", l->sample_bytes); /* not 0: the numbers are estimates */
    kv_u(&j, "sample_now", l->sample_now);
    kv_u(&j, "window_ns", l->o.window_ns);
    uint64_t first = l->seq > l->cap - 1 ? l->seq - (l->cap - 1) : 0;
    first = first > l->oldest ? first : l->oldest;
    kv_u(&j, "first_seq", first);
    kv_u(&j, "next_seq", l->seq);
    json_common(l, &j);
    mvz_json_key(&j, "samples");
    mvz_json_begin_array(&j);
    for (uint64_t k = first; k < l->seq; k++)
        json_sample(&j, &l->ring[k % l->cap]);
    mvz_json_end_array(&j);
    json_sites(l, &j);
    json_user(l, &j);
    mvz_json_end_object(&j);
    pthread_mutex_unlock(&l->mu);
    return fclose(f) == 0 ? 0 : -1; /* the document ends with its newline */
}

int mvz_live_update_json(struct mvz_live *l, uint64_t seq, char **out, size_t *len)
{
    pthread_mutex_lock(&l->mu);
    int rc = seq >= l->seq ? 0 : l->seq - seq > l->cap - 1 || seq < l->oldest ? -2 : 1;
    if (rc != 1) {
        pthread_mutex_unlock(&l->mu);
        return rc;
    }
    FILE *f = open_memstream(out, len);
    if (!f) {
        pthread_mutex_unlock(&l->mu);
        return -1;
    }
    struct mvz_json j;
    mvz_json_init(&j, f);
    mvz_json_begin_object(&j);
    kv_u(&j, "seq", seq);
    kv_u(&j, "pid", (uint64_t)l->pid); /* known only after the first lines, at times */
    mvz_json_key(&j, "sample");
    json_sample(&j, &l->ring[seq % l->cap]);
    json_common(l, &j);
    if (seq + 1 == l->seq) { /* the latest: with the top sites as they are now */
        json_sites(l, &j);
        json_user(l, &j);
    }
    mvz_json_end_object(&j);
    pthread_mutex_unlock(&l->mu);
    return fclose(f) == 0 ? 1 : -1;
}
