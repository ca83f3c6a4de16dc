/*
 * proxy.h - passing a request on to the live server (memviz run --live)
 * and its answer back as it comes: `memviz ui --live` serves the web UI
 * and forwards the UI's /api/v1/ requests, the stream included, adding
 * the live server's token.
 */
#ifndef MVZ_SERVER_PROXY_H
#define MVZ_SERVER_PROXY_H

#include <stddef.h>

struct mvz_upstream {
    char host[64]; /* an IPv4 address */
    int port;
    char token[128]; /* "" for none */
};

/* An answer on its way: the status and type read, the body to come from
 * fd, after the bytes of it already read (pending). */
struct mvz_proxied {
    int fd, status;
    char type[128];
    char pending[8192];
    size_t npending, off;
};

/* Sends METHOD target (a path and its query) to u and reads the answer's
 * head. 0, or -1 with a one-line reason in err. */
int mvz_proxy_open(const struct mvz_upstream *u, const char *method, const char *target,
                   struct mvz_proxied *p, char *err, size_t errlen);
/* The next bytes of the body into buf: how many, 0 at its end, -1 on an
 * error. */
long mvz_proxy_read(struct mvz_proxied *p, char *buf, size_t cap);
void mvz_proxy_close(struct mvz_proxied *p);

#endif
