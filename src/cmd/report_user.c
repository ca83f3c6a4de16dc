/*
 * report_user.c - what the program recorded through the instrumentation
 * API (include/memviz.h), in `memviz report`: its counters and values as
 * they were at the end, its phases, its log; and --phase NAME, which
 * makes a phase the report's window.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/user.h"
#include "trace/format.h"
#include "cmd/cmd.h"
#include "cmd/report.h"
#include "util/fmt.h"
#include "util/json.h"

#define LOG_SHOWN 20

/* Percent of the run's wall time. */
static double share(const struct report *r, uint64_t ns)
{
    uint64_t d = r->p.sum.duration_ns;
    return d ? 100.0 * (double)ns / (double)d : 0;
}

static void print_stopwatch(const struct report *r, FILE *out, const struct mvz_user_instrument *in)
{
    uint64_t count, ns;
    char a[32];
    mvz_user_sw_total(in, &count, &ns);
    fprintf(out, "  %-8s %-32s %s section(s), %.6f s (%.1f%% of the run)\n", "stopwatch", in->name,
            mvz_fmt_count(count, a, sizeof(a)), (double)ns / 1e9, share(r, ns));
    for (size_t i = 0; in->nthreads > 1 && i < in->nthreads; i++)
        fprintf(out, "             thread %-8u %s section(s), %.6f s (%.1f%%)\n",
                in->threads[i].tid, mvz_fmt_count(in->threads[i].count, a, sizeof(a)),
                (double)in->threads[i].ns / 1e9, share(r, in->threads[i].ns));
}

static const struct mvz_tag_stats *tag_stats(const struct report *r, size_t id)
{
    static const struct mvz_tag_stats none;
    return id < r->p.tags.nids ? &r->p.tags.by_id[id] : &none;
}

static void print_tag(const struct report *r, FILE *out, const struct mvz_user_instrument *in,
                      size_t id)
{
    const struct mvz_tag_stats *t = tag_stats(r, id);
    char a[32], b[32], c[32], d[32];
    fprintf(out, "  %-8s %-32s %s live block(s), %s; at most %s at %.3f s; %s marked\n", "tag",
            in->name, mvz_fmt_count(t->live_blocks, a, sizeof(a)),
            mvz_fmt_bytes(t->live_bytes, b, sizeof(b)), mvz_fmt_bytes(t->max_bytes, c, sizeof(c)),
            (double)t->max_ts / 1e9, mvz_fmt_count(t->marked, d, sizeof(d)));
}

static void json_tag(const struct report *r, struct mvz_json *j, size_t id)
{
    const struct mvz_tag_stats *t = tag_stats(r, id);
    mvz_json_put_uint(j, "live_blocks", t->live_blocks);
    mvz_json_put_uint(j, "live_bytes", t->live_bytes);
    mvz_json_put_uint(j, "max_bytes", t->max_bytes);
    mvz_json_put_uint(j, "max_time_ns", t->max_ts);
    mvz_json_put_uint(j, "marked", t->marked);
}

static void json_stopwatch(const struct report *r, struct mvz_json *j,
                           const struct mvz_user_instrument *in)
{
    uint64_t count, ns;
    mvz_user_sw_total(in, &count, &ns);
    mvz_json_put_uint(j, "count", count);
    mvz_json_put_uint(j, "total_ns", ns);
    mvz_json_key(j, "threads");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < in->nthreads; i++) {
        mvz_json_begin_object(j);
        mvz_json_put_uint(j, "thread", in->threads[i].tid);
        mvz_json_put_uint(j, "count", in->threads[i].count);
        mvz_json_put_uint(j, "total_ns", in->threads[i].ns);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
    (void)r;
}

/* s in double quotes, as C writes it: a quote, a backslash, a control
 * character escaped, so the line stays one line. */
static void quote_text(char *dst, size_t cap, const char *s)
{
    size_t n = 0;
    dst[n++] = '"';
    for (; *s && n + 6 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            n += (size_t)snprintf(dst + n, cap - n, "\\%c", c);
        else if (c == '\n')
            n += (size_t)snprintf(dst + n, cap - n, "\\n");
        else if (c < 0x20 || c == 0x7f)
            n += (size_t)snprintf(dst + n, cap - n, "\\x%02x", c);
        else
            dst[n++] = (char)c;
    }
    dst[n++] = '"';
    dst[n] = 0;
}

