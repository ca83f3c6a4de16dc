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
 *   /api/sites?cost=C&top=N       the top N (1..1000, default 50) sites by
 *                                 cost C, with their stacks
 *   /api/breakdown                allocations by size, allocator function
 *                                 and thread
 *   /api/function?name=F&cost=C   F's cost, callers and callees
 *   /api/snapshots                the heap snapshots of the trace
 *   /api/snapshot?id=N            one: leak kinds and loss records, roots
 *                                 and sites by retained size, with paths
 *   /api/growth                   the top 20 growing sites across them
 *   /api/lifetimes                blocks by size class and lifetime
 *   /api/callgraph                the call graph of a --callgraph trace
 *   /api/heapmap?id=N&cells=C     snapshot N's blocks in address order, in
 *                                 about C cells, coloured by site
 *   /api/heapmap/block?id=N&cells=C&cell=K  the block under cell K
 *   /api/heapmap?t=T&cells=C      the same at time T, from the addresses a
 *                                 trace of memviz run --addresses has
 *                                 (&cell=K on /block: the block, its age)
 *   /api/heapmap/frames?frames=K&cells=C  the maps of K moments to play
 *   /api/heatmap?slices=S&cells=C allocations and live bytes per address
 *                                 cell and slice of the run
 *   /api/diff?cost=C              memviz ui BASE NEW: the totals, and what
 *                                 grew and shrank by site and function
 *   /api/diff_flame?cost=C        the new run's call tree with the base's
 *                                 cost of each calling context
 *   /api/series?by=B&top=N&rank=R&t_ns=T&module=M&function=F
 *                                 the heap over the run split by the top
 *                                 N (1..50, default 10) sites, functions
 *                                 or modules (B), ranked by peak, average
 *                                 or at T; only M's or F's sites (a
 *                                 drill-down); &add=S: the groups
 *                                 named with S first; and the rest
 * All but the timeline and the series take a window of the run too:
 * from_ns=A&to_ns=B (ns since the process started; either may be left
 * out), replayed the first time it is asked (ui/model.h).
 * A bad query is a 400 with one line saying why. /api/mode says whether
 * the UI is on a trace or, with memviz ui --live, on a running program,
 * whose live server's /api/v1/ (docs/LIVE.md) is then passed through.
 */
#include "server/ui_http.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http_common.h"
#include "ui/assets.h"
#include "ui/diff.h"
#include "ui/heapmap.h"
#include "ui/places.h"
#include "ui/lifetimes.h"
#include "ui/series.h"
#include "ui/sites.h"
#include "ui/snaps.h"

#define MAX_CONNECTIONS 32
#define JSON_TYPE "application/json"
/* what a flame graph can draw legibly in a browser window, and then some */
#define MAX_FRAMES_SENT 20000

#define BAD_WINDOW "?from_ns= and ?to_ns= are ns since the start, from_ns first"

/* A query of a view (the whole run or a window): its arguments, and what
 * renders its document. */
struct view_query {
    char *(*render)(struct mvz_ui_model *m, const struct mvz_ui_view *v, const struct view_query *q,
                    size_t *len);
    enum mvz_cost cost;
    int bottom_up;
    double min;
    size_t top;
    const char *name;
};

struct mvz_ui_http {
    struct mvz_ui_http_options o;
    struct MHD_Daemon *d;
};

