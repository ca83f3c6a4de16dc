/*
 * fmt.h - number formatting for human-readable output: byte sizes in
 * binary units, counts with thousands separators, durations.
 */
#ifndef MVZ_UTIL_FMT_H
#define MVZ_UTIL_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "1.50 MiB" style, or "123 B" below 1 KiB. */
const char *mvz_fmt_bytes(uint64_t v, char *buf, size_t cap);
/* "1,234,567" */
const char *mvz_fmt_count(uint64_t v, char *buf, size_t cap);
/* "1.234 s" / "12.3 ms" */
const char *mvz_fmt_duration(uint64_t ns, char *buf, size_t cap);
/* Writes s as one word a POSIX shell reads back as s: as it is when it
 * holds only characters no shell treats specially, else in single quotes
 * (a quote inside as '\''). */
void mvz_put_shell_word(FILE *out, const char *s);
/* The file name of a path (after its last '/'); NULL for NULL. */
const char *mvz_base_name(const char *path);
/* "0", or bytes with an optional k, m or g (KiB, MiB, GiB; "64KiB" too),
 * at most 1 TiB, into *out: 0, or -1 when malformed. */
int mvz_parse_size(const char *v, uint64_t *out);

#endif
