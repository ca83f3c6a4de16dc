/*
 * poll.c - instruments memviz reads by calling the program back
 * (include/memviz.h): values read through a callback, and tables whose
 * callback fills their statistics (elements, buckets, empty buckets,
 * longest chain), every period.
 *
 * The callbacks run on a thread of their own, made when the first one is
 * registered: a callback that blocks or takes long holds that thread, not
 * memviz's writer (which would hold the program's events) nor any program
 * thread. What they allocate is traced like any thread's allocations.
 * Each reading goes into the instruments' values (user.c), which the
 * writer writes as it writes the others'. The poller stops at exit before
 * the program's objects are destroyed (stop_poller). A child made by fork
 * has no poller: its polled values keep the parent's last reading. On
 * purpose: a callback takes the program's locks, and in the child a lock
 * held at the fork by another thread of the parent is held for ever; a
 * poller stuck in it would hang the child's exit, which joins the poller.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "trace/format.h"

#define MAX_POLLED 256
#define PERIOD_NS (100 * 1000 * 1000L)

struct polled {
    int table;
    int64_t (*read)(void *ctx);
    void (*fill)(void *ctx, struct memviz_table_stats *s);
    void *ctx;
    int64_t *values[4]; /* the instruments' values: one, or a table's four */
};

static struct polled list[MAX_POLLED];
static _Atomic unsigned npolled;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t poller;
static int started;
static _Atomic int stopping;

static void poll_once(void)
{
    unsigned n = atomic_load(&npolled);
    for (unsigned i = 0; i < n; i++) {
        const struct polled *p = &list[i];
        if (!p->table) {
            mvz_user_store(p->values[0], p->read(p->ctx));
            continue;
        }
        struct memviz_table_stats s = {0};
        p->fill(p->ctx, &s);
        mvz_user_store(p->values[0], (int64_t)s.elements);
        mvz_user_store(p->values[1], (int64_t)s.buckets);
        mvz_user_store(p->values[2], (int64_t)s.empty_buckets);
        mvz_user_store(p->values[3], (int64_t)s.longest_chain);
    }
}

/* Every period (a live client's, when it changed it), in tenths, so that
 * a stop is seen soon. */
static void *poll_loop(void *arg)
{
    (void)arg;
    while (mvz_recording() && !atomic_load(&stopping)) {
        poll_once();
        uint64_t period = mvz_runpage_period_ns();
        long tenth = (long)((period ? period : PERIOD_NS) / 10);
        for (int i = 0; i < 10 && !atomic_load(&stopping); i++) {
            struct timespec ts = {tenth / 1000000000L, tenth % 1000000000L};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

/* At exit, before the program's objects are destroyed: the handler is
 * registered after the tables it reads were made, so it runs before their
 * destructors; the poller ends its callback and stops. */
static void stop_poller(void)
{
    atomic_store(&stopping, 1);
    if (started && getpid() == mvz_agent.pid)
        pthread_join(poller, NULL);
    started = 0;
}

/* Adds p to the list and starts the poller with the first; -1 when full. */
static int add(const struct polled *p)
{
    int rc = -1;
    pthread_mutex_lock(&lock);
    unsigned n = atomic_load(&npolled);
    if (n < MAX_POLLED) {
        list[n] = *p;
        atomic_store(&npolled, n + 1);
        rc = 0;
        if (!started && pthread_create(&poller, NULL, poll_loop, NULL) == 0) {
            started = 1;
            atexit(stop_poller);
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

MVZ_EXPORT void memviz_value_poll(const char *name, int64_t (*read)(void *ctx), void *ctx)
{
    struct polled p = {.read = read, .ctx = ctx};
    if (read && name && (p.values[0] = mvz_user_value_slot(name, MVZ_USER_VALUE_INT)))
        add(&p);
}

MVZ_EXPORT void memviz_table(const char *name,
                             void (*fill)(void *ctx, struct memviz_table_stats *s), void *ctx)
{
    static const char *const fields[4] = {"elements", "buckets", "empty_buckets", "longest_chain"};
    struct polled p = {.table = 1, .fill = fill, .ctx = ctx};
    if (!fill || !name)
        return;
    for (int k = 0; k < 4; k++) {
        char full[MVZ_USER_NAME_MAX];
        snprintf(full, sizeof(full), "%s.%s", name, fields[k]);
        if (!(p.values[k] = mvz_user_value_slot(full, MVZ_USER_VALUE_INT)))
            return;
    }
    add(&p);
}
