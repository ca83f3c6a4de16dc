/*
 * proxy.c - forwarding to the live server (proxy.h): one HTTP/1.0
 * request per connection ("Connection: close"), so that the answer's body
 * runs to the end of the connection and needs no parsing, chunked or not.
 */
#include "server/proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define HEAD_TIMEOUT_S 30

static int dial(const struct mvz_upstream *u, char *err, size_t errlen)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)u->port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || inet_pton(AF_INET, u->host, &sa.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        snprintf(err, errlen, "cannot reach the live server at %s:%d: %s", u->host, u->port,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct timeval tv = {HEAD_TIMEOUT_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static int send_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The head: "HTTP/1.x STATUS ...", headers, an empty line. What follows
 * it in the buffer is the body's start. */
static int read_head(struct mvz_proxied *p, char *err, size_t errlen)
{
    size_t got = 0;
    char *end = NULL;
    while (!end && got < sizeof(p->pending) - 1) {
        ssize_t r = recv(p->fd, p->pending + got, sizeof(p->pending) - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
        p->pending[got] = 0;
        end = strstr(p->pending, "\r\n\r\n");
    }
    if (!end || sscanf(p->pending, "HTTP/%*d.%*d %d", &p->status) != 1) {
        snprintf(err, errlen, "the live server's answer was cut short or not HTTP");
        return -1;
    }
    *end = 0;
    snprintf(p->type, sizeof(p->type), "text/plain; charset=utf-8");
    for (char *line = strstr(p->pending, "\r\n"); line; line = strstr(line + 2, "\r\n"))
        if (!strncasecmp(line + 2, "Content-Type:", 13)) {
            const char *v = line + 15;
            while (*v == ' ')
                v++;
            snprintf(p->type, sizeof(p->type), "%.*s", (int)strcspn(v, "\r\n"), v);
        }
    size_t head = (size_t)(end - p->pending) + 4;
    memmove(p->pending, p->pending + head, got - head);
    p->npending = got - head;
    p->off = 0;
    /* the body may wait for the program (the stream's next sample) */
    struct timeval none = {0, 0};
    setsockopt(p->fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
    return 0;
}

int mvz_proxy_open(const struct mvz_upstream *u, const char *method, const char *target,
                   struct mvz_proxied *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    p->fd = dial(u, err, errlen);
    if (p->fd < 0)
        return -1;
    char req[4608];
    int n = snprintf(req, sizeof(req),
                     "%s %s HTTP/1.0\r\nHost: %s:%d\r\nConnection: close\r\n%s%s%s"
                     "Content-Length: 0\r\n\r\n",
                     method, target, u->host, u->port, *u->token ? "Authorization: Bearer " : "",
                     u->token, *u->token ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof(req) || send_all(p->fd, req, (size_t)n) < 0 ||
        read_head(p, err, errlen) < 0) {
        if (n >= 0 && (size_t)n >= sizeof(req))
            snprintf(err, errlen, "request too long");
        else if (!*err)
            snprintf(err, errlen, "the live server closed the connection");
        mvz_proxy_close(p);
        return -1;
    }
    return 0;
}

long mvz_proxy_read(struct mvz_proxied *p, char *buf, size_t cap)
{
    if (p->off < p->npending) {
        size_t n = p->npending - p->off < cap ? p->npending - p->off : cap;
        memcpy(buf, p->pending + p->off, n);
        p->off += n;
        return (long)n;
    }
    ssize_t r = recv(p->fd, buf, cap, 0);
    return r < 0 ? -1 : (long)r;
}

void mvz_proxy_close(struct mvz_proxied *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}