void report_user_text(const struct report *r, FILE *out)
{
    const struct mvz_user *u = &r->p.trace.user;
    size_t shown = 0;
    for (size_t i = 0; i < u->nins; i++) {
        const struct mvz_user_instrument *in = &u->ins[i];
        if (!in->name || !in->kind)
            continue;
        char v[4 * MVZ_USER_TEXT_MAX + 3];
        if (in->kind == MVZ_USER_VALUE_TEXT) /* quoted: a string, maybe empty */
            quote_text(v, sizeof(v), in->text ? in->text : "");
        else
            mvz_user_format(in, v, sizeof(v));
        if (!shown++)
            fprintf(out, "\nInstruments (their last values):\n");
        if (in->kind == MVZ_USER_STOPWATCH) {
            print_stopwatch(r, out, in);
            continue;
        }
        if (in->kind == MVZ_USER_TAG_KIND) {
            print_tag(r, out, in, i);
            continue;
        }
        fprintf(out, "  %-8s %-32s %s\n", mvz_user_kind_name(in->kind), in->name,
                in->have ? v : "(never set)");
    }
    if (u->nphases) {
        fprintf(out, "\nPhases:");
        for (size_t i = 0; i < u->nphases; i++)
            fprintf(out, "%s \"%s\" at %.3f s", i ? "," : "", u->phases[i].text,
                    (double)u->phases[i].ts / 1e9);
        fputc('\n', out);
    }
    if (u->nlogs) {
        size_t from = u->nlogs > LOG_SHOWN ? u->nlogs - LOG_SHOWN : 0;
        fprintf(out, "\nLog (%s%zu line(s); --json has every line):\n", from ? "the last of " : "",
                u->nlogs);
        for (size_t i = from; i < u->nlogs; i++)
            fprintf(out, "  %10.3f s  [%u] %s\n", (double)u->logs[i].ts / 1e9, u->logs[i].tid,
                    u->logs[i].text);
    }
}

static void json_texts(struct mvz_json *j, const char *key, const char *field,
                       const struct mvz_user_text *v, size_t n)
{
    mvz_json_key(j, key);
    mvz_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        mvz_json_begin_object(j);
        mvz_json_key(j, field);
        mvz_json_string(j, v[i].text);
        mvz_json_put_uint(j, "t_ns", v[i].ts);
        mvz_json_put_uint(j, "thread", v[i].tid);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

void report_user_json(const struct report *r, struct mvz_json *j)
{
    const struct mvz_user *u = &r->p.trace.user;
    mvz_json_key(j, "instruments");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < u->nins; i++) {
        const struct mvz_user_instrument *in = &u->ins[i];
        if (!in->name || !in->kind)
            continue;
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "name", in->name);
        mvz_json_put_string(j, "kind", mvz_user_kind_name(in->kind));
        if (in->kind == MVZ_USER_STOPWATCH) {
            json_stopwatch(r, j, in);
            mvz_json_end_object(j);
            continue;
        }
        if (in->kind == MVZ_USER_TAG_KIND) {
            json_tag(r, j, i);
            mvz_json_end_object(j);
            continue;
        }
        mvz_json_key(j, "value");
        if (!in->have) {
            mvz_json_null(j);
        } else if (in->kind == MVZ_USER_VALUE_TEXT) {
            mvz_json_string(j, in->text ? in->text : "");
        } else if (in->kind == MVZ_USER_VALUE_DOUBLE) {
            char v[64];
            mvz_user_format(in, v, sizeof(v));
            mvz_json_raw(j, v);
        } else {
            mvz_json_int(j, in->value);
        }
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
    json_texts(j, "phases", "name", u->phases, u->nphases);
    json_texts(j, "log", "text", u->logs, u->nlogs);
}

int report_phase_window(struct report *r, const char *path)
{
    struct mvz_user u;
    char err[512];
    if (mvz_user_read(path, &u, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return -1;
    }
    int rc = mvz_user_phase_window(&u, r->o.phase, &r->o.from_ns, &r->o.to_ns);
    if (rc < 0) {
        char names[512] = "";
        size_t len = 0;
        for (size_t i = 0; i < u.nphases && len + 2 < sizeof(names); i++)
            len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "",
                                    u.phases[i].text);
        mvz_error("%s has no phase named '%s' (%s%s)", path, r->o.phase,
                  u.nphases ? "it has: " : "the program called memviz_phase for none",
                  u.nphases ? names : "");
    } else {
        r->o.windowed = 1;
    }
    mvz_user_free(&u);
    return rc;
}
