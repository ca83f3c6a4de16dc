/*
 * http.c - the live server's HTTP side (http.h), on libmicrohttpd: one
 * thread per connection, so that a stream's writer may wait for the next
 * sample, and a client that stops reading holds only its own thread and
 * one line; the program and the other clients never wait for it.
 *
 * Reading needs the token unless the server listens on loopback; changing
 * anything (taking a snapshot) always needs it.
 */
#include "server/http.h"

#include "server/http_common.h"
#include "util/fmt.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONNECTIONS 64
#define STREAM_BLOCK (64u << 10)

struct mvz_http {
    struct mvz_http_options o;
    struct MHD_Daemon *d;
};

/* ---- the stream: the state, then one line per sample ---- */
struct stream {
    struct mvz_live *live;
    uint64_t next; /* the next sample to send */
    char *line;    /* what is left to send of the current line */
    size_t len, off;
    int state_sent;
};

static int next_line(struct stream *s)
{
    free(s->line);
    s->line = NULL;
    s->len = s->off = 0;
    if (!s->state_sent) { /* first, and after falling out of the window */
        s->state_sent = 1;
        s->next = mvz_live_samples(s->live);
        return mvz_live_state_json(s->live, &s->line, &s->len);
    }
    int rc = mvz_live_update_json(s->live, s->next, &s->line, &s->len);
    if (rc == 1) {
        s->next++;
        return 0;
    }
    if (rc == -2) {
        s->state_sent = 0;
        return next_line(s);
    }
    if (rc < 0)
        return -1;
    if (mvz_live_wait_sample(s->live, s->next, 1000))
        return next_line(s);
    if (mvz_live_ended(s->live))
        return 1;
    s->line = strdup("\n"); /* nothing new for a second: a keepalive */
    s->len = s->line ? 1 : 0;
    return s->line ? 0 : -1;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream *s = cls;
    (void)pos;
    if (s->off >= s->len) {
        int rc = next_line(s);
        if (rc > 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (rc < 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = s->len - s->off < max ? s->len - s->off : max;
    memcpy(buf, s->line + s->off, n);
    s->off += n;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    struct stream *s = cls;
    free(s->line);
    free(s);
}

static enum MHD_Result send_stream(struct MHD_Connection *c, struct mvz_live *live)
{
    struct stream *s = calloc(1, sizeof(*s));
    if (!s)
        return mvz_http_send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    s->live = live;
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK,
                                                               stream_read, s, stream_free);
    if (!r) {
        stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/x-ndjson");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

/* ---- routes ---- */
/* A period below the agent's flush interval (20 ms) would only repeat
 * samples. */
#define PERIOD_MIN_MS 20
#define PERIOD_MAX_MS 60000

static const char index_text[] =
    "memviz live server (docs/LIVE.md)\n"
    "  GET  /metrics              Prometheus text format\n"
    "  GET  /debug/pprof/heap     the live heap as a pprof profile (go tool pprof URL)\n"
    "  GET  /api/v1/processes     the processes of the run\n"
    "  GET  /api/v1/state         the state: process, samples in the window, top sites\n"
    "  GET  /api/v1/stream        the state, then one JSON line per sample\n"
    "  POST /api/v1/snapshot      take a heap snapshot (?name=NAME; needs the token)\n"
    "  POST /api/v1/period        sample every ?ms=N milliseconds (20 to 60000; needs the token)\n"
    "  POST /api/v1/mode          ?sample=BYTES (64k, 512k, 1m): record one allocation every\n"
    "                             BYTES on average; ?sample=0: every one (needs the token)\n"
    "?pid=PID picks a process for state, stream, pprof and snapshot (default: the first)\n";

/* ?pid=PID (0: the first process); -1 when malformed. */
static int pid_arg(struct MHD_Connection *c)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid");
    char *end;
    long pid = v ? strtol(v, &end, 10) : 0;
    return v && (!*v || *end || pid <= 0 || pid > (1 << 22)) ? -1 : (int)pid;
}

static enum MHD_Result get(struct mvz_http *h, struct MHD_Connection *c, const char *url)
{
    char *body = NULL;
    size_t len = 0;
    if (!strcmp(url, "/"))
        return mvz_http_send_text(c, MHD_HTTP_OK, "text/plain; charset=utf-8", index_text,
                                  sizeof(index_text) - 1);
    if (!strcmp(url, "/metrics")) {
        struct mvz_live *all[256];
        size_t n = mvz_live_procs_list(h->o.procs, all, 256);
        if (mvz_live_metrics_all(all, n, &body, &len) < 0)
            return mvz_http_send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return mvz_http_send_owned(c, "text/plain; version=0.0.4; charset=utf-8", body, len);
    }
    if (!strcmp(url, "/api/v1/processes")) {
        if (mvz_live_procs_json(h->o.procs, &body, &len) < 0)
            return mvz_http_send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return mvz_http_send_owned(c, "application/json", body, len);
    }
    int known = !strcmp(url, "/api/v1/state") || !strcmp(url, "/api/v1/stream") ||
                !strcmp(url, "/debug/pprof/heap");
    if (!known)
        return mvz_http_send_error(c, MHD_HTTP_NOT_FOUND, "no such endpoint (GET / lists them)");
    int pid = pid_arg(c);
    struct mvz_live *live = pid < 0 ? NULL : mvz_live_procs_get(h->o.procs, pid);
    if (pid < 0)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, "?pid= needs a process id");
    if (!live)
        return mvz_http_send_error(c, MHD_HTTP_NOT_FOUND,
                                   "no such process in this run "
                                   "(GET /api/v1/processes lists them)");
    if (!strcmp(url, "/api/v1/state")) {
        if (mvz_live_state_json(live, &body, &len) < 0)
            return mvz_http_send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return mvz_http_send_owned(c, "application/json", body, len);
    }
    if (!strcmp(url, "/api/v1/stream"))
        return send_stream(c, live);
    if (mvz_live_pprof(live, &body, &len, 5000) < 0)
        return mvz_http_send_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no profile yet");
    return mvz_http_send_owned(c, "application/octet-stream", body, len);
}

/* POST /api/v1/period?ms=N: every process samples every N ms from its
 * next sample on, and the agents read the instruments as often. */
static enum MHD_Result set_period(struct mvz_http *h, struct MHD_Connection *c)
{
    if (!mvz_http_authorized(c, h->o.token))
        return mvz_http_send_error(c, MHD_HTTP_UNAUTHORIZED, "changing the period needs the token");
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "ms");
    char *end;
    long ms = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || ms < PERIOD_MIN_MS || ms > PERIOD_MAX_MS)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST,
                                   "?ms= needs a period of 20 to 60000 ms");
    mvz_live_procs_set_period(h->o.procs, (uint64_t)ms * 1000000ull);
    char msg[64];
    int n = snprintf(msg, sizeof(msg), "sampling every %ld ms\n", ms);
    return mvz_http_send_text(c, MHD_HTTP_OK, "text/plain; charset=utf-8", msg, (size_t)n);
}

