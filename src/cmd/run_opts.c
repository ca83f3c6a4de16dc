/*
 * run_opts.c - `memviz run`'s command line: its options, their values
 * (signals, durations, sizes, addresses) and its usage text.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/run.h"

/* A signal by name (USR1, SIGUSR1) or number; 0 when it is not one a
 * program can catch. */
static int parse_signal(const char *s)
{
    char *end;
    long n = strtol(s, &end, 10);
    if (*s && !*end)
        return n > 0 && n < NSIG && n != SIGKILL && n != SIGSTOP ? (int)n : 0;
    if (!strncmp(s, "SIG", 3))
        s += 3;
    for (int sig = 1; sig < NSIG; sig++) {
        const char *name = sigabbrev_np(sig);
        if (name && !strcmp(name, s))
            return sig == SIGKILL || sig == SIGSTOP ? 0 : sig;
    }
    return 0;
}

/* --snapshot-every: a duration (10s, 500ms, 2m) or an amount allocated
 * (64MiB, 1GB, 4096), as MEMVIZ_SNAPSHOT_EVERY's "ns:N" or "bytes:N". */
static int parse_every(const char *s, char *out, size_t cap)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v > 0))
        return -1;
    static const struct {
        const char *unit;
        double scale;
        int bytes;
    } units[] = {{"ms", 1e6, 0},
                 {"s", 1e9, 0},
                 {"m", 60e9, 0},
                 {"h", 3600e9, 0},
                 {"", 1, 1},
                 {"B", 1, 1},
                 {"KiB", 1024.0, 1},
                 {"MiB", 1048576.0, 1},
                 {"GiB", 1073741824.0, 1},
                 {"KB", 1e3, 1},
                 {"MB", 1e6, 1},
                 {"GB", 1e9, 1},
                 {"k", 1024.0, 1},
                 {"K", 1024.0, 1},
                 {"M", 1048576.0, 1},
                 {"G", 1073741824.0, 1}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (!strcmp(end, units[i].unit)) {
            double x = v * units[i].scale;
            if (x < 1 || x > 1.8e19)
                return -1;
            snprintf(out, cap, "%s:%.0f", units[i].bytes ? "bytes" : "ns", x);
            return 0;
        }
    return -1;
}

/* --live-window: a duration, at least a second. */
static int parse_window(const char *s, uint64_t *ns)
{
    char v[40];
    if (parse_every(s, v, sizeof(v)) < 0 || strncmp(v, "ns:", 3) != 0)
        return -1;
    *ns = strtoull(v + 3, NULL, 10);
    return *ns >= 1000000000ull ? 0 : -1;
}

enum {
    O_NO_LEAK_SCAN = 256,
    O_SNAPSHOT_ON,
    O_SNAPSHOT_EVERY,
    O_SNAPSHOT_CONTENTS,
    O_LIVE,
    O_LIVE_WINDOW,
    O_LIVE_TOKEN,
    O_SAMPLE,
    O_ADDRESSES,
    O_NO_INDEX,
    O_CALLGRAPH,
    O_CALLGRAPH_FILTER
};

static const char run_usage[] =
    "usage: memviz run [-o FILE] [--depth N] [--no-follow] [--no-leak-scan]\n"
    "                  [--snapshot-on SIGNAL] [--snapshot-every DURATION|SIZE]\n"
    "                  [--snapshot-contents] [--live [HOST:]PORT [--live-window D]\n"
    "                  [--live-token FILE]] [--sample SIZE] [--addresses]\n"
    "                  [--callgraph [--callgraph-filter GLOB]] [--no-index]\n"
    "                  [--] PROG [ARGS...]\n"
    "  --no-leak-scan          no heap snapshot at exit (it classifies the leaks)\n"
    "  --snapshot-on SIGNAL    a heap snapshot each time PROG receives SIGNAL (USR2, ...)\n"
    "  --snapshot-every D|S    a heap snapshot every duration (10s, 500ms) or every\n"
    "                          amount allocated (64MiB, 1GB)\n"
    "  --snapshot-contents     snapshots store the blocks' bytes too (memviz inspect)\n"
    "  --live [HOST:]PORT      serve the live state while PROG runs (docs/LIVE.md):\n"
    "                          /metrics, /debug/pprof/heap, /api/v1/state (default\n"
    "                          host 127.0.0.1; another needs the token for every request)\n"
    "  --live-window D         how far back the live view goes (default 10m)\n"
    "  --live-token FILE       the token: read from FILE, or made and written there\n"
    "                          (default: next to the trace, TRACE.token)\n"
    "  --sample SIZE           the production mode: record one allocation every SIZE\n"
    "                          bytes on average (512KiB is usual); every number is then\n"
    "                          an estimate; no heap snapshots\n"
    "  --addresses             record where every block is: the heap map at any\n"
    "                          moment and the heat map (memviz ui); a larger trace\n"
    "  --callgraph             record every call and return of PROG's instrumented\n"
    "                          functions (built with -finstrument-functions, -pg or\n"
    "                          -fpatchable-function-entry=5):\n"
    "                          memviz callgraph; allocation stacks come from the calls\n"
    "  --callgraph-filter GLOB for a -fpatchable-function-entry build: only the\n"
    "                          functions matching GLOB (shell patterns, comma\n"
    "                          separated) are patched in at load time\n"
    "  --no-index              do not index a trace of 64 MiB or more at the end (the\n"
    "                          index lets memviz ui open it at once: memviz index)\n";

