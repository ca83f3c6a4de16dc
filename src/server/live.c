/*
 * live.c - the live state of a running program (live.h).
 *
 * One follower thread owns the profile being built from the trace (and
 * its symbols); it alone touches them. What readers see is what it
 * publishes under `mu`: the ring of samples, the top sites with their
 * frames already rendered as JSON, the process's identity. So a reader
 * never waits for the replay, and the replay never waits for a reader.
 *
 * Samples lie on a grid of the program's time (k * period since it
 * started, or since the last sample before the period was changed): when
 * events jump ahead (the program was idle, or the follower
 * catches up on a backlog), the grid points in between get the values of
 * the moment before the jump, which is what the heap was then.
 */
#include "server/live.h"
#include "server/live_priv.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/profile.h"
#include "analysis/symbols.h"
#include "export/export.h"
#include "trace/format.h"
#include "util/fmt.h"
#include "util/json.h"

#define POLL_NS (20u * 1000 * 1000)

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- rendering a site's frames, once per stack ---- */
static const char *frames_of(struct mvz_live *l, uint32_t stack)
{
    if (stack >= l->frames_cap) {
        size_t cap = l->frames_cap ? l->frames_cap : 1024;
        while (cap <= stack)
            cap *= 2;
        char **v = realloc(l->frames, cap * sizeof(*v));
        if (!v)
            return "[]";
        memset(v + l->frames_cap, 0, (cap - l->frames_cap) * sizeof(*v));
        l->frames = v;
        l->frames_cap = cap;
    }
    if (l->frames[stack])
        return l->frames[stack];
    if (!l->sym && !(l->sym = mvz_symbols_new(&l->p.trace)))
        return "[]";
    size_t n = mvz_symbols_stack(l->sym, stack, l->fbuf, FRAMES_MAX), len = 0;
    char *buf = NULL;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return "[]";
    struct mvz_json j;
    mvz_json_init(&j, f);
    mvz_json_begin_array(&j);
    for (size_t i = 0; i < n; i++) {
        mvz_json_begin_object(&j);
        mvz_json_put_string(&j, "function", l->fbuf[i].function);
        mvz_json_put_string(&j, "file", l->fbuf[i].file);
        mvz_json_put_uint(&j, "line", l->fbuf[i].line);
        mvz_json_put_string(&j, "module",
                            l->fbuf[i].module ? mvz_base_name(l->fbuf[i].module) : NULL);
        mvz_json_end_object(&j);
    }
    mvz_json_end_array(&j);
    if (fclose(f) != 0) {
        free(buf);
        return "[]";
    }
    if (len && buf[len - 1] == '\n') /* a document ends with a newline: not this part */
        buf[len - 1] = 0;
    l->frames[stack] = buf;
    return buf;
}

/* ---- publishing ---- */
static int by_live(const void *a, const void *b)
{
    const struct top_site *p = a, *q = b;
    if (p->live_bytes != q->live_bytes)
        return p->live_bytes > q->live_bytes ? -1 : 1;
    return p->stack < q->stack ? -1 : p->stack > q->stack;
}

/* The top sites by live bytes, into l->top (under mu). */
static void pick_top(struct mvz_live *l)
{
    const struct mvz_profile *p = &l->p;
    size_t n = 0;
    for (size_t i = 0; i < p->sites_cap; i++) {
        const struct mvz_site *s = &p->sites[i];
        if (!s->live_bytes && !s->live_blocks)
            continue;
        struct top_site t = {(uint32_t)i,    s->live_bytes,      s->live_blocks,
                             s->allocations, s->allocated_bytes, NULL};
        if (n < l->o.top) {
            l->top[n++] = t;
            continue;
        }
        size_t least = 0; /* replace the smallest kept when this one is larger */
        for (size_t k = 1; k < n; k++)
            if (by_live(&l->top[k], &l->top[least]) > 0)
                least = k;
        if (by_live(&t, &l->top[least]) < 0)
            l->top[least] = t;
    }
    qsort(l->top, n, sizeof(*l->top), by_live);
    for (size_t k = 0; k < n; k++)
        l->top[k].frames = frames_of(l, l->top[k].stack);
    l->ntop = n;
}

