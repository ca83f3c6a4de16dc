/*
 * ui.c - `memviz ui [--host ADDR] [--port N] [--token-file F] FILE`: the
 * web UI on a trace (src/server/ui_http.c, web/). The trace is read once,
 * up front; then the server answers until the command is interrupted.
 * With --live HOST:PORT instead of FILE, the UI follows a running
 * program: the live server's API passes through this one.
 * Loopback by default; on any other address every request needs the
 * token, and the printed address carries it.
 */
#include <getopt.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/run_live.h"
#include "server/proxy.h"
#include "server/ui_http.h"

static const char usage_text[] =
    "usage: memviz ui [--host ADDR] [--port N] [--token-file FILE] FILE [NEW]\n"
    "       memviz ui [...] --live HOST:PORT [--live-token FILE]\n"
    "Serves the web UI on a trace (with NEW: on NEW, compared with FILE), or on a\n"
    "program memviz run --live serves, and prints its address; Ctrl-C stops it.\n"
    "  --host ADDR        listen on this IPv4 address (default 127.0.0.1); any\n"
    "                     other than loopback needs the token for every request\n"
    "  --port N           listen on port N (default 0: any free port)\n"
    "  --token-file FILE  read the token from FILE, or make one and write it there\n"
    "                     (default FILE.token, when not on loopback)\n"
    "  --live HOST:PORT   follow the program memviz run --live serves there\n"
    "  --live-token FILE  that server's token (memviz run --live says where it is):\n"
    "                     needed for snapshots, and off loopback for everything\n";

#define LARGE_TRACE (64ll << 20) /* a trace this large: say it is being read */

struct ui_opts {
    struct run_live rl;
    const char *token_file;
    const char *live, *live_token;
    int first; /* argv index of the first trace */
    struct mvz_upstream up;
};

static int parse(int argc, char **argv, struct ui_opts *o)
{
    static const struct option opts[] = {
        {"host", required_argument, NULL, 'H'},
        {"port", required_argument, NULL, 'p'},
        {"token-file", required_argument, NULL, 't'},
        {"live", required_argument, NULL, 'L'},
        {"live-token", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {"debug-dir", required_argument, NULL, MVZ_OPT_DEBUG_DIR},
        {NULL, 0, NULL, 0},
    };
    const char *host = "127.0.0.1";
    long port = 0;
    int ch, rc;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'H':
            host = optarg;
            break;
        case 'p':
            if ((port = mvz_parse_count(optarg, 65535)) < 0)
                return mvz_usage_error("ui", "--port expects 0 to 65535, got '%s'", optarg);
            break;
        case 't':
            o->token_file = optarg;
            break;
        case 'L':
            o->live = optarg;
            break;
        case 'T':
            o->live_token = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            if ((rc = mvz_cmd_shared_option("ui", ch, argv)) != 0)
                return rc;
        }
    }
    if (o->live ? optind != argc : optind != argc - 1 && optind != argc - 2)
        return mvz_usage_error("ui", o->live ? "--live takes no trace FILE"
                                             : "expects a trace FILE, or two to compare (or "
                                               "--live HOST:PORT)");
    o->first = optind;
    if (o->live_token && !o->live)
        return mvz_usage_error("ui", "--live-token goes with --live");
    char spec[128];
    snprintf(spec, sizeof(spec), "%s:%ld", host, port);
    if (strlen(host) > 60 || run_live_parse(&o->rl, spec) < 0)
        return mvz_usage_error("ui", "--host expects an IPv4 address, got '%s'", host);
    return -1;
}

