/*
 * run_live.c - `memviz run --live [HOST:]PORT`: the live server next to the
 * program (src/server/). The socket is bound before the program starts,
 * so that a bad address or a port in use is an error up front; the
 * server's threads start after the fork, so that the child, which runs
 * code between fork and exec, never inherits a lock one of them held.
 */
#include "cmd/run_live.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "trace/runpage.h"

int run_live_parse(struct run_live *rl, const char *spec)
{
    const char *colon = strrchr(spec, ':');
    const char *port = colon ? colon + 1 : spec;
    size_t hlen = colon ? (size_t)(colon - spec) : 0;
    char *end;
    long p = strtol(port, &end, 10);
    if (!*port || *end || p < 0 || p > 65535 || hlen >= sizeof(rl->host))
        return -1;
    snprintf(rl->host, sizeof(rl->host), "%.*s", (int)hlen, spec);
    if (!hlen || !strcmp(rl->host, "localhost"))
        snprintf(rl->host, sizeof(rl->host), "127.0.0.1");
    struct in_addr a;
    if (inet_pton(AF_INET, rl->host, &a) != 1)
        return -1;
    rl->port = (int)p;
    rl->loopback = (ntohl(a.s_addr) >> 24) == 127;
    rl->fd = -1;
    return 0;
}

int run_live_make_token(struct run_live *rl)
{
    int fd = open(rl->token_file, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, rl->token, sizeof(rl->token) - 1);
        close(fd);
        while (n > 0 && (rl->token[n - 1] == '\n' || rl->token[n - 1] == '\r'))
            n--;
        if (n < 8) {
            mvz_error("--live-token: %s holds no token (8 characters at least)", rl->token_file);
            return -1;
        }
        rl->token[n] = 0;
        return 0;
    }
    unsigned char raw[16];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        mvz_error("cannot make a token: %s", strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(rl->token + 2 * i, 3, "%02x", raw[i]);
    fd = open(rl->token_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, rl->token, strlen(rl->token)) < 0 || write(fd, "\n", 1) < 0) {
        mvz_error("cannot write the token to %s: %s", rl->token_file, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

int run_live_bind(struct run_live *rl)
{
    if (run_live_make_token(rl) < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)rl->port)};
    inet_pton(AF_INET, rl->host, &sa.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0) {
        mvz_error("--live: cannot listen on %s:%d: %s", rl->host, rl->port, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    rl->fd = fd;
    return 0;
}

/* POST /api/v1/snapshot: through memviz run's page, as `memviz snapshot`. */
static int take_snapshot(void *ctx, int pid, const char *name, char *msg, size_t cap)
{
    struct run_live *rl = ctx;
    pid = pid ? pid : rl->pid;
    struct mvz_run_image *im = rl->page ? mvz_run_image_of(rl->page, pid) : NULL;
    if (!im) {
        snprintf(msg, cap, "process %d is not tracing (any more)", pid);
        return -1;
    }
    if (strlen(name) >= sizeof(im->snap_name)) {
        snprintf(msg, cap, "a name of at most %zu bytes, please", sizeof(im->snap_name) - 1);
        return -1;
    }
    return mvz_snapshot_request(im, pid, name, msg, cap);
}

int run_live_start(struct run_live *rl, const char *trace, struct mvz_run_page *page, int pid)
{
    rl->page = page;
    rl->pid = pid;
    struct mvz_live_options lo = {trace, 100 * 1000 * 1000ull, rl->window_ns, 20};
    rl->procs = mvz_live_procs_start(&lo, page, pid);
    if (!rl->procs) {
        mvz_error("--live: out of memory; the program runs on without it");
        return -1;
    }
    struct mvz_http_options ho = {rl->host,      rl->port,  rl->fd,        rl->token,
                                  !rl->loopback, rl->procs, take_snapshot, rl};
    char err[256];
    int port = 0;
    rl->http = mvz_http_start(&ho, &port, err, sizeof(err));
    if (!rl->http) {
        mvz_error("--live: %s; the program runs on without it", err);
        return -1;
    }
    fprintf(stderr, "memviz: live at http://%s:%d/ (token in %s%s)\n", rl->host, port,
            rl->token_file,
            rl->loopback ? ", needed to take snapshots" : ", needed for everything");
    return 0;
}

void run_live_finish(struct run_live *rl)
{
    if (rl->procs)
        mvz_live_procs_done(rl->procs);
    if (rl->procs && rl->http) /* clients see the end of the run, then go */
        for (int i = 0; i < 200 && !mvz_live_procs_ended(rl->procs); i++)
            usleep(10000);
    mvz_http_stop(rl->http);
    mvz_live_procs_free(rl->procs);
    if (rl->fd >= 0)
        close(rl->fd);
    rl->http = NULL;
    rl->procs = NULL;
    rl->fd = -1;
}
