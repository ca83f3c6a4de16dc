/*
 * json.c - see json.h.
 */
#include "util/json.h"

#include <inttypes.h>
#include <string.h>

void mvz_json_init(struct mvz_json *j, FILE *out)
{
    memset(j, 0, sizeof(*j));
    j->out = out;
}

static int level(const struct mvz_json *j)
{
    return j->depth < MVZ_JSON_MAX_DEPTH ? j->depth : MVZ_JSON_MAX_DEPTH - 1;
}

static int comma_at(const struct mvz_json *j)
{
    return (int)(j->need_comma[level(j) / 64] >> (level(j) % 64)) & 1;
}

static void set_comma(struct mvz_json *j, int on)
{
    uint64_t bit = 1ull << (level(j) % 64);
    uint64_t *w = &j->need_comma[level(j) / 64];
    *w = on ? *w | bit : *w & ~bit;
}

/* Writes the comma that separates this value from the previous one. */
static void value_start(struct mvz_json *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (comma_at(j))
        fputc(',', j->out);
    set_comma(j, 1);
}

/* Levels past MVZ_JSON_MAX_DEPTH share the last one's comma state (and
 * close back to the right level: depth counts them all). */
static void open_scope(struct mvz_json *j, char c)
{
    value_start(j);
    fputc(c, j->out);
    j->depth++;
    if (j->depth < MVZ_JSON_MAX_DEPTH)
        set_comma(j, 0);
}

static void close_scope(struct mvz_json *j, char c)
{
    if (j->depth > 0)
        j->depth--;
    fputc(c, j->out);
    if (j->depth == 0)
        fputc('\n', j->out);
}

void mvz_json_begin_object(struct mvz_json *j)
{
    open_scope(j, '{');
}
void mvz_json_end_object(struct mvz_json *j)
{
    close_scope(j, '}');
}
void mvz_json_begin_array(struct mvz_json *j)
{
    open_scope(j, '[');
}
void mvz_json_end_array(struct mvz_json *j)
{
    close_scope(j, ']');
}

/* Length of the valid UTF-8 sequence at s, or 0 if invalid. */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] < 0x80         ? 1
            : (s[0] >> 5) == 6  ? 2
            : (s[0] >> 4) == 14 ? 3
            : (s[0] >> 3) == 30 ? 4
                                : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

static void write_escaped(FILE *out, const char *str)
{
    fputc('"', out);
    for (const unsigned char *s = (const unsigned char *)str; *s;) {
        unsigned char c = *s;
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc(c, out);
            s++;
        } else if (c < 0x20) {
            fprintf(out, "\\u%04x", c);
            s++;
        } else {
            int n = utf8_len(s);
            if (n == 0) {
                fputs("\\ufffd", out);
                s++;
            } else {
                fwrite(s, 1, (size_t)n, out);
                s += n;
            }
        }
    }
    fputc('"', out);
}

void mvz_json_key(struct mvz_json *j, const char *key)
{
    value_start(j);
    write_escaped(j->out, key);
    fputc(':', j->out);
    j->after_key = 1;
}

void mvz_json_string(struct mvz_json *j, const char *s)
{
    if (!s) {
        mvz_json_null(j);
        return;
    }
    value_start(j);
    write_escaped(j->out, s);
}

void mvz_json_uint(struct mvz_json *j, uint64_t v)
{
    value_start(j);
    fprintf(j->out, "%" PRIu64, v);
}

void mvz_json_int(struct mvz_json *j, int64_t v)
{
    value_start(j);
    fprintf(j->out, "%" PRId64, v);
}

void mvz_json_bool(struct mvz_json *j, int v)
{
    value_start(j);
    fputs(v ? "true" : "false", j->out);
}

void mvz_json_null(struct mvz_json *j)
{
    value_start(j);
    fputs("null", j->out);
}

void mvz_json_raw(struct mvz_json *j, const char *text)
{
    value_start(j);
    fputs(text, j->out);
}

void mvz_json_put_uint(struct mvz_json *j, const char *key, uint64_t v)
{
    mvz_json_key(j, key);
    mvz_json_uint(j, v);
}

void mvz_json_put_string(struct mvz_json *j, const char *key, const char *v)
{
    mvz_json_key(j, key);
    mvz_json_string(j, v);
}
