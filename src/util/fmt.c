/*
 * fmt.c - see fmt.h.
 */
#include "util/fmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *mvz_fmt_bytes(uint64_t v, char *buf, size_t cap)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (v < 1024) {
        snprintf(buf, cap, "%" PRIu64 " B", v);
        return buf;
    }
    double d = (double)v / 1024;
    int u = 0;
    while (d >= 1024 && u < 3) {
        d /= 1024;
        u++;
    }
    snprintf(buf, cap, "%.2f %s", d, units[u]);
    return buf;
}

const char *mvz_fmt_count(uint64_t v, char *buf, size_t cap)
{
    char digits[32];
    int n = snprintf(digits, sizeof(digits), "%" PRIu64, v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = 0;
    return buf;
}

const char *mvz_fmt_duration(uint64_t ns, char *buf, size_t cap)
{
    if (ns >= 1000000000u)
        snprintf(buf, cap, "%.3f s", (double)ns / 1e9);
    else if (ns >= 1000000u)
        snprintf(buf, cap, "%.1f ms", (double)ns / 1e6);
    else
        snprintf(buf, cap, "%.1f us", (double)ns / 1e3);
    return buf;
}

const char *mvz_base_name(const char *path)
{
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : path;
}

void mvz_put_shell_word(FILE *out, const char *s)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                "_@%+=:,./-";
    if (*s && strspn(s, plain) == strlen(s)) {
        fputs(s, out);
        return;
    }
    fputc('\'', out);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", out);
        else
            fputc(*s, out);
    }
    fputc('\'', out);
}

int mvz_parse_size(const char *v, uint64_t *out)
{
    char *end;
    if (!v || *v < '0' || *v > '9')
        return -1;
    unsigned long long n = strtoull(v, &end, 10);
    int shift = !*end                ? 0
                : (*end | 32) == 'k' ? 10
                : (*end | 32) == 'm' ? 20
                : (*end | 32) == 'g' ? 30
                                     : -1;
    if (shift < 0 || (*end && end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "ib")) ||
        n > (1ull << 40) >> shift)
        return -1;
    *out = (uint64_t)n << shift;
    return 0;
}