/* Under mu: the instruments, log and phases of the trace so far. */
static void publish_user(struct mvz_live *l)
{
    const struct mvz_user *u = &l->p.trace.user;
    if (u->nins > l->ins_cap) {
        struct pub_instrument *v = realloc(l->ins, u->nins * sizeof(*v));
        if (!v)
            return;
        l->ins = v;
        l->ins_cap = u->nins;
    }
    l->nins = 0;
    for (size_t i = 0; i < u->nins; i++) {
        const struct mvz_tags *tg = &l->p.tags;
        if (u->ins[i].kind == MVZ_USER_TAG_KIND && u->ins[i].name && i < tg->nids &&
            tg->by_id[i].marked) {
            struct pub_instrument *o = &l->ins[l->nins++];
            *o = (struct pub_instrument){.kind = MVZ_USER_TAG_KIND,
                                         .value = (int64_t)tg->by_id[i].live_bytes,
                                         .count = tg->by_id[i].live_blocks,
                                         .ns = tg->by_id[i].max_bytes,
                                         .marked = tg->by_id[i].marked};
            snprintf(o->name, sizeof(o->name), "%s", u->ins[i].name);
            continue;
        }
        if (u->ins[i].name && u->ins[i].kind && u->ins[i].have) {
            struct pub_instrument *o = &l->ins[l->nins++];
            o->kind = u->ins[i].kind;
            snprintf(o->name, sizeof(o->name), "%s", u->ins[i].name);
            o->value = u->ins[i].value;
            snprintf(o->text, sizeof(o->text), "%s", u->ins[i].text ? u->ins[i].text : "");
            mvz_user_sw_total(&u->ins[i], &o->count, &o->ns);
        }
    }
    size_t from = u->nlogs > LOG_KEPT ? u->nlogs - LOG_KEPT : 0;
    l->nlog = 0;
    for (size_t i = from; i < u->nlogs; i++) {
        l->log[l->nlog].ts = u->logs[i].ts;
        snprintf(l->log[l->nlog++].text, sizeof(l->log[0].text), "%s", u->logs[i].text);
    }
    if (u->nphases > l->phases_cap) {
        struct pub_text *v = realloc(l->phases, u->nphases * sizeof(*v));
        if (!v)
            return;
        l->phases = v;
        l->phases_cap = u->nphases;
    }
    for (l->nphases = 0; l->nphases < u->nphases; l->nphases++) {
        l->phases[l->nphases].ts = u->phases[l->nphases].ts;
        snprintf(l->phases[l->nphases].text, sizeof(l->phases[0].text), "%s",
                 u->phases[l->nphases].text);
    }
}

/* Under mu: the snapshots begun, and the threads by live bytes. */
static void publish_threads_snaps(struct mvz_live *l)
{
    const struct mvz_user *u = &l->p.trace.user;
    size_t from = u->nsnapshots > LOG_KEPT ? u->nsnapshots - LOG_KEPT : 0;
    l->nsnaps = 0;
    for (size_t i = from; i < u->nsnapshots; i++) {
        l->snaps[l->nsnaps].ts = u->snapshots[i].ts;
        snprintf(l->snaps[l->nsnaps++].text, sizeof(l->snaps[0].text), "%s", u->snapshots[i].text);
    }
    l->nthreads = 0;
    for (size_t i = 0; i < l->p.nthreads; i++) {
        const struct mvz_profile_thread *t = &l->p.threads[i];
        struct pub_thread th = {t->tid, "", t->live_bytes, t->allocations};
        const char *name = mvz_trace_thread_name(&l->p.trace, t->tid);
        snprintf(th.name, sizeof(th.name), "%s", name ? name : "");
        size_t k;
        if (l->nthreads < THREADS_KEPT) {
            k = l->nthreads++;
        } else if (l->threads[THREADS_KEPT - 1].live_bytes < th.live_bytes) {
            k = THREADS_KEPT - 1; /* the least kept makes room */
        } else {
            continue;
        }
        l->threads[k] = th; /* then up into place: by live bytes */
        for (; k > 0 && l->threads[k - 1].live_bytes < l->threads[k].live_bytes; k--) {
            struct pub_thread tmp = l->threads[k - 1];
            l->threads[k - 1] = l->threads[k];
            l->threads[k] = tmp;
        }
    }
}

