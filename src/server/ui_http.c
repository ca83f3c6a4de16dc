/*
 * ui_http.c - the web UI's server (ui_http.h) on libmicrohttpd. The model
 * is built before the server starts and never changes, so requests read
 * it from any thread without a lock.
 *
 * Queries (each a GET, answered as JSON):
 *   /api/summary                  the process and the report's summary
 *   /api/flame?cost=C&direction=D&min=F
 *                                 the call tree by cost C (peak, leaked,
 *                                 allocations, bytes, temporary), D
 *                                 top-down or bottom-up, nodes under F of
 *                                 the whole (0..1, default 0.001) left out
 *   /api/timeline                 the heap and RSS over the run
 *   /api/series?by=B&top=N        the heap over the run split by the top
 *                                 N (1..50, default 10) sites, functions
 *                                 or modules (B), and the rest
 * A bad query is a 400 with one line saying why.
 */
#include "server/ui_http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http_common.h"
#include "ui/assets.h"
#include "ui/series.h"

#define MAX_CONNECTIONS 32
#define JSON_TYPE "application/json"
/* what a flame graph can draw legibly in a browser window, and then some */
#define MAX_FRAMES_SENT 20000

struct mvz_ui_http {
    struct mvz_ui_http_options o;
    struct MHD_Daemon *d;
};

static const char *arg(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

static enum MHD_Result send_doc(struct MHD_Connection *c, char *doc, size_t len)
{
    if (!doc)
        return mvz_http_send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    return mvz_http_send_owned(c, JSON_TYPE, doc, len);
}

static enum MHD_Result get_flame(struct mvz_ui_http *h, struct MHD_Connection *c)
{
    const char *cost = arg(c, "cost"), *dir = arg(c, "direction"), *min = arg(c, "min");
    int cc = cost ? mvz_cost_parse(cost) : MVZ_COST_PEAK;
    if (cc < 0)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST,
                                   "?cost= is one of peak, leaked, allocations, bytes, temporary");
    int bottom_up = dir && !strcmp(dir, "bottom-up");
    if (dir && !bottom_up && strcmp(dir, "top-down"))
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, "?direction= is top-down or bottom-up");
    double fraction = 0.001;
    if (min) {
        char *end;
        fraction = strtod(min, &end);
        if (!*min || *end || !(fraction >= 0 && fraction <= 1))
            return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST,
                                       "?min= is a fraction of the whole, from 0 to 1");
    }
    size_t len;
    char *doc = mvz_ui_flame_json(h->o.model, (enum mvz_cost)cc, bottom_up, fraction,
                                  MAX_FRAMES_SENT, &len);
    return send_doc(c, doc, len);
}

static enum MHD_Result get_series(struct mvz_ui_http *h, struct MHD_Connection *c)
{
    const char *by = arg(c, "by"), *top = arg(c, "top");
    int b = by ? mvz_ui_by_parse(by) : MVZ_UI_BY_SITE;
    if (b < 0)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, "?by= is site, function or module");
    long n = 10;
    if (top) {
        char *end;
        n = strtol(top, &end, 10);
        if (!*top || *end || n < 1 || n > 50)
            return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, "?top= is 1 to 50");
    }
    size_t len = 0;
    char err[256];
    char *doc =
        mvz_ui_series_json(h->o.model, (enum mvz_ui_by)b, (size_t)n, &len, err, sizeof(err));
    if (!doc)
        return mvz_http_send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, err);
    return mvz_http_send_owned(c, JSON_TYPE, doc, len);
}

static enum MHD_Result get(struct mvz_ui_http *h, struct MHD_Connection *c, const char *url)
{
    size_t len = 0;
    char *doc;
    if (!strcmp(url, "/api/summary")) {
        doc = mvz_ui_summary_json(h->o.model, &len);
        return send_doc(c, doc, len);
    }
    if (!strcmp(url, "/api/flame"))
        return get_flame(h, c);
    if (!strcmp(url, "/api/series"))
        return get_series(h, c);
    if (!strcmp(url, "/api/timeline")) {
        doc = mvz_ui_timeline_json(h->o.model, &len);
        return send_doc(c, doc, len);
    }
    const struct mvz_ui_asset *a = mvz_ui_asset_find(!strcmp(url, "/index.html") ? "/" : url);
    if (a)
        return mvz_http_send_text(c, MHD_HTTP_OK, a->type, (const char *)a->data, a->len);
    return mvz_http_send_error(c, MHD_HTTP_NOT_FOUND, "no such page (docs/UI.md lists them)");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_len, void **state)
{
    struct mvz_ui_http *h = cls;
    (void)version;
    (void)data;
    if (!*state) { /* headers only so far: answer when the body (if any) is in */
        *state = h;
        return MHD_YES;
    }
    if (*data_len) {
        *data_len = 0; /* bodies are not used */
        return MHD_YES;
    }
    if (h->o.need_token && !mvz_http_authorized(c, h->o.token))
        return mvz_http_send_error(c, MHD_HTTP_UNAUTHORIZED,
                                   "this server needs its token (?token=TOKEN)");
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return mvz_http_send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only");
    return get(h, c, url);
}

struct mvz_ui_http *mvz_ui_http_start(const struct mvz_ui_http_options *o, int *port, char *err,
                                      size_t errlen)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
    if (inet_pton(AF_INET, o->host, &sa.sin_addr) != 1) {
        snprintf(err, errlen, "'%s' is not an IPv4 address", o->host);
        return NULL;
    }
    struct mvz_ui_http *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->o = *o;
    h->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
                            (uint16_t)o->port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
                            MHD_OPTION_END);
    if (!h->d) {
        snprintf(err, errlen, "cannot listen on %s:%d (in use, or not an address here)", o->host,
                 o->port);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : o->port;
    return h;
}

void mvz_ui_http_stop(struct mvz_ui_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}
