/*
 * tui.c - `memviz tui FILE`: the terminal view of `memviz live` on a
 * trace already written. The trace is served in-process, on loopback, by
 * the live server (src/server/), which replays it to its end; the view
 * (src/tui/) then browses the whole run as it browses a live one that has
 * ended: pause, a cursor back and on, the heap over time, the top sites,
 * and every process of the trace's tree that the trace names is not
 * followed (one trace, one process).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/profile.h"
#include "cmd/cmd.h"
#include "server/http.h"
#include "server/procs.h"
#include "tui/client.h"
#include "tui/view.h"

/* The run in about this many samples: the view's chart and cursor. */
#define SAMPLES 600
#define MIN_PERIOD_NS (1000 * 1000ull)

static const char usage_text[] =
    "usage: memviz tui FILE\n"
    "The terminal view (as memviz live shows a running program) of a trace: heap and\n"
    "RSS over the run, the top sites, threads, instruments and the log at any moment.\n"
    "Keys: left and right move a sample (h, l), end goes to the end of the run,\n"
    "space plays the run from the cursor and pauses, q quits.\n";

/* The run's length, for the sampling period: one replay. */
static int run_length(const char *path, uint64_t *ns)
{
    static struct mvz_profile p;
    char err[512];
    if (mvz_profile_load(&p, path, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        mvz_profile_free(&p);
        return -1;
    }
    *ns = p.sum.duration_ns;
    mvz_profile_free(&p);
    return 0;
}

static int view(const char *path, uint64_t duration)
{
    uint64_t period = duration / SAMPLES;
    if (period < MIN_PERIOD_NS)
        period = MIN_PERIOD_NS;
    struct mvz_live_options lo = {path, period, duration + 4 * period, 20};
    struct mvz_live_procs *procs = mvz_live_procs_start(&lo, NULL, 0);
    if (!procs) {
        mvz_error("out of memory");
        return 1;
    }
    mvz_live_procs_done(procs); /* the run is over: read to the end */
    struct mvz_http_options ho = {"127.0.0.1", 0, -1, "", 0, procs, NULL, NULL};
    char err[256];
    int port = 0;
    struct mvz_http *h = mvz_http_start(&ho, &port, err, sizeof(err));
    if (!h) {
        mvz_error("tui: %s", err);
        mvz_live_procs_free(procs);
        return 1;
    }
    static struct live_client c;
    memset(&c, 0, sizeof(c));
    snprintf(c.host, sizeof(c.host), "127.0.0.1");
    c.port = port;
    int rc = live_client_start(&c);
    if (rc == 0) {
        rc = live_view_run(&c);
        live_client_stop(&c);
        if (rc < 0)
            mvz_error("tui: cannot use this terminal");
    } else {
        mvz_error("out of memory");
    }
    mvz_http_stop(h);
    mvz_live_procs_free(procs);
    return rc < 0 ? 1 : 0;
}

int cmd_tui(int argc, char **argv)
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
        switch (ch) {
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            if ((rc = mvz_cmd_shared_option("tui", ch, argv)) != 0)
                return rc;
        }
    }
    if (optind != argc - 1)
        return mvz_usage_error("tui", "expects one trace FILE");
    if (!isatty(0) || !isatty(1)) {
        mvz_error("tui: a terminal is needed (for scripts: memviz report or timeline)");
        return 1;
    }
    uint64_t duration;
    if (run_length(argv[optind], &duration) < 0)
        return 1;
    return view(argv[optind], duration);
}
