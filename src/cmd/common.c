/*
 * common.c - error reporting and option parsing shared by the subcommands.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "analysis/symbolize.h"
#include "cmd/cmd.h"

void mvz_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("memviz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int mvz_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "memviz %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'memviz help' for usage.\n");
    va_end(ap);
    return MVZ_EXIT_USAGE;
}

long mvz_parse_count(const char *s, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > max)
        return -1;
    return v;
}

int mvz_parse_seconds(const char *s, uint64_t *ns)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e9)
        return -1;
    *ns = (uint64_t)llround(v * 1e9);
    return 0;
}

int mvz_cmd_debug_dir(const char *cmd, const char *dir)
{
    struct stat st;
    char abs[PATH_MAX];
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || !realpath(dir, abs))
        return mvz_usage_error(cmd, "--debug-dir: '%s' is not a directory", dir);
    /* elfutils looks in absolute directories only */
    if (mvz_symbolize_add_debug_dir(abs) < 0) {
        mvz_error("out of memory");
        return 1;
    }
    return 0;
}

int mvz_cmd_shared_option(const char *cmd, int opt, char **argv)
{
    if (opt == MVZ_OPT_DEBUG_DIR)
        return mvz_cmd_debug_dir(cmd, optarg);
    return mvz_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}

int mvz_parse_percent(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0 && v <= 100))
        return -1;
    *out = v;
    return 0;
}

int mvz_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return strcmp(a, b) == 0 || (stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
                                 sa.st_ino == sb.st_ino);
}