/* POST /api/v1/mode?sample=BYTES: every process switches to sampling at
 * that rate (0: records every allocation again) from now on. */
static enum MHD_Result set_mode(struct mvz_http *h, struct MHD_Connection *c)
{
    if (!mvz_http_authorized(c, h->o.token))
        return mvz_http_send_error(c, MHD_HTTP_UNAUTHORIZED, "switching the mode needs the token");
    uint64_t rate;
    if (mvz_parse_size(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sample"), &rate) < 0)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST,
                                   "?sample= needs a size (0, 64k, 512k, 1m; at most 1 TiB)");
    if (mvz_live_procs_set_sampling(h->o.procs, rate) < 0)
        return mvz_http_send_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "the agents cannot be reached");
    char msg[128];
    int n = rate ? snprintf(msg, sizeof(msg),
                            "sampling: one allocation every %llu bytes on average from now on\n",
                            (unsigned long long)rate)
                 : snprintf(msg, sizeof(msg), "recording every allocation from now on\n");
    return mvz_http_send_text(c, MHD_HTTP_OK, "text/plain; charset=utf-8", msg, (size_t)n);
}

static enum MHD_Result post(struct mvz_http *h, struct MHD_Connection *c, const char *url)
{
    if (!strcmp(url, "/api/v1/period"))
        return set_period(h, c);
    if (!strcmp(url, "/api/v1/mode"))
        return set_mode(h, c);
    if (strcmp(url, "/api/v1/snapshot") != 0)
        return mvz_http_send_error(c, MHD_HTTP_NOT_FOUND, "no such endpoint (GET / lists them)");
    if (!mvz_http_authorized(c, h->o.token))
        return mvz_http_send_error(c, MHD_HTTP_UNAUTHORIZED, "taking a snapshot needs the token");
    if (!h->o.snapshot)
        return mvz_http_send_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "snapshots cannot be taken");
    const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
    int pid = pid_arg(c);
    if (pid < 0)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, "?pid= needs a process id");
    char msg[256];
    int ok = h->o.snapshot(h->o.ctx, pid, name ? name : "", msg, sizeof(msg)) == 0;
    size_t n = strlen(msg);
    if (n + 1 < sizeof(msg))
        msg[n++] = '\n';
    return mvz_http_send_text(c, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE,
                              "text/plain; charset=utf-8", msg, n);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_len, void **state)
{
    struct mvz_http *h = cls;
    (void)version;
    (void)data;
    if (mvz_http_not_yet(h, state, data_len))
        return MHD_YES;
    if (h->o.need_token && !mvz_http_authorized(c, h->o.token))
        return mvz_http_send_error(c, MHD_HTTP_UNAUTHORIZED,
                                   "this server needs its token "
                                   "(Authorization: Bearer TOKEN)");
    if (!strcmp(method, "GET") || !strcmp(method, "HEAD"))
        return get(h, c, url);
    if (!strcmp(method, "POST"))
        return post(h, c, url);
    return mvz_http_send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or POST");
}

struct mvz_http *mvz_http_start(const struct mvz_http_options *o, int *port, char *err,
                                size_t errlen)
{
    struct mvz_http *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->o = *o;
    char why[256];
    h->d = mvz_http_listen(o->host, o->port, o->listen_fd, MAX_CONNECTIONS, on_request, h, port,
                           why, sizeof(why));
    if (!h->d) {
        snprintf(err, errlen, "--live: %s", why);
        free(h);
        return NULL;
    }
    return h;
}

void mvz_http_stop(struct mvz_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}