static void publish_identity(struct mvz_live *l)
{
    const struct mvz_trace *t = &l->p.trace;
    if (l->pid || !t->have_process)
        return;
    l->pid = t->pid;
    l->start_realtime_ns = t->start_realtime_ns;
    size_t len = 0;
    for (size_t i = 0; i < t->argc && len + 2 < sizeof(l->command); i++)
        len += (size_t)snprintf(l->command + len, sizeof(l->command) - len, "%s%s", i ? " " : "",
                                t->argv[i]);
}

/* Under mu: the period a client asked for, from the next sample on. The
 * ring is made for the window at the new period; the latest samples move
 * into it. */
static void apply_period(struct mvz_live *l)
{
    uint64_t period = l->period_want;
    l->period_want = 0;
    size_t cap = (size_t)(l->o.window_ns / period) + 2;
    struct sample *ring = calloc(cap, sizeof(*ring));
    if (!ring)
        return;
    uint64_t keep = l->seq < cap ? l->seq : cap;
    keep = keep < l->cap ? keep : l->cap;
    for (uint64_t s = l->seq - keep; s < l->seq; s++)
        ring[s % cap] = l->ring[s % l->cap];
    free(l->ring);
    l->ring = ring;
    l->cap = cap;
    l->oldest = l->seq - keep;
    if (l->seq) /* the next sample a new period after the last */
        l->next_t = l->ring[(l->seq - 1) % cap].t_ns + period;
    l->o.period_ns = period;
}

