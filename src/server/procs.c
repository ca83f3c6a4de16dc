/*
 * procs.c - the live state of every process of a run (procs.h): the
 * program, its children and the programs they exec, each followed by a
 * live state of its own (live.h) as soon as memviz run's page lists its
 * trace. A manager thread watches the page every period.
 */
#include "server/procs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "server/live_priv.h"
#include "trace/runpage.h"
#include "util/fmt.h"
#include "util/json.h"

#define MAX_PROCS 256

struct proc {
    int pid;
    int image; /* its entry in the page; -1 for the first without a page */
    int how;   /* enum mvz_child_how: 0 the first, fork, exec, ... */
    struct mvz_live *live;
};

struct mvz_live_procs {
    struct mvz_live_options o;
    struct mvz_run_page *page;
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    struct proc v[MAX_PROCS];
    size_t n;
    int done, skipped;
};

/* Whether two paths name one file (the first trace's path may be
 * relative, the page's is absolute). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return !strcmp(a, b) || (stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
                             sa.st_ino == sb.st_ino);
}

static int followed(struct mvz_live_procs *ps, int image)
{
    for (size_t i = 0; i < ps->n; i++)
        if (ps->v[i].image == image)
            return 1;
    return 0;
}

/* Under mu: follows image i of the page when it is new. */
static void adopt(struct mvz_live_procs *ps, int i)
{
    const struct mvz_run_image *im = &ps->page->img[i];
    uint32_t state = __atomic_load_n(&im->state, __ATOMIC_ACQUIRE);
    if (state == MVZ_RUN_FREE || !im->trace[0] || followed(ps, i))
        return;
    if (ps->v[0].image == -1 && same_file(im->trace, ps->o.trace_path)) {
        ps->v[0].image = i; /* the first process, followed from the start */
        ps->v[0].pid = im->pid;
        return;
    }
    if (ps->n == MAX_PROCS) {
        ps->skipped++;
        return;
    }
    struct mvz_live_options o = ps->o;
    o.trace_path = im->trace;
    struct mvz_live *l = mvz_live_start(&o);
    if (l)
        ps->v[ps->n++] = (struct proc){im->pid, i, (int)im->how, l};
}