static const char *arg(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* ?name=N: a number below max (or def when absent); -1 when malformed. */
static long long num_arg(struct MHD_Connection *c, const char *name, long long def, long long max)
{
    const char *v = arg(c, name);
    if (!v)
        return def;
    char *end;
    long long n = strtoll(v, &end, 10);
    return *v >= '0' && *v <= '9' && !*end && n < max ? n : -1;
}

static enum MHD_Result send_doc(struct MHD_Connection *c, char *doc, size_t len)
{
    if (!doc)
        return mvz_http_send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    return mvz_http_send_owned(c, JSON_TYPE, doc, len);
}

/* ?from_ns= and ?to_ns=: 0, or -1 when malformed or backwards. */
static int window_args(struct MHD_Connection *c, uint64_t *from, uint64_t *to)
{
    const char *a[2] = {arg(c, "from_ns"), arg(c, "to_ns")};
    uint64_t v[2] = {0, UINT64_MAX};
    for (int i = 0; i < 2; i++) {
        if (!a[i])
            continue;
        char *end;
        if (*a[i] < '0' || *a[i] > '9')
            return -1;
        v[i] = strtoull(a[i], &end, 10);
        if (*end)
            return -1;
    }
    *from = v[0];
    *to = v[1];
    return v[1] >= v[0] ? 0 : -1;
}

static char *render_summary(struct mvz_ui_model *m, const struct mvz_ui_view *v,
                            const struct view_query *q, size_t *len)
{
    (void)q;
    return mvz_ui_summary_json(m, v, len);
}

static char *render_flame(struct mvz_ui_model *m, const struct mvz_ui_view *v,
                          const struct view_query *q, size_t *len)
{
    (void)m;
    return mvz_ui_flame_json(v, q->cost, q->bottom_up, q->min, MAX_FRAMES_SENT, len);
}

static char *render_sites(struct mvz_ui_model *m, const struct mvz_ui_view *v,
                          const struct view_query *q, size_t *len)
{
    return mvz_ui_sites_json(m, v, q->cost, q->top, len);
}

static char *render_breakdown(struct mvz_ui_model *m, const struct mvz_ui_view *v,
                              const struct view_query *q, size_t *len)
{
    (void)q;
    return mvz_ui_breakdown_json(m, v, len);
}

static char *render_function(struct mvz_ui_model *m, const struct mvz_ui_view *v,
                             const struct view_query *q, size_t *len)
{
    (void)m;
    return mvz_ui_function_json(v, q->name, q->cost, len);
}

/* The document of q on the view of the request's window, made now if
 * need be (under the model's lock: a window view may go when let go). */
static enum MHD_Result send_view(struct mvz_ui_http *h, struct MHD_Connection *c,
                                 const struct view_query *q)
{
    uint64_t from, to;
    if (window_args(c, &from, &to) < 0)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, BAD_WINDOW);
    char err[512];
    size_t len = 0;
    char *doc = NULL;
    pthread_mutex_lock(&h->o.model->build_lock);
    const struct mvz_ui_view *v = mvz_ui_window(h->o.model, from, to, err, sizeof(err));
    if (v)
        doc = q->render(h->o.model, v, q, &len);
    pthread_mutex_unlock(&h->o.model->build_lock);
    if (!v)
        return mvz_http_send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, err);
    return send_doc(c, doc, len);
}

/* ?cost=: 0, or -1 after answering 400. */
static int cost_arg(struct MHD_Connection *c, enum mvz_cost *out)
{
    const char *cost = arg(c, "cost");
    int cc = cost ? mvz_cost_parse(cost) : MVZ_COST_PEAK;
    if (cc < 0)
        return -1;
    *out = (enum mvz_cost)cc;
    return 0;
}

#define BAD_COST "?cost= is one of peak, leaked, allocations, bytes, temporary"

static enum MHD_Result get_flame(struct mvz_ui_http *h, struct MHD_Connection *c)
{
    const char *dir = arg(c, "direction"), *min = arg(c, "min");
    struct view_query q = {.render = render_flame};
    if (cost_arg(c, &q.cost) < 0)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, BAD_COST);
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
    q.bottom_up = bottom_up;
    q.min = fraction;
    return send_view(h, c, &q);
}

static enum MHD_Result get_sites(struct mvz_ui_http *h, struct MHD_Connection *c)
{
    struct view_query q = {.render = render_sites, .top = 50};
    if (cost_arg(c, &q.cost) < 0)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, BAD_COST);
    const char *top = arg(c, "top");
    if (top) {
        char *end;
        long n = strtol(top, &end, 10);
        if (!*top || *end || n < 1 || n > 1000)
            return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, "?top= is 1 to 1000");
        q.top = (size_t)n;
    }
    return send_view(h, c, &q);
}

static enum MHD_Result get_function(struct mvz_ui_http *h, struct MHD_Connection *c)
{
    struct view_query q = {.render = render_function, .name = arg(c, "name")};
    if (!q.name || !*q.name)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, "?name= names a function");
    if (cost_arg(c, &q.cost) < 0)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, BAD_COST);
    return send_view(h, c, &q);
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
    const char *rank = arg(c, "rank");
    struct mvz_ui_series_query q = {(enum mvz_ui_by)b, (size_t)n,          MVZ_UI_RANK_PEAK, 0,
                                    arg(c, "module"),  arg(c, "function"), arg(c, "add")};
    int r = rank ? mvz_ui_rank_parse(rank) : MVZ_UI_RANK_PEAK;
    long long at = num_arg(c, "t_ns", -1, INT64_MAX);
    if (r < 0 || (r == MVZ_UI_RANK_AT && at < 0))
        return mvz_http_send_error(
            c, MHD_HTTP_BAD_REQUEST,
            "?rank= is peak, average, or at with ?t_ns= (ns since the start)");
    q.rank = (enum mvz_ui_rank)r;
    q.at_ns = at < 0 ? 0 : (uint64_t)at;
    size_t len = 0;
    char err[256];
    char *doc = mvz_ui_series_json(h->o.model, &q, &len, err, sizeof(err));
    if (!doc)
        return mvz_http_send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, err);
    return mvz_http_send_owned(c, JSON_TYPE, doc, len);
}