int run_parse_options(int argc, char **argv, struct run_opts *o)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"depth", required_argument, NULL, 'd'},
        {"no-follow", no_argument, NULL, 'F'},
        {"no-leak-scan", no_argument, NULL, O_NO_LEAK_SCAN},
        {"snapshot-on", required_argument, NULL, O_SNAPSHOT_ON},
        {"snapshot-every", required_argument, NULL, O_SNAPSHOT_EVERY},
        {"snapshot-contents", no_argument, NULL, O_SNAPSHOT_CONTENTS},
        {"live", required_argument, NULL, O_LIVE},
        {"live-window", required_argument, NULL, O_LIVE_WINDOW},
        {"live-token", required_argument, NULL, O_LIVE_TOKEN},
        {"sample", required_argument, NULL, O_SAMPLE},
        {"addresses", no_argument, NULL, O_ADDRESSES},
        {"no-index", no_argument, NULL, O_NO_INDEX},
        {"callgraph", no_argument, NULL, O_CALLGRAPH},
        {"callgraph-filter", required_argument, NULL, O_CALLGRAPH_FILTER},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->page_fd = -1;
    o->follow = 1;
    o->leak_scan = 1;
    o->index = 1;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+o:d:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            o->output = optarg;
            break;
        case 'd':
            o->depth = mvz_parse_count(optarg, 1024);
            if (o->depth < 1)
                return mvz_usage_error("run", "--depth needs a number from 1 to 1024, got '%s'",
                                       optarg);
            break;
        case 'F':
            o->follow = 0;
            break;
        case O_NO_LEAK_SCAN:
            o->leak_scan = 0;
            break;
        case O_SNAPSHOT_ON:
            if (!(o->snapshot_signal = parse_signal(optarg)))
                return mvz_usage_error("run",
                                       "--snapshot-on needs a signal a program can catch "
                                       "(USR2, SIGUSR2, 12), got '%s'",
                                       optarg);
            break;
        case O_SNAPSHOT_EVERY:
            if (parse_every(optarg, o->snapshot_every, sizeof(o->snapshot_every)) < 0)
                return mvz_usage_error("run",
                                       "--snapshot-every needs a duration (10s, 500ms) or "
                                       "a size (64MiB), got '%s'",
                                       optarg);
            break;
        case O_SNAPSHOT_CONTENTS:
            o->snapshot_contents = 1;
            break;
        case O_ADDRESSES:
            o->addresses = 1;
            break;
        case O_NO_INDEX:
            o->index = 0;
            break;
        case O_CALLGRAPH:
            o->callgraph = 1;
            break;
        case O_CALLGRAPH_FILTER:
            if (!*optarg)
                return mvz_usage_error("run", "--callgraph-filter needs a pattern");
            o->callgraph = 1;
            o->callgraph_filter = optarg;
            break;
        case O_LIVE:
            o->live = 1;
            if (run_live_parse(&o->rl, optarg) < 0)
                return mvz_usage_error(
                    "run", "--live needs [HOST:]PORT (an IPv4 address), got '%s'", optarg);
            break;
        case O_LIVE_WINDOW:
            if (parse_window(optarg, &o->rl.window_ns) < 0)
                return mvz_usage_error("run",
                                       "--live-window needs a duration of 1s or more "
                                       "(10m, 90s), got '%s'",
                                       optarg);
            break;
        case O_LIVE_TOKEN:
            o->live_token = optarg;
            break;
        case O_SAMPLE: {
            char v[40];
            if (parse_every(optarg, v, sizeof(v)) < 0 || strncmp(v, "bytes:", 6) != 0 ||
                (o->sample = strtoull(v + 6, NULL, 10)) < 1)
                return mvz_usage_error("run", "--sample needs a size (512KiB, 64k, 1MiB), got '%s'",
                                       optarg);
            break;
        }
        case 'h':
            fputs(run_usage, stdout);
            exit(0);
        default:
            return mvz_usage_error("run", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return mvz_usage_error("run", "no program given");
    if (!o->live && (o->rl.window_ns || o->live_token))
        return mvz_usage_error("run", "--live-window and --live-token go with --live");
    o->argv = argv + optind;
    return 0;
}

/* Creates (or truncates) the trace file before the program starts, so that
 * an unwritable path is known at once and no stale trace of an earlier run
 * can be mistaken for this one's. Devices (/dev/null) are opened, never
 * removed. Returns 0 when the program must run untraced. */