/* Takes the grid's samples up to time t (program time, ns). */
static void sample_to(struct mvz_live *l, uint64_t t)
{
    if (t < l->next_t)
        return;
    pthread_mutex_lock(&l->mu);
    if (l->period_want)
        apply_period(l);
    uint64_t period = l->o.period_ns, window = l->o.window_ns;
    if (t < l->next_t) {
        pthread_mutex_unlock(&l->mu);
        return;
    }
    if (t - l->next_t > window) /* only the last window's worth matters */
        l->next_t += (t - l->next_t - window) / period * period;
    publish_identity(l);
    while (l->next_t <= t) {
        struct sample s = l->now;
        s.t_ns = l->next_t;
        l->ring[l->seq % l->cap] = s;
        l->seq++;
        l->next_t += period;
    }
    l->peak_bytes = l->p.sum.peak_bytes;
    l->peak_time_ns = l->p.sum.peak_time_ns;
    l->sample_bytes = l->p.trace.sample_bytes;
    l->sample_now = l->p.trace.sampling.now;
    pick_top(l);
    publish_user(l);
    publish_threads_snaps(l);
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

/* ---- pprof, built by the follower when asked ---- */
static void make_pprof(struct mvz_live *l)
{
    struct mvz_profile view = l->p; /* a shallow copy: its sites say "in use" = live */
    struct mvz_site *sites = malloc((l->p.sites_cap ? l->p.sites_cap : 1) * sizeof(*sites));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = sites ? open_memstream(&buf, &len) : NULL;
    if (f && (l->sym || (l->sym = mvz_symbols_new(&l->p.trace)))) {
        memcpy(sites, l->p.sites, l->p.sites_cap * sizeof(*sites));
        for (size_t i = 0; i < l->p.sites_cap; i++) {
            sites[i].at_peak_bytes = sites[i].live_bytes;
            sites[i].at_peak_blocks = sites[i].live_blocks;
        }
        view.sites = sites;
        view.sum.duration_ns = l->now.t_ns;
        struct mvz_export x = {.trace_path = l->o.trace_path,
                               .p = &view,
                               .sym = l->sym,
                               .cost = MVZ_COST_PEAK,
                               .to_ns = UINT64_MAX,
                               .out = f};
        if (mvz_export_pprof(&x) < 0) {
            free(buf);
            buf = NULL;
        }
    }
    if (f && fclose(f) != 0) {
        free(buf);
        buf = NULL;
    }
    free(sites);
    pthread_mutex_lock(&l->mu);
    free(l->pprof);
    l->pprof = buf;
    l->pprof_len = buf ? len : 0;
    l->pprof_want = 0;
    l->pprof_gen++;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static void check_requests(struct mvz_live *l)
{
    pthread_mutex_lock(&l->mu);
    int want = l->pprof_want;
    pthread_mutex_unlock(&l->mu);
    if (want)
        make_pprof(l);
}

/* ---- the follower ---- */
static void observe(void *ctx, const struct mvz_profile *p, const struct mvz_event *e,
                    uint32_t stack, uint64_t size)
{
    struct mvz_live *l = ctx;
    (void)stack;
    sample_to(l, e->ts > l->now.t_ns ? e->ts - 1 : 0); /* the grid before this event */
    if (e->ts > l->now.t_ns)
        l->now.t_ns = e->ts;
    (void)size;
    /* live blocks: allocations less releases, weighted in a sampled trace */
    l->now.heap_blocks = p->sum.allocations - p->sum.frees;
    l->now.heap_bytes = p->sum.live_bytes;
    l->now.allocations = p->sum.allocations;
    l->now.frees = p->sum.frees;
    l->now.allocated_bytes = p->sum.allocated_bytes;
    if (++l->since_check >= 4096) {
        l->since_check = 0;
        check_requests(l);
    }
}

static void observe_rss(void *ctx, uint64_t ts, uint64_t rss)
{
    struct mvz_live *l = ctx;
    (void)ts;
    l->now.rss = rss;
}

/* Caught up with the trace: a sample at the present, requests, a pause. */
static int wait_more(void *ctx, struct mvz_profile *p)
{
    struct mvz_live *l = ctx;
    if (p->trace.have_end)
        return 0;
    pthread_mutex_lock(&l->mu);
    int done = l->program_done;
    pthread_mutex_unlock(&l->mu);
    if (done)
        return 0; /* the program ended without an END record (killed) */
    uint64_t start = p->trace.start_realtime_ns, w = wall_ns();
    if (start && w > start)
        sample_to(l, w - start);
    check_requests(l);
    struct timespec ts = {0, POLL_NS};
    nanosleep(&ts, NULL);
    return 1;
}

/* The trace exists once the agent started: until then, wait. */
static int wait_for_trace(struct mvz_live *l)
{
    for (;;) {
        FILE *f = fopen(l->o.trace_path, "rb");
        char h[MVZ_FILE_HEADER_LEN];
        int ok = f && fread(h, 1, sizeof(h), f) == sizeof(h);
        if (f)
            fclose(f);
        if (ok)
            return 0;
        pthread_mutex_lock(&l->mu);
        int done = l->program_done;
        pthread_mutex_unlock(&l->mu);
        if (done)
            return -1;
        struct timespec ts = {0, POLL_NS};
        nanosleep(&ts, NULL);
    }
}

static void *follow(void *arg)
{
    struct mvz_live *l = arg;
    char err[512];
    if (wait_for_trace(l) == 0) {
        struct mvz_profile_options opt = {.to_ns = UINT64_MAX,
                                          .observe = observe,
                                          .observe_rss = observe_rss,
                                          .ctx = l,
                                          .wait_more = wait_more};
        if (mvz_profile_load_window(&l->p, l->o.trace_path, &opt, err, sizeof(err)) == 0) {
            /* the last sample says the run ended: streams end with it */
            pthread_mutex_lock(&l->mu);
            l->ended = 1;
            pthread_mutex_unlock(&l->mu);
            uint64_t end = l->p.sum.duration_ns > l->now.t_ns ? l->p.sum.duration_ns : l->now.t_ns;
            sample_to(l, end > l->next_t ? end : l->next_t);
        }
    }
    pthread_mutex_lock(&l->mu);
    l->ended = 1;
    if (l->pprof_want) { /* no more profile to answer with */
        l->pprof_want = 0;
        l->pprof_gen++;
    }
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

struct mvz_live *mvz_live_start(const struct mvz_live_options *o)
{
    struct mvz_live *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->o = *o;
    l->cap = (size_t)(o->window_ns / o->period_ns) + 2;
    l->ring = calloc(l->cap, sizeof(*l->ring));
    l->top = calloc(o->top ? o->top : 1, sizeof(*l->top));
    l->fbuf = malloc(FRAMES_MAX * sizeof(*l->fbuf));
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    if (!l->ring || !l->top || !l->fbuf || pthread_create(&l->thread, NULL, follow, l) != 0) {
        mvz_live_free(l);
        return NULL;
    }
    l->started = 1;
    return l;
}

void mvz_live_set_period(struct mvz_live *l, uint64_t period_ns)
{
    pthread_mutex_lock(&l->mu);
    l->period_want = period_ns;
    pthread_mutex_unlock(&l->mu);
}

void mvz_live_program_done(struct mvz_live *l)
{
    pthread_mutex_lock(&l->mu);
    l->program_done = 1;
    pthread_mutex_unlock(&l->mu);
}

void mvz_live_free(struct mvz_live *l)
{
    if (!l)
        return;
    if (l->started) {
        mvz_live_program_done(l);
        pthread_join(l->thread, NULL);
        mvz_profile_free(&l->p);
    }
    mvz_symbols_free(l->sym);
    for (size_t i = 0; i < l->frames_cap; i++)
        free(l->frames[i]);
    free(l->frames);
    free(l->fbuf);
    free(l->ring);
    free(l->top);
    free(l->pprof);
    free(l->ins);
    free(l->phases);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}

/* ---- readers ---- */
uint64_t mvz_live_samples(struct mvz_live *l)
{
    pthread_mutex_lock(&l->mu);
    uint64_t n = l->seq;
    pthread_mutex_unlock(&l->mu);
    return n;
}

int mvz_live_ended(struct mvz_live *l)
{
    pthread_mutex_lock(&l->mu);
    int e = l->ended;
    pthread_mutex_unlock(&l->mu);
    return e;
}

int mvz_live_wait_sample(struct mvz_live *l, uint64_t seq, int timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&l->mu);
    while (l->seq <= seq && !l->ended)
        if (pthread_cond_timedwait(&l->cv, &l->mu, &until) != 0)
            break;
    int ok = l->seq > seq;
    pthread_mutex_unlock(&l->mu);
    return ok;
}

int mvz_live_pprof(struct mvz_live *l, char **out, size_t *len, int timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000 + 1;
    static pthread_mutex_t after_end = PTHREAD_MUTEX_INITIALIZER;
    if (mvz_live_ended(l) && l->p.trace.have_process) { /* no follower: make it here */
        pthread_mutex_lock(&after_end);
        make_pprof(l);
        pthread_mutex_unlock(&after_end);
    }
    pthread_mutex_lock(&l->mu);
    uint64_t gen = l->pprof_gen;
    if (!l->ended) {
        l->pprof_want = 1;
        while (l->pprof_gen == gen && !l->ended)
            if (pthread_cond_timedwait(&l->cv, &l->mu, &until) != 0)
                break;
    }
    int rc = -1;
    if (l->pprof && (*out = malloc(l->pprof_len))) {
        memcpy(*out, l->pprof, l->pprof_len);
        *len = l->pprof_len;
        rc = 0;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}