/* The documents built under the model's lock and cached: the snapshots',
 * the lifetimes, the call graph. */
static enum MHD_Result get_snapshots(struct mvz_ui_http *h, struct MHD_Connection *c,
                                     const char *url)
{
    char err[512];
    size_t len = 0;
    char *doc = NULL;
    if (!strcmp(url, "/api/snapshots")) {
        doc = mvz_ui_snapshots_json(h->o.model, &len, err, sizeof(err));
    } else if (!strcmp(url, "/api/snapshot")) {
        const char *id = arg(c, "id");
        unsigned long v = UINT32_MAX;
        char *end;
        if (id && (*id < '0' || *id > '9' || (v = strtoul(id, &end, 10), *end) || v >= UINT32_MAX))
            return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, "?id= is a snapshot's id");
        doc = mvz_ui_snapshot_json(h->o.model, (uint32_t)v, &len, err, sizeof(err));
        if (!doc && strstr(err, "no complete snapshot"))
            return mvz_http_send_error(c, MHD_HTTP_NOT_FOUND, err);
    } else if (!strcmp(url, "/api/lifetimes")) {
        doc = mvz_ui_lifetimes_json(h->o.model, &len, err, sizeof(err));
    } else if (!strcmp(url, "/api/callgraph")) {
        doc = mvz_ui_callgraph_json(h->o.model, &len, err, sizeof(err));
    } else {
        doc = mvz_ui_growth_json(h->o.model, 20, &len, err, sizeof(err));
    }
    if (!doc)
        return mvz_http_send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, err);
    return mvz_http_send_owned(c, JSON_TYPE, doc, len);
}

/* ---- memviz ui --live: /api/v1/ passed on to the live server ---- */
struct query {
    char buf[4096];
    size_t n;
    int bad;
};

static void put_escaped(struct query *q, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s && !q->bad; s++) {
        unsigned char ch = (unsigned char)*s;
        int plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || strchr("-_.~", ch);
        if (q->n + 4 >= sizeof(q->buf)) {
            q->bad = 1;
        } else if (plain) {
            q->buf[q->n++] = (char)ch;
        } else {
            q->buf[q->n++] = '%';
            q->buf[q->n++] = hex[ch >> 4];
            q->buf[q->n++] = hex[ch & 15];
        }
    }
    q->buf[q->n] = 0;
}

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    struct query *q = cls;
    (void)kind;
    if (!strcmp(key, "token"))
        return MHD_YES; /* the UI's own token, not the live server's */
    if (q->n + 2 < sizeof(q->buf))
        q->buf[q->n++] = strchr(q->buf, '?') ? '&' : '?';
    put_escaped(q, key);
    if (value) {
        if (q->n + 2 < sizeof(q->buf))
            q->buf[q->n++] = '=';
        put_escaped(q, value);
    }
    return MHD_YES;
}

static ssize_t pass_body(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    long n = mvz_proxy_read(cls, buf, max);
    return n > 0    ? (ssize_t)n
           : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM
                    : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void pass_done(void *cls)
{
    mvz_proxy_close(cls);
    free(cls);
}

/* A POST changes the program: only the UI's own page may ask (a custom
 * header, which another site's page cannot send here without a CORS
 * permission this server never gives). */
static enum MHD_Result pass_on(struct mvz_ui_http *h, struct MHD_Connection *c, const char *url,
                               const char *method)
{
    if (!strcmp(method, "POST") && !MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Memviz"))
        return mvz_http_send_error(c, MHD_HTTP_FORBIDDEN, "a POST needs the header X-Memviz: 1");
    struct query q = {.n = 0};
    snprintf(q.buf, sizeof(q.buf), "%.2000s", url);
    q.n = strlen(q.buf);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &q);
    if (q.bad)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, "query too long");
    struct mvz_proxied *p = malloc(sizeof(*p));
    char err[256];
    if (!p)
        return mvz_http_send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    if (mvz_proxy_open(h->o.live, method, q.buf, p, err, sizeof(err)) < 0) {
        free(p);
        return mvz_http_send_error(c, MHD_HTTP_BAD_GATEWAY, err);
    }
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, pass_body, p, pass_done);
    if (!r) {
        pass_done(p);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", p->type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)p->status, r);
    MHD_destroy_response(r);
    return rc;
}

