/*
 * client.c - the stream client (client.h). HTTP/1.0, so that the body is
 * the stream itself, to the close (no chunked encoding to undo); JSON by
 * jansson. A line is parsed outside the lock and stored under it.
 */
#include "tui/client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_BYTES (16u << 20)

static uint64_t num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

static void set_error(struct live_client *c, const char *fmt, const char *what)
{
    pthread_mutex_lock(&c->mu);
    snprintf(c->error, sizeof(c->error), fmt, what);
    c->connected = 0;
    pthread_mutex_unlock(&c->mu);
}

static struct live_sample sample_of(json_t *s)
{
    return (struct live_sample){
        num(s, "t_ns"),        num(s, "heap_bytes"), num(s, "heap_blocks"),    num(s, "rss_bytes"),
        num(s, "allocations"), num(s, "frees"),      num(s, "allocated_bytes")};
}

/* The program's instruments and last log lines, into v. */
static void user_of(struct live_sites *v, json_t *d)
{
    json_t *ins = json_object_get(d, "instruments"), *log = json_object_get(d, "log");
    for (size_t i = 0; i < json_array_size(ins) && v->nins < LIVE_INS; i++) {
        json_t *in = json_array_get(ins, i), *val = json_object_get(in, "value");
        const char *name = json_string_value(json_object_get(in, "name"));
        char value[48];
        if (json_is_integer(val))
            snprintf(value, sizeof(value), "%lld", (long long)json_integer_value(val));
        else if (json_is_real(val))
            snprintf(value, sizeof(value), "%g", json_real_value(val));
        else if (json_is_string(val))
            snprintf(value, sizeof(value), "\"%s\"", json_string_value(val));
        else if (json_object_get(in, "marked"))
            snprintf(value, sizeof(value), "%llu live, %llu bytes",
                     (unsigned long long)num(in, "live_blocks"),
                     (unsigned long long)num(in, "live_bytes"));
        else
            snprintf(value, sizeof(value), "%llu in %.3f s", (unsigned long long)num(in, "count"),
                     (double)num(in, "total_ns") / 1e9);
        snprintf(v->ins[v->nins++], sizeof(v->ins[0]), "%-24s %s", name ? name : "?", value);
    }
    json_t *th = json_object_get(d, "threads"), *sn = json_object_get(d, "snapshots");
    for (size_t i = 0; i < json_array_size(th) && v->nthreads < 4; i++) {
        json_t *t = json_array_get(th, i);
        const char *name = json_string_value(json_object_get(t, "name"));
        snprintf(v->threads[v->nthreads++], sizeof(v->threads[0]), "%-8llu %-16s %llu bytes live",
                 (unsigned long long)num(t, "tid"), name ? name : "",
                 (unsigned long long)num(t, "live_bytes"));
    }
    size_t ns = json_array_size(sn), sfrom = ns > 3 ? ns - 3 : 0;
    for (size_t i = sfrom; i < ns; i++) {
        json_t *x = json_array_get(sn, i);
        snprintf(v->snaps[v->nsnaps++], sizeof(v->snaps[0]), "\"%s\" at %.3f s",
                 json_string_value(json_object_get(x, "name")) ?: "", (double)num(x, "t_ns") / 1e9);
    }
    size_t n = json_array_size(log), from = n > LIVE_LOG ? n - LIVE_LOG : 0;
    for (size_t i = from; i < n; i++) {
        json_t *l = json_array_get(log, i);
        snprintf(v->log[v->nlog++], sizeof(v->log[0]), "%9.3f s  %s", (double)num(l, "t_ns") / 1e9,
                 json_string_value(json_object_get(l, "text")) ?: "");
    }
}

