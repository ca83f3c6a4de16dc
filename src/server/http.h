/*
 * http.h - the live server's HTTP endpoints (docs/LIVE.md): Prometheus
 * metrics, the heap as pprof, the state and its stream of updates as JSON,
 * and taking a snapshot.
 */
#ifndef MVZ_SERVER_HTTP_H
#define MVZ_SERVER_HTTP_H

#include <stddef.h>

#include "server/live.h"
#include "server/procs.h"

struct mvz_http_options {
    const char *host; /* an IPv4 address */
    int port;         /* 0: any free port */
    int listen_fd;    /* a socket bound and listening already, or -1 */
    const char *token;
    int need_token; /* every request needs the token (not on loopback) */
    struct mvz_live_procs *procs;
    /* takes a snapshot of process pid (0: the first) named name ("" for
     * the default); 0, or -1; a line for the client in msg */
    int (*snapshot)(void *ctx, int pid, const char *name, char *msg, size_t cap);
    void *ctx;
};

struct mvz_http;

/* Listens; the port it got in *port. NULL with a one-line reason. */
struct mvz_http *mvz_http_start(const struct mvz_http_options *o, int *port, char *err,
                                size_t errlen);
void mvz_http_stop(struct mvz_http *h);

#endif