/* memviz ui BASE NEW: the comparison. */
static enum MHD_Result get_diff(struct mvz_ui_http *h, struct MHD_Connection *c, const char *url)
{
    if (!h->o.base)
        return mvz_http_send_error(c, MHD_HTTP_NOT_FOUND,
                                   "no comparison: memviz ui BASE NEW compares two runs");
    enum mvz_cost cost;
    if (cost_arg(c, &cost) < 0)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, BAD_COST);
    size_t len = 0;
    char *doc = !strcmp(url, "/api/diff")
                    ? mvz_ui_diff_json(h->o.base, h->o.model, cost, 20, &len)
                    : mvz_ui_diff_flame_json(h->o.base, h->o.model, cost, 0.001, &len);
    return send_doc(c, doc, len);
}

static enum MHD_Result send_place_doc(struct MHD_Connection *c, char *doc, size_t len,
                                      const char *err)
{
    if (doc)
        return mvz_http_send_owned(c, JSON_TYPE, doc, len);
    return mvz_http_send_error(
        c, strstr(err, "no block addresses") ? MHD_HTTP_NOT_FOUND : MHD_HTTP_INTERNAL_SERVER_ERROR,
        err);
}

/* The heap map at a moment, and the block under one of its cells
 * (places.h). */
static enum MHD_Result get_moment(struct mvz_ui_http *h, struct MHD_Connection *c, int block)
{
    long long t = num_arg(c, "t", 0, LLONG_MAX), cells = num_arg(c, "cells", 4096, 65537);
    long long cell = num_arg(c, "cell", -2, 1ll << 40);
    if (t < 0 || cells < 1 || cell == -1 || (block && cell < 0))
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST,
                                   "?t= is a time in ns, ?cells= 1 to 65536, ?cell= a cell");
    char err[512] = "";
    size_t len = 0;
    pthread_mutex_lock(&h->o.model->build_lock);
    char *doc =
        block ? mvz_ui_moment_block_json(h->o.model, (uint64_t)t, (size_t)cells, (size_t)cell, &len,
                                         err, sizeof(err))
              : mvz_ui_moment_json(h->o.model, (uint64_t)t, (size_t)cells, &len, err, sizeof(err));
    pthread_mutex_unlock(&h->o.model->build_lock);
    return send_place_doc(c, doc, len, err);
}

/* The frames to play, and the heat map (places.h). */
static enum MHD_Result get_places(struct mvz_ui_http *h, struct MHD_Connection *c, int heat)
{
    long long n = heat ? num_arg(c, "slices", 200, 1001) : num_arg(c, "frames", 40, 201);
    long long cells = num_arg(c, "cells", heat ? 256 : 2048, heat ? 4097 : 16385);
    if (n < 1 || cells < 1)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST,
                                   heat ? "?slices= 1 to 1000, ?cells= 1 to 4096"
                                        : "?frames= 1 to 200, ?cells= 1 to 16384");
    char err[512] = "";
    size_t len = 0;
    pthread_mutex_lock(&h->o.model->build_lock);
    char *doc =
        heat ? mvz_ui_heatmap_json(h->o.model, (size_t)n, (size_t)cells, &len, err, sizeof(err))
             : mvz_ui_frames_json(h->o.model, (size_t)n, (size_t)cells, &len, err, sizeof(err));
    pthread_mutex_unlock(&h->o.model->build_lock);
    return send_place_doc(c, doc, len, err);
}