static struct live_sites *sites_of(json_t *arr)
{
    if (!json_is_array(arr))
        return NULL;
    struct live_sites *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    for (size_t i = 0; i < json_array_size(arr) && v->n < LIVE_TOP; i++) {
        json_t *s = json_array_get(arr, i), *f0 = json_array_get(json_object_get(s, "frames"), 0);
        struct live_site *o = &v->v[v->n++];
        o->live_bytes = num(s, "live_bytes");
        o->live_blocks = num(s, "live_blocks");
        const char *fn = json_string_value(json_object_get(f0, "function"));
        const char *file = json_string_value(json_object_get(f0, "file"));
        if (file)
            snprintf(o->where, sizeof(o->where), "%s (%s:%llu)", fn ? fn : "??", file,
                     (unsigned long long)num(f0, "line"));
        else
            snprintf(o->where, sizeof(o->where), "%s", fn ? fn : "??");
    }
    return v;
}

/* Under mu: the ring sized for the window. */
static int size_ring(struct live_client *c, uint64_t window_ns, uint64_t period_ns)
{
    size_t cap = period_ns ? (size_t)(window_ns / period_ns) + 2 : 6002;
    if (c->ring && cap == c->cap)
        return 0;
    for (size_t i = 0; c->sites && i < c->cap; i++)
        free(c->sites[i]);
    free(c->ring);
    free(c->sites);
    c->ring = calloc(cap, sizeof(*c->ring));
    c->sites = calloc(cap, sizeof(*c->sites));
    c->cap = cap;
    c->first = c->next = 0;
    return c->ring && c->sites ? 0 : -1;
}

/* Under mu: sample seq (and its sites, taken over). */
static void put(struct live_client *c, uint64_t seq, struct live_sample s, struct live_sites *st)
{
    if (!c->cap) {
        free(st);
        return;
    }
    if (seq >= c->next) {
        for (uint64_t k = c->next; k < seq && k - c->first < c->cap; k++) { /* a gap: none */
            free(c->sites[k % c->cap]);
            c->sites[k % c->cap] = NULL;
        }
        c->next = seq + 1;
        if (c->next - c->first > c->cap)
            c->first = c->next - c->cap;
    } else if (seq < c->first) {
        free(st);
        return;
    }
    c->ring[seq % c->cap] = s;
    free(c->sites[seq % c->cap]);
    c->sites[seq % c->cap] = st;
}

static void take_state(struct live_client *c, json_t *d)
{
    json_t *p = json_object_get(d, "process");
    pthread_mutex_lock(&c->mu);
    c->pid = (int)num(p, "pid");
    snprintf(c->command, sizeof(c->command), "%s",
             json_string_value(json_object_get(p, "command")) ?: "");
    c->period_ns = num(d, "period_ns");
    c->sample_bytes = num(d, "sample_bytes");
    if (size_ring(c, num(d, "window_ns"), c->period_ns) == 0) {
        uint64_t first = num(d, "first_seq");
        json_t *samples = json_object_get(d, "samples");
        size_t n = json_array_size(samples);
        if (first < c->first || first > c->next) /* unrelated to what we have: start over */
            c->first = c->next = first;
        struct live_sites *last = n ? sites_of(json_object_get(d, "sites")) : NULL;
        if (last)
            user_of(last, d);
        for (size_t i = 0; i < n; i++)
            put(c, first + i, sample_of(json_array_get(samples, i)), i + 1 == n ? last : NULL);
    }
    c->peak_bytes = num(d, "peak_bytes");
    c->peak_time_ns = num(d, "peak_time_ns");
    c->ended = json_is_true(json_object_get(d, "ended"));
    pthread_mutex_unlock(&c->mu);
}

static void take_line(struct live_client *c, const char *line)
{
    json_error_t e;
    json_t *d = json_loads(line, 0, &e);
    if (!d)
        return;
    if (json_object_get(d, "memviz_live")) {
        take_state(c, d);
    } else if (json_object_get(d, "seq")) {
        struct live_sites *st = sites_of(json_object_get(d, "sites"));
        if (st)
            user_of(st, d);
        pthread_mutex_lock(&c->mu);
        if (!c->pid) /* the state came before the server knew the process */
            c->pid = (int)num(d, "pid");
        put(c, num(d, "seq"), sample_of(json_object_get(d, "sample")), st);
        c->peak_bytes = num(d, "peak_bytes");
        c->peak_time_ns = num(d, "peak_time_ns");
        c->ended = json_is_true(json_object_get(d, "ended"));
        pthread_mutex_unlock(&c->mu);
    }
    json_decref(d);
}

