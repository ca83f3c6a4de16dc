/*
 * user.c - USER records into struct mvz_user (user.h). Damage is dropped:
 * an id beyond the definitions of the trace gets a nameless slot, which
 * the readers leave out.
 */
#include "analysis/user.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/format.h"
#include "trace/reader.h"

#define MAX_IDS 65536

static struct mvz_user_instrument *slot(struct mvz_user *u, uint64_t id)
{
    if (id >= MAX_IDS)
        return NULL;
    if (id >= u->nins) {
        size_t n = (size_t)id + 1;
        struct mvz_user_instrument *v = realloc(u->ins, n * sizeof(*v));
        if (!v)
            return NULL;
        memset(v + u->nins, 0, (n - u->nins) * sizeof(*v));
        u->ins = v;
        u->nins = n;
    }
    return &u->ins[id];
}

static void add_text(struct mvz_user_text **v, size_t *n, size_t *cap, struct mvz_user_text t)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        struct mvz_user_text *nv = realloc(*v, c * sizeof(*nv));
        if (!nv) {
            free(t.text);
            return;
        }
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = t;
}

static void sw_set(struct mvz_user_instrument *in, uint32_t tid, uint64_t count, uint64_t ns)
{
    size_t i = 0;
    while (i < in->nthreads && in->threads[i].tid != tid)
        i++;
    if (i == in->nthreads) {
        struct mvz_user_sw_thread *v = realloc(in->threads, (i + 1) * sizeof(*v));
        if (!v)
            return;
        in->threads = v;
        in->nthreads = i + 1;
        in->threads[i].tid = tid;
    }
    in->threads[i].count = count;
    in->threads[i].ns = ns;
    in->have = 1;
}

void mvz_user_sw_total(const struct mvz_user_instrument *in, uint64_t *count, uint64_t *ns)
{
    *count = *ns = 0;
    for (size_t i = 0; i < in->nthreads; i++) {
        *count += in->threads[i].count;
        *ns += in->threads[i].ns;
    }
}

void mvz_user_add_snapshot(struct mvz_user *u, uint64_t ts, const char *name)
{
    char *copy = strdup(name ? name : "");
    if (copy)
        add_text(&u->snapshots, &u->nsnapshots, &u->snapshots_cap,
                 (struct mvz_user_text){ts, 0, copy});
}

void mvz_user_add_mark(struct mvz_user *u, uint64_t name, uint32_t tag)
{
    if (u->nmarks == u->marks_cap) {
        size_t cap = u->marks_cap ? 2 * u->marks_cap : 256;
        struct mvz_user_mark *v = realloc(u->marks, cap * sizeof(*v));
        if (!v)
            return;
        u->marks = v;
        u->marks_cap = cap;
    }
    u->marks[u->nmarks++] = (struct mvz_user_mark){name, tag};
}

