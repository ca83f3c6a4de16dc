/*
 * html.c - `memviz html [-o OUT] FILE`: the web UI on a trace as one
 * self-contained HTML file to share (src/ui/html.c): it opens in a
 * browser with no server and no network, and stays under 10 MB whatever
 * the trace.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cmd.h"
#include "ui/html.h"
#include "util/fmt.h"

#define DEFAULT_MAX_SIZE (9u << 20)
#define LEAST_MAX_SIZE (512u << 10) /* the UI itself, and room for the documents */

static const char usage_text[] =
    "usage: memviz html [-o OUT] FILE\n"
    "Writes the web UI on trace FILE as one HTML file that opens with no server and\n"
    "no network: summary, flame graphs by each cost, heap over time.\n"
    "  -o, --output OUT   write OUT (default: FILE with .html for .mvz)\n"
    "  --max-size SIZE    keep the file under about SIZE (default 9m, at least 512k):\n"
    "                     the flame graphs drop their smallest frames to fit\n";

static char *default_output(const char *trace)
{
    size_t n = strlen(trace);
    if (n > 4 && !strcmp(trace + n - 4, ".mvz"))
        n -= 4;
    char *out = malloc(n + 6);
    if (out)
        snprintf(out, n + 6, "%.*s.html", (int)n, trace);
    return out;
}

/* direct: out is not a regular file (a device, a link: /dev/stdout), and
 * is written as it is; a file is written beside and renamed, so that a
 * reader never sees half of it (renaming over a device would replace it). */
static int write_page(const char *trace, const char *out, int direct, size_t max_size)
{
    static struct mvz_ui_model m;
    char err[512];
    if (mvz_ui_model_load(&m, trace, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        mvz_ui_model_free(&m);
        return 1;
    }
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%.4090s%s", out, direct ? "" : ".tmp");
    FILE *f = fopen(tmp, "w");
    if (!f) {
        mvz_error("cannot write %s", out);
        mvz_ui_model_free(&m);
        return 1;
    }
    int rc = mvz_ui_html_write(&m, f, max_size, err, sizeof(err));
    mvz_ui_model_free(&m);
    if (fclose(f) != 0 && rc == 0) {
        snprintf(err, sizeof(err), "cannot write %s", out);
        rc = -1;
    }
    if (rc == 0 && !direct && rename(tmp, out) != 0) {
        snprintf(err, sizeof(err), "cannot write %s", out);
        rc = -1;
    }
    if (rc < 0) {
        if (!direct)
            remove(tmp);
        mvz_error("%s", err);
        return 1;
    }
    return 0;
}

int cmd_html(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"max-size", required_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},
        {"debug-dir", required_argument, NULL, MVZ_OPT_DEBUG_DIR},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL;
    uint64_t max_size = DEFAULT_MAX_SIZE;
    int ch, rc;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'o':
            out = optarg;
            break;
        case 'M':
            if (mvz_parse_size(optarg, &max_size) < 0 || max_size < LEAST_MAX_SIZE)
                return mvz_usage_error(
                    "html", "--max-size expects a size of 512k or more, got '%s'", optarg);
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            if ((rc = mvz_cmd_shared_option("html", ch, argv)) != 0)
                return rc;
        }
    }
    if (optind != argc - 1)
        return mvz_usage_error("html", "expects one trace FILE");
    char *made = out ? NULL : default_output(argv[optind]);
    if (!out && !made) {
        mvz_error("out of memory");
        return 1;
    }
    const char *to = out ? out : made;
    struct stat st;
    int direct = lstat(to, &st) == 0 && !S_ISREG(st.st_mode);
    rc = write_page(argv[optind], to, direct, (size_t)max_size);
    if (rc == 0 && !direct) /* not into /dev/stdout, say */
        printf("memviz: wrote %s\n", to);
    free(made);
    return rc;
}