static int dial(struct live_client *c)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
    if (inet_pton(AF_INET, c->host, &sa.sin_addr) != 1)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends the request and reads the status and headers; 0 when 200. */
static int request(struct live_client *c, int fd, char *buf, size_t cap, size_t *got)
{
    char req[512], pid[32] = "";
    pthread_mutex_lock(&c->mu);
    if (c->want_pid)
        snprintf(pid, sizeof(pid), "?pid=%d", c->want_pid);
    pthread_mutex_unlock(&c->mu);
    int n = snprintf(req, sizeof(req), "GET /api/v1/stream%s HTTP/1.0\r\nHost: %s:%d\r\n%s%s%s\r\n",
                     pid, c->host, c->port, *c->token ? "Authorization: Bearer " : "", c->token,
                     *c->token ? "\r\n" : "");
    if (write(fd, req, (size_t)n) != n)
        return -1;
    *got = 0;
    while (*got + 1 < cap) {
        ssize_t r = read(fd, buf + *got, cap - 1 - *got);
        if (r <= 0)
            return -1;
        *got += (size_t)r;
        buf[*got] = 0;
        char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        int status = 0;
        sscanf(buf, "HTTP/%*s %d", &status);
        size_t head = (size_t)(end + 4 - buf);
        memmove(buf, end + 4, *got - head);
        *got -= head;
        if (status != 200) {
            char what[32];
            snprintf(what, sizeof(what), "%d", status);
            set_error(c, "the server answered %s (a token? --token-file)", what);
            return -2;
        }
        return 0;
    }
    return -1;
}

/* One connection: lines until it closes. */
static void session(struct live_client *c, int fd)
{
    size_t cap = 1 << 16, got = 0;
    char *buf = malloc(cap);
    if (!buf)
        return;
    int rc = request(c, fd, buf, cap, &got);
    if (rc == -1)
        set_error(c, "%s", "the server closed the connection");
    if (rc < 0) {
        free(buf);
        return;
    }
    pthread_mutex_lock(&c->mu);
    c->connected = 1;
    c->error[0] = 0;
    pthread_mutex_unlock(&c->mu);
    for (;;) {
        char *nl;
        while ((nl = memchr(buf, '\n', got))) {
            *nl = 0;
            take_line(c, buf);
            got -= (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, got);
        }
        if (got + 1 >= cap) {
            char *b = cap < LINE_MAX_BYTES ? realloc(buf, cap * 2) : NULL;
            if (!b)
                break;
            buf = b;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + got, cap - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    free(buf);
    pthread_mutex_lock(&c->mu);
    c->connected = 0;
    pthread_mutex_unlock(&c->mu);
}

static void *reader(void *arg)
{
    struct live_client *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        int stop = c->stop, ended = c->ended;
        pthread_mutex_unlock(&c->mu);
        if (stop)
            break;
        if (ended) { /* what it has stays for browsing; another process may be chosen */
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        int fd = dial(c);
        if (fd < 0) {
            set_error(c, "cannot connect: %s", strerror(errno));
        } else {
            pthread_mutex_lock(&c->mu);
            c->fd = fd;
            pthread_mutex_unlock(&c->mu);
            session(c, fd);
            pthread_mutex_lock(&c->mu);
            c->fd = -1;
            pthread_mutex_unlock(&c->mu);
            close(fd);
        }
        for (int i = 0; i < 20; i++) { /* again in a second, while the program runs */
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&c->mu);
            stop = c->stop;
            pthread_mutex_unlock(&c->mu);
            if (stop)
                break;
        }
    }
    return NULL;
}

int live_client_start(struct live_client *c)
{
    c->fd = -1;
    pthread_mutex_init(&c->mu, NULL);
    if (pthread_create(&c->thread, NULL, reader, c) != 0)
        return -1;
    c->started = 1;
    return 0;
}

void live_client_stop(struct live_client *c)
{
    if (c->started) {
        pthread_mutex_lock(&c->mu);
        c->stop = 1;
        if (c->fd >= 0) /* it may be blocked in read */
            shutdown(c->fd, SHUT_RDWR);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->thread, NULL);
    }
    for (size_t i = 0; c->sites && i < c->cap; i++)
        free(c->sites[i]);
    free(c->sites);
    free(c->ring);
    pthread_mutex_destroy(&c->mu);
}