void mvz_user_decode(struct mvz_user *u, struct mvz_cursor *c)
{
    uint64_t what = mvz_get_uvarint(c);
    if (what == MVZ_USER_STOPWATCH_SAMPLE) {
        mvz_get_uvarint(c); /* ts */
        while (mvz_cursor_left(c) && !c->bad) {
            uint64_t id = mvz_get_uvarint(c), tid = mvz_get_uvarint(c);
            uint64_t count = mvz_get_uvarint(c), ns = mvz_get_uvarint(c);
            struct mvz_user_instrument *in = c->bad ? NULL : slot(u, id);
            if (in)
                sw_set(in, (uint32_t)tid, count, ns);
        }
        return;
    }
    if (what == MVZ_USER_DEF) {
        uint64_t id = mvz_get_uvarint(c), kind = mvz_get_uvarint(c);
        char *name = mvz_get_str(c);
        struct mvz_user_instrument *in = c->bad || !name ? NULL : slot(u, id);
        if (!in) {
            free(name);
            return;
        }
        free(in->name);
        in->name = name;
        in->kind = (int)kind;
    } else if (what == MVZ_USER_SAMPLE) {
        mvz_get_uvarint(c); /* ts */
        while (mvz_cursor_left(c) && !c->bad) {
            uint64_t id = mvz_get_uvarint(c);
            int64_t v = mvz_get_svarint(c);
            struct mvz_user_instrument *in = c->bad ? NULL : slot(u, id);
            if (in) {
                in->value = v;
                in->have = 1;
            }
        }
    } else if (what == MVZ_USER_TEXT) {
        mvz_get_uvarint(c); /* ts */
        uint64_t id = mvz_get_uvarint(c);
        char *text = mvz_get_str(c);
        struct mvz_user_instrument *in = c->bad || !text ? NULL : slot(u, id);
        if (!in) {
            free(text);
            return;
        }
        free(in->text);
        in->text = text;
        in->have = 1;
    } else if (what == MVZ_USER_LOG || what == MVZ_USER_PHASE) {
        uint64_t ts = mvz_get_uvarint(c), tid = mvz_get_uvarint(c);
        char *text = mvz_get_str(c);
        if (c->bad || !text) {
            free(text);
            return;
        }
        struct mvz_user_text t = {ts, (uint32_t)tid, text};
        if (what == MVZ_USER_LOG)
            add_text(&u->logs, &u->nlogs, &u->logs_cap, t);
        else
            add_text(&u->phases, &u->nphases, &u->phases_cap, t);
    }
}

void mvz_user_free(struct mvz_user *u)
{
    for (size_t i = 0; i < u->nins; i++) {
        free(u->ins[i].name);
        free(u->ins[i].text);
        free(u->ins[i].threads);
    }
    for (size_t i = 0; i < u->nlogs; i++)
        free(u->logs[i].text);
    for (size_t i = 0; i < u->nphases; i++)
        free(u->phases[i].text);
    for (size_t i = 0; i < u->nsnapshots; i++)
        free(u->snapshots[i].text);
    free(u->snapshots);
    free(u->ins);
    free(u->marks);
    free(u->logs);
    free(u->phases);
    memset(u, 0, sizeof(*u));
}

int mvz_user_phase_window(const struct mvz_user *u, const char *name, uint64_t *from, uint64_t *to)
{
    for (size_t i = u->nphases; i-- > 0;)
        if (!strcmp(u->phases[i].text, name)) {
            *from = u->phases[i].ts;
            *to = i + 1 < u->nphases ? u->phases[i + 1].ts : UINT64_MAX;
            return 0;
        }
    return -1;
}

void mvz_user_format(const struct mvz_user_instrument *in, char *buf, size_t cap)
{
    if (in->kind == MVZ_USER_VALUE_DOUBLE) {
        double d;
        memcpy(&d, &in->value, sizeof(d));
        snprintf(buf, cap, "%g", d);
    } else if (in->kind == MVZ_USER_VALUE_TEXT) {
        snprintf(buf, cap, "%s", in->text ? in->text : "");
    } else {
        snprintf(buf, cap, "%lld", (long long)in->value);
    }
}

const char *mvz_user_kind_name(int kind)
{
    return kind == MVZ_USER_COUNTER     ? "counter"
           : kind == MVZ_USER_STOPWATCH ? "stopwatch"
           : kind == MVZ_USER_TAG_KIND  ? "tag"
                                        : "value";
}

int mvz_user_read(const char *path, struct mvz_user *u, char *err, size_t errlen)
{
    struct mvz_reader rd;
    struct mvz_record rec;
    memset(u, 0, sizeof(*u));
    if (mvz_reader_open(&rd, path, err, errlen) < 0)
        return -1;
    while (mvz_reader_next(&rd, &rec) == 1)
        if (rec.kind == MVZ_REC_USER) {
            struct mvz_cursor c = mvz_cursor_make(rec.data, rec.len);
            mvz_user_decode(u, &c);
        }
    mvz_reader_close(&rd);
    return 0;
}