static void *watch(void *arg)
{
    struct mvz_live_procs *ps = arg;
    for (;;) {
        pthread_mutex_lock(&ps->mu);
        uint32_t claimed = __atomic_load_n(&ps->page->claimed, __ATOMIC_ACQUIRE);
        for (uint32_t i = 0; i < claimed && i < ps->page->nimages; i++)
            adopt(ps, (int)i);
        int done = ps->done;
        pthread_mutex_unlock(&ps->mu);
        if (done)
            return NULL;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

struct mvz_live_procs *mvz_live_procs_start(const struct mvz_live_options *o,
                                            struct mvz_run_page *page, int first_pid)
{
    struct mvz_live_procs *ps = calloc(1, sizeof(*ps));
    if (!ps)
        return NULL;
    ps->o = *o;
    ps->page = page;
    pthread_mutex_init(&ps->mu, NULL);
    /* the first process from the start, whether the page lists it yet or not */
    struct mvz_live *l = mvz_live_start(o);
    if (!l) {
        free(ps);
        return NULL;
    }
    ps->v[ps->n++] = (struct proc){first_pid, -1, 0, l};
    if (!page)
        return ps;
    if (pthread_create(&ps->thread, NULL, watch, ps) != 0)
        return ps; /* the first process alone */
    ps->started = 1;
    return ps;
}

void mvz_live_procs_set_period(struct mvz_live_procs *ps, uint64_t period_ns)
{
    pthread_mutex_lock(&ps->mu);
    ps->o.period_ns = period_ns; /* processes that start from now on */
    for (size_t i = 0; i < ps->n; i++)
        mvz_live_set_period(ps->v[i].live, period_ns);
    if (ps->page) /* the agents read the instruments as often */
        __atomic_store_n(&ps->page->period_ns, period_ns, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&ps->mu);
}

int mvz_live_procs_set_sampling(struct mvz_live_procs *ps, uint64_t rate)
{
    if (!ps->page)
        return -1;
    pthread_mutex_lock(&ps->mu); /* one request at a time: the rate, then its generation */
    __atomic_store_n(&ps->page->sample_req, rate, __ATOMIC_RELAXED);
    __atomic_fetch_add(&ps->page->sample_gen, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ps->mu);
    return 0;
}

void mvz_live_procs_done(struct mvz_live_procs *ps)
{
    pthread_mutex_lock(&ps->mu);
    ps->done = 1;
    pthread_mutex_unlock(&ps->mu);
    if (ps->started) {
        pthread_join(ps->thread, NULL);
        ps->started = 0;
        pthread_mutex_lock(&ps->mu); /* the last ones the page lists */
        uint32_t claimed = __atomic_load_n(&ps->page->claimed, __ATOMIC_ACQUIRE);
        for (uint32_t i = 0; i < claimed && i < ps->page->nimages; i++)
            adopt(ps, (int)i);
        pthread_mutex_unlock(&ps->mu);
    }
    for (size_t i = 0; i < ps->n; i++)
        mvz_live_program_done(ps->v[i].live);
}

int mvz_live_procs_ended(struct mvz_live_procs *ps)
{
    pthread_mutex_lock(&ps->mu);
    int ended = ps->done;
    for (size_t i = 0; i < ps->n && ended; i++)
        ended = mvz_live_ended(ps->v[i].live);
    pthread_mutex_unlock(&ps->mu);
    return ended;
}

void mvz_live_procs_free(struct mvz_live_procs *ps)
{
    if (!ps)
        return;
    if (ps->started)
        mvz_live_procs_done(ps);
    for (size_t i = 0; i < ps->n; i++)
        mvz_live_free(ps->v[i].live);
    pthread_mutex_destroy(&ps->mu);
    free(ps);
}

struct mvz_live *mvz_live_procs_get(struct mvz_live_procs *ps, int pid)
{
    struct mvz_live *l = NULL;
    pthread_mutex_lock(&ps->mu);
    for (size_t i = 0; i < ps->n; i++) /* the latest image of pid: after an exec, the program */
        if (!pid ? !l : ps->v[i].pid == pid)
            l = ps->v[i].live;
    pthread_mutex_unlock(&ps->mu);
    return l;
}

size_t mvz_live_procs_list(struct mvz_live_procs *ps, struct mvz_live **out, size_t max)
{
    pthread_mutex_lock(&ps->mu);
    size_t n = ps->n < max ? ps->n : max;
    for (size_t i = 0; i < n; i++)
        out[i] = ps->v[i].live;
    pthread_mutex_unlock(&ps->mu);
    return n;
}

int mvz_live_procs_json(struct mvz_live_procs *ps, char **out, size_t *len)
{
    FILE *f = open_memstream(out, len);
    if (!f)
        return -1;
    struct mvz_json j;
    mvz_json_init(&j, f);
    mvz_json_begin_object(&j);
    mvz_json_put_uint(&j, "memviz_live_processes", 1);
    mvz_json_key(&j, "processes");
    mvz_json_begin_array(&j);
    pthread_mutex_lock(&ps->mu);
    for (size_t i = 0; i < ps->n; i++) {
        struct mvz_live *l = ps->v[i].live;
        pthread_mutex_lock(&l->mu);
        const struct sample *s = l->seq ? &l->ring[(l->seq - 1) % l->cap] : NULL;
        mvz_json_begin_object(&j);
        mvz_json_put_uint(&j, "pid", (uint64_t)(l->pid ? l->pid : ps->v[i].pid));
        mvz_json_put_string(&j, "how",
                            ps->v[i].how == 0   ? "first"
                            : ps->v[i].how == 2 ? "exec"
                                                : "fork");
        mvz_json_put_string(&j, "command", l->command);
        mvz_json_put_string(&j, "trace", l->o.trace_path);
        mvz_json_key(&j, "ended");
        mvz_json_bool(&j, l->ended);
        mvz_json_put_uint(&j, "heap_bytes", s ? s->heap_bytes : 0);
        mvz_json_put_uint(&j, "heap_blocks", s ? s->heap_blocks : 0);
        mvz_json_end_object(&j);
        pthread_mutex_unlock(&l->mu);
    }
    int skipped = ps->skipped;
    pthread_mutex_unlock(&ps->mu);
    mvz_json_end_array(&j);
    mvz_json_put_uint(&j, "not_followed", (uint64_t)skipped);
    mvz_json_end_object(&j);
    return fclose(f) == 0 ? 0 : -1;
}