/* --live [HOST:]PORT (as memviz live takes it) and its token file. */
static int parse_live(struct ui_opts *o)
{
    struct run_live rl;
    const char *spec = !strncmp(o->live, "http://", 7) ? o->live + 7 : o->live;
    char clean[128];
    snprintf(clean, sizeof(clean), "%.*s", (int)strcspn(spec, "/"), spec);
    if (run_live_parse(&rl, clean) < 0 || rl.port == 0)
        return mvz_usage_error("ui", "--live expects [HOST:]PORT (an IPv4 address), got '%s'",
                               o->live);
    snprintf(o->up.host, sizeof(o->up.host), "%s", rl.host);
    o->up.port = rl.port;
    if (o->live_token) {
        FILE *f = fopen(o->live_token, "r");
        if (!f || !fgets(o->up.token, sizeof(o->up.token), f)) {
            if (f)
                fclose(f);
            mvz_error("cannot read a token from %s", o->live_token);
            return 1;
        }
        fclose(f);
        o->up.token[strcspn(o->up.token, "\r\n")] = 0;
    }
    return 0;
}

static int make_token(struct ui_opts *o, const char *trace)
{
    if (o->rl.loopback && !o->token_file)
        return 0;
    snprintf(o->rl.token_file, sizeof(o->rl.token_file), "%s%s",
             o->token_file ? o->token_file : trace, o->token_file ? "" : ".token");
    return run_live_make_token(&o->rl);
}

/* The trace's model, and with base the base run's (first): 0, or -1
 * after saying why. */
static int load_models(struct mvz_ui_model *m, struct mvz_ui_model *base, const char *first,
                       const char *path)
{
    char err[512];
    /* a large trace takes a while: say what is going on (stdout gets the
     * address, for scripts) */
    struct stat st;
    if (stat(path, &st) == 0 && st.st_size >= LARGE_TRACE)
        fprintf(stderr, "memviz: reading %s (%lld MiB)...\n", path, (long long)(st.st_size >> 20));
    if (base && mvz_ui_model_load(base, first, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        mvz_ui_model_free(base);
        return -1;
    }
    if (mvz_ui_model_load(m, path, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        mvz_ui_model_free(m);
        if (base)
            mvz_ui_model_free(base);
        return -1;
    }
    return 0;
}

/* Blocks the signals that stop the server, then waits for one. */
static void wait_for_stop(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    int sig;
    sigwait(&set, &sig);
}

int cmd_ui(int argc, char **argv)
{
    static struct ui_opts o;
    memset(&o, 0, sizeof(o));
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    const char *path = o.live ? "live" : argv[argc - 1];
    if (o.live && (rc = parse_live(&o)) != 0)
        return rc;
    if (make_token(&o, o.live ? "memviz-ui" : path) < 0)
        return 1;
    /* before any thread starts, so that every thread has them blocked */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    static struct mvz_ui_model m, base;
    char err[512];
    int diff = !o.live && o.first == argc - 2;
    if (!o.live && load_models(&m, diff ? &base : NULL, argv[o.first], path) < 0)
        return 1;
    struct mvz_ui_http_options ho = {o.rl.host,          o.rl.port,          o.rl.token,
                                     !o.rl.loopback,     o.live ? NULL : &m, o.live ? &o.up : NULL,
                                     diff ? &base : NULL};
    int port = 0;
    struct mvz_ui_http *h = mvz_ui_http_start(&ho, &port, err, sizeof(err));
    if (!h) {
        mvz_error("ui: %s", err);
        if (!o.live)
            mvz_ui_model_free(&m);
        if (diff)
            mvz_ui_model_free(&base);
        return 1;
    }
    if (o.live)
        path = o.live;
    if (o.rl.loopback)
        printf("memviz: the UI of %s is at http://%s:%d/ (Ctrl-C stops it)\n", path, o.rl.host,
               port);
    else
        printf("memviz: the UI of %s is at http://%s:%d/?token=%s (token in %s; Ctrl-C stops it)\n",
               path, o.rl.host, port, o.rl.token, o.rl.token_file);
    fflush(stdout);
    wait_for_stop();
    mvz_ui_http_stop(h);
    if (!o.live)
        mvz_ui_model_free(&m);
    if (diff)
        mvz_ui_model_free(&base);
    return 0;
}