const struct live_sites *live_client_sites_at(const struct live_client *c, uint64_t seq)
{
    for (uint64_t k = seq + 1; k-- > c->first;) {
        if (k >= c->next)
            continue;
        if (c->sites[k % c->cap])
            return c->sites[k % c->cap];
    }
    return NULL;
}

int live_client_snapshot(struct live_client *c, char *msg, size_t cap)
{
    int fd = dial(c);
    if (fd < 0) {
        snprintf(msg, cap, "snapshot: cannot connect: %s", strerror(errno));
        return -1;
    }
    char req[512];
    int n = snprintf(
        req, sizeof(req),
        "POST /api/v1/snapshot HTTP/1.0\r\nHost: %s:%d\r\nContent-Length: 0\r\n%s%s%s\r\n", c->host,
        c->port, *c->token ? "Authorization: Bearer " : "", c->token, *c->token ? "\r\n" : "");
    char buf[1024];
    size_t got = 0;
    ssize_t r = 0;
    if (write(fd, req, (size_t)n) == n)
        while (got + 1 < sizeof(buf) && (r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
            got += (size_t)r;
    close(fd);
    buf[got] = 0;
    char *body = strstr(buf, "\r\n\r\n");
    body = body ? body + 4 : buf;
    body[strcspn(body, "\n")] = 0;
    snprintf(msg, cap, "%s", *body ? body : "snapshot: no answer");
    return strstr(buf, " 200 ") ? 0 : -1;
}

void live_client_follow(struct live_client *c, int pid)
{
    pthread_mutex_lock(&c->mu);
    c->want_pid = pid;
    c->first = c->next = 0;
    c->ended = 0;
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_unlock(&c->mu);
}

int live_client_processes(struct live_client *c, struct live_proc *out)
{
    int fd = dial(c);
    if (fd < 0)
        return -1;
    char req[256];
    int n = snprintf(
        req, sizeof(req), "GET /api/v1/processes HTTP/1.0\r\nHost: %s:%d\r\n%s%s%s\r\n", c->host,
        c->port, *c->token ? "Authorization: Bearer " : "", c->token, *c->token ? "\r\n" : "");
    size_t cap = 1 << 16, got = 0;
    char *buf = malloc(cap);
    ssize_t r = 0;
    if (buf && write(fd, req, (size_t)n) == n)
        while (got + 1 < cap && (r = read(fd, buf + got, cap - 1 - got)) > 0)
            got += (size_t)r;
    close(fd);
    if (!buf)
        return -1;
    buf[got] = 0;
    char *body = strstr(buf, "\r\n\r\n");
    json_error_t e;
    json_t *d = body ? json_loads(body + 4, 0, &e) : NULL;
    json_t *procs = json_object_get(d, "processes");
    int k = 0;
    for (size_t i = 0; i < json_array_size(procs) && k < LIVE_PROCS; i++) {
        json_t *p = json_array_get(procs, i);
        const char *cmd = json_string_value(json_object_get(p, "command"));
        const char *base = cmd ? strrchr(cmd, '/') : NULL;
        out[k].pid = (int)num(p, "pid");
        out[k].ended = json_is_true(json_object_get(p, "ended"));
        snprintf(out[k].name, sizeof(out[k].name), "%.*s",
                 (int)strcspn(base  ? base + 1
                              : cmd ? cmd
                                    : "?",
                              " "),
                 base  ? base + 1
                 : cmd ? cmd
                       : "?");
        k++;
    }
    json_decref(d);
    free(buf);
    return k;
}