/* The heap map of a snapshot, and the block under one of its cells. */
static enum MHD_Result get_heapmap(struct mvz_ui_http *h, struct MHD_Connection *c, const char *url)
{
    if (arg(c, "t"))
        return get_moment(h, c, !strcmp(url, "/api/heapmap/block"));
    long long id = num_arg(c, "id", UINT32_MAX, (long long)UINT32_MAX + 1);
    long long cells = num_arg(c, "cells", 4096, 65537), cell = num_arg(c, "cell", -2, 1ll << 40);
    if (id < 0 || cells < 1 || cell == -1)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST,
                                   "?id= is a snapshot's id, ?cells= 1 to 65536, ?cell= a cell");
    int block = !strcmp(url, "/api/heapmap/block");
    if (block && cell < 0)
        return mvz_http_send_error(c, MHD_HTTP_BAD_REQUEST, "?cell= names the cell");
    char err[512];
    size_t len = 0;
    pthread_mutex_lock(&h->o.model->build_lock);
    char *doc = block ? mvz_ui_heapmap_block_json(h->o.model, (uint32_t)id, (size_t)cells,
                                                  (size_t)cell, &len, err, sizeof(err))
                      : mvz_ui_heapmap_json(h->o.model, (uint32_t)id, (size_t)cells, &len, err,
                                            sizeof(err));
    pthread_mutex_unlock(&h->o.model->build_lock);
    if (!doc)
        return mvz_http_send_error(c,
                                   strstr(err, "no complete snapshot")
                                       ? MHD_HTTP_NOT_FOUND
                                       : MHD_HTTP_INTERNAL_SERVER_ERROR,
                                   err);
    return mvz_http_send_owned(c, JSON_TYPE, doc, len);
}

static enum MHD_Result get(struct mvz_ui_http *h, struct MHD_Connection *c, const char *url)
{
    size_t len = 0;
    char *doc;
    static const struct view_query summary = {.render = render_summary},
                                   breakdown = {.render = render_breakdown};
    if (!strcmp(url, "/api/summary"))
        return send_view(h, c, &summary);
    if (!strcmp(url, "/api/breakdown"))
        return send_view(h, c, &breakdown);
    if (!strcmp(url, "/api/flame"))
        return get_flame(h, c);
    if (!strcmp(url, "/api/sites"))
        return get_sites(h, c);
    if (!strcmp(url, "/api/function"))
        return get_function(h, c);
    if (!strcmp(url, "/api/series"))
        return get_series(h, c);
    if (!strcmp(url, "/api/heapmap") || !strcmp(url, "/api/heapmap/block"))
        return get_heapmap(h, c, url);
    if (!strcmp(url, "/api/heapmap/frames") || !strcmp(url, "/api/heatmap"))
        return get_places(h, c, !strcmp(url, "/api/heatmap"));
    if (!strcmp(url, "/api/diff") || !strcmp(url, "/api/diff_flame"))
        return get_diff(h, c, url);
    if (!strcmp(url, "/api/snapshots") || !strcmp(url, "/api/snapshot") ||
        !strcmp(url, "/api/growth") || !strcmp(url, "/api/lifetimes") ||
        !strcmp(url, "/api/callgraph"))
        return get_snapshots(h, c, url);
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
    if (mvz_http_not_yet(h, state, data_len))
        return MHD_YES;
    if (h->o.need_token && !mvz_http_authorized(c, h->o.token))
        return mvz_http_send_error(c, MHD_HTTP_UNAUTHORIZED,
                                   "this server needs its token (?token=TOKEN)");
    if (h->o.live && !strncmp(url, "/api/v1/", 8) &&
        (!strcmp(method, "GET") || !strcmp(method, "POST")))
        return pass_on(h, c, url, method);
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return mvz_http_send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only");
    if (!strcmp(url, "/api/mode")) {
        const char *mode = h->o.live   ? "{\"mode\":\"live\"}\n"
                           : h->o.base ? "{\"mode\":\"trace\",\"diff\":true}\n"
                                       : "{\"mode\":\"trace\"}\n";
        return mvz_http_send_text(c, MHD_HTTP_OK, JSON_TYPE, mode, strlen(mode));
    }
    if (h->o.live && !strncmp(url, "/api/", 5))
        return mvz_http_send_error(c, MHD_HTTP_NOT_FOUND,
                                   "this UI follows a running program: /api/v1/ only");
    return get(h, c, url);
}

struct mvz_ui_http *mvz_ui_http_start(const struct mvz_ui_http_options *o, int *port, char *err,
                                      size_t errlen)
{
    struct mvz_ui_http *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->o = *o;
    h->d = mvz_http_listen(o->host, o->port, -1, MAX_CONNECTIONS, on_request, h, port, err, errlen);
    if (!h->d) {
        free(h);
        return NULL;
    }
    return h;
}

void mvz_ui_http_stop(struct mvz_ui_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}
