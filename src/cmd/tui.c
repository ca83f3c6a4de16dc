/*
 * tui.c - `memviz tui FILE`: the terminal UI on a trace: first the view
 * of `memviz live` on a trace already written, then the trace's pages
 * (src/tui/trace_pages.c: summary, call tree, snapshot). The trace is served in-process, on
 * loopback, by the live server (src/server/), which replays it to its end; the view (src/tui/) then
 * browses the whole run as it browses a live one that has ended: pause, a cursor back and on, the
 * heap over time, the top sites, and every process of the trace's tree that the trace names is not
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
#include "tui/trace_pages.h"
#include "tui/view.h"
#include "ui/model.h"

/* The run in about this many samples: the view's chart and cursor. */
#define SAMPLES 600
#define MIN_PERIOD_NS (1000 * 1000ull)

static const char usage_text[] =
    "usage: memviz tui FILE\n"
    "The terminal UI on a trace. Page 1 is the view memviz live shows of a running\n"
    "program: heap and RSS over the run, the top sites, threads, instruments and the\n"
    "log at any moment (left and right move a sample, end goes to the end, space\n"
    "plays the run from the cursor and pauses). Page 2: the summary and the top\n"
    "sites; 3: the call tree, opened frame by frame; 4: the heap snapshot's leaks and\n"
    "what retains the memory. ? shows the keys, q quits.\n";

static int view(const char *path, struct mvz_ui_model *m)
{
    uint64_t duration = m->whole.p.sum.duration_ns;
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
    struct trace_pages *tp = trace_pages_new(m);
    int rc = tp ? live_client_start(&c) : -1;
    if (rc == 0) {
        rc = live_view_run(&c, trace_pages_get(tp));
        live_client_stop(&c);
        if (rc < 0)
            mvz_error("tui: cannot use this terminal");
    } else {
        mvz_error("out of memory");
    }
    trace_pages_free(tp);
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
    static struct mvz_ui_model m;
    char err[512];
    if (mvz_ui_model_load(&m, argv[optind], err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        mvz_ui_model_free(&m);
        return 1;
    }
    rc = view(argv[optind], &m);
    mvz_ui_model_free(&m);
    return rc;
}
