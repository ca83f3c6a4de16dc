/*
 * json.h - a small streaming JSON writer for machine-readable output. It
 * tracks nesting to place commas, and escapes strings per RFC 8259 (bytes
 * that are not valid UTF-8 are written as U+FFFD, so output always parses).
 */
#ifndef MVZ_UTIL_JSON_H
#define MVZ_UTIL_JSON_H

#include <stdint.h>
#include <stdio.h>

/* Nesting this deep at most: a call tree of the deepest stack a trace
 * keeps (1,024 frames) nests two levels a frame. */
#define MVZ_JSON_MAX_DEPTH 4096

struct mvz_json {
    FILE *out;
    int depth;
    uint64_t need_comma[MVZ_JSON_MAX_DEPTH / 64]; /* a bit per level */
    int after_key;
};

void mvz_json_init(struct mvz_json *j, FILE *out);
void mvz_json_begin_object(struct mvz_json *j);
void mvz_json_end_object(struct mvz_json *j);
void mvz_json_begin_array(struct mvz_json *j);
void mvz_json_end_array(struct mvz_json *j);
void mvz_json_key(struct mvz_json *j, const char *key);
void mvz_json_string(struct mvz_json *j, const char *s); /* NULL writes null */
void mvz_json_uint(struct mvz_json *j, uint64_t v);
void mvz_json_int(struct mvz_json *j, int64_t v);
void mvz_json_bool(struct mvz_json *j, int v);
void mvz_json_null(struct mvz_json *j);
/* A key and its value, in an object. */
void mvz_json_put_uint(struct mvz_json *j, const char *key, uint64_t v);
void mvz_json_put_string(struct mvz_json *j, const char *key, const char *v); /* NULL: null */
/* A value that is JSON already (a document rendered once and kept). */
void mvz_json_raw(struct mvz_json *j, const char *text);

#endif
