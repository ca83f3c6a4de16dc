/*
 * live.c - `memviz live [HOST:]PORT`: the terminal view of a program that
 * `memviz run --live` serves (src/tui/). Any number can watch one program,
 * joining and leaving at any time.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/run_live.h"
#include "tui/client.h"
#include "tui/view.h"

static const char usage_text[] =
    "usage: memviz live [--token-file FILE] [HOST:]PORT\n"
    "The terminal view of a program memviz run --live serves at HOST:PORT (default\n"
    "host 127.0.0.1): heap and RSS, the heap over time, the top sites. Keys: space\n"
    "pauses (the program runs on) and resumes from there; left and right move a\n"
    "sample; end goes back to live; tab shows the next process of the run; s takes a\n"
    "snapshot (needs the token); q quits.\n"
    "  --token-file FILE  the server's token (memviz run --live prints where it is)\n";

static int read_token(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f || !fgets(out, (int)cap, f)) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    out[strcspn(out, "\r\n")] = 0;
    return 0;
}

int cmd_live(int argc, char **argv)
{
    static const struct option opts[] = {
        {"token-file", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static struct live_client c;
    memset(&c, 0, sizeof(c));
    int ch;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 't':
            if (read_token(optarg, c.token, sizeof(c.token)) < 0) {
                mvz_error("cannot read a token from %s", optarg);
                return 1;
            }
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            return mvz_usage_error("live", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return mvz_usage_error("live", "expects [HOST:]PORT");
    const char *spec = argv[optind];
    if (!strncmp(spec, "http://", 7))
        spec += 7;
    char clean[128];
    snprintf(clean, sizeof(clean), "%.*s", (int)strcspn(spec, "/"), spec);
    struct run_live rl;
    if (run_live_parse(&rl, clean) < 0 || rl.port == 0)
        return mvz_usage_error("live", "expects [HOST:]PORT (an IPv4 address), got '%s'",
                               argv[optind]);
    snprintf(c.host, sizeof(c.host), "%s", rl.host);
    c.port = rl.port;
    if (!isatty(0) || !isatty(1)) {
        mvz_error("live: a terminal is needed (for scripts: curl http://%s:%d/api/v1/state)",
                  c.host, c.port);
        return 1;
    }
    if (live_client_start(&c) < 0) {
        mvz_error("out of memory");
        return 1;
    }
    int rc = live_view_run(&c, NULL);
    live_client_stop(&c);
    if (rc < 0)
        mvz_error("live: cannot use this terminal");
    return rc < 0 ? 1 : 0;
}
