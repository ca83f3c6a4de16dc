/*
 * index.c - `memviz index FILE`: writes the trace's index (FILE + "i",
 * src/analysis/index.h), what one replay of the whole run learnt, so that
 * `memviz ui` opens the trace without replaying it. `memviz ui` writes
 * one itself when it first opens a trace of 64 MiB or more.
 */
#include <getopt.h>
#include <stdio.h>

#include "analysis/index.h"
#include "cmd/cmd.h"
#include "ui/model.h"

static const char usage_text[] =
    "usage: memviz index FILE\n"
    "Writes FILE's index (FILEi): the whole run's profile and heap over time, which\n"
    "memviz ui then opens without replaying the trace. It is a cache: a trace that\n"
    "changed, or another memviz, makes it stale, and memviz ui replays instead.\n";

int cmd_index(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {"debug-dir", required_argument, NULL, MVZ_OPT_DEBUG_DIR},
        {NULL, 0, NULL, 0},
    };
    int ch, rc;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (ch == 'h') {
            fputs(usage_text, stdout);
            return 0;
        }
        if ((rc = mvz_cmd_shared_option("index", ch, argv)) != 0)
            return rc;
    }
    if (optind != argc - 1)
        return mvz_usage_error("index", "expects one trace FILE");
    char err[512], path[4096];
    if (mvz_ui_index_write(argv[optind], err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return 1;
    }
    mvz_index_path(argv[optind], path, sizeof(path));
    printf("memviz: wrote %s\n", path);
    return 0;
}
