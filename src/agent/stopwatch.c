/*
 * stopwatch.c - include/memviz.h's stopwatches: the time a program spends
 * in sections it marks with memviz_stopwatch_start and _stop (which need
 * not match function boundaries), counted per thread and in all.
 *
 * Each thread keeps its own block: when each stopwatch started, and the
 * ticks and sections so far. Only the thread writes its block (a start is
 * a cycle counter read and a store, a stop the same and two stores), so an
 * update takes no lock and touches no line another thread writes. The
 * writer thread reads every block once a period and writes what changed
 * (USER STOPWATCH records, docs/FORMAT.md), converting ticks to ns.
 * A block of a thread that has ended is written once more, then reused.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "trace/format.h"

#define MAX_SW 64

struct sw_thread {
    uint32_t tid;
    _Atomic int dead;
    uint64_t start[MAX_SW]; /* 0: not running */
    _Atomic uint64_t ticks[MAX_SW], count[MAX_SW];
    uint64_t written_ticks[MAX_SW], written_count[MAX_SW]; /* the writer's */
    struct sw_thread *next;
};

struct sw {
    uint32_t id; /* its instrument's id: the stopwatch's name is that DEF's */
    uint32_t slot;
};

static struct sw_thread *threads, *free_blocks; /* under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static __thread struct sw_thread *mine __attribute__((tls_model("initial-exec")));
static struct sw table[MAX_SW];
static _Atomic uint32_t nsw;
static struct sw nowhere = {0, MAX_SW};

static uint64_t ticks_now(void)
{
#if defined(__x86_64__)
    if (mvz_tsc_ok)
        return __builtin_ia32_rdtsc();
#endif
    return mvz_now_ns();
}

static void thread_gone(void *arg)
{
    struct sw_thread *t = arg;
    if (mine == t)
        mine = NULL;
    atomic_store(&t->dead, 1);
}

static void make_key(void)
{
    pthread_key_create(&key, thread_gone);
}

static struct sw_thread *my_block(void)
{
    if (mine)
        return mine;
    mvz_tls.internal++;
    pthread_once(&key_once, make_key);
    pthread_mutex_lock(&lock);
    struct sw_thread *t = free_blocks;
    if (t)
        free_blocks = t->next;
    else
        t = mvz_map_zeroed(sizeof(*t));
    if (t) {
        memset(t, 0, sizeof(*t));
        t->tid = (uint32_t)syscall(SYS_gettid);
        t->next = threads;
        threads = t;
    }
    pthread_mutex_unlock(&lock);
    if (t) {
        pthread_setspecific(key, t);
        mine = t;
    }
    mvz_tls.internal--;
    return t;
}

MVZ_EXPORT memviz_stopwatch *memviz_stopwatch_new(const char *name)
{
    uint32_t id;
    if (!name || mvz_user_define(name, MVZ_USER_STOPWATCH, &id) < 0)
        return (memviz_stopwatch *)&nowhere;
    pthread_mutex_lock(&lock);
    struct sw *sw = &nowhere;
    uint32_t n = atomic_load(&nsw);
    for (uint32_t i = 0; i < n && sw == &nowhere; i++)
        if (table[i].id == id)
            sw = &table[i];
    if (sw == &nowhere && n < MAX_SW) {
        sw = &table[n];
        sw->id = id;
        sw->slot = n;
        atomic_store(&nsw, n + 1);
    }
    pthread_mutex_unlock(&lock);
    return (memviz_stopwatch *)sw;
}

MVZ_EXPORT void memviz_stopwatch_start(memviz_stopwatch *h)
{
    const struct sw *sw = (const struct sw *)h;
    struct sw_thread *t;
    if (!sw || sw->slot >= MAX_SW || !(t = my_block()) || t->start[sw->slot])
        return;
    t->start[sw->slot] = ticks_now();
}

MVZ_EXPORT void memviz_stopwatch_stop(memviz_stopwatch *h)
{
    const struct sw *sw = (const struct sw *)h;
    struct sw_thread *t = mine;
    if (!sw || sw->slot >= MAX_SW || !t || !t->start[sw->slot])
        return;
    uint64_t d = ticks_now() - t->start[sw->slot];
    t->start[sw->slot] = 0;
    atomic_store_explicit(&t->ticks[sw->slot],
                          atomic_load_explicit(&t->ticks[sw->slot], memory_order_relaxed) + d,
                          memory_order_relaxed);
    atomic_store_explicit(&t->count[sw->slot],
                          atomic_load_explicit(&t->count[sw->slot], memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* The writer: (id, tid, sections, ns) of what changed; blocks of ended
 * threads, once written, go to be reused. */
void mvz_stopwatch_poll(uint64_t ts)
{
    uint32_t n = atomic_load(&nsw);
    if (!n)
        return;
    struct mvz_clock_conv conv;
    mvz_clock_conv(&conv);
    struct mvz_buf b = {0};
    uint32_t changed = 0;
    mvz_put_uvarint(&b, MVZ_USER_STOPWATCH_SAMPLE);
    mvz_put_uvarint(&b, ts);
    pthread_mutex_lock(&lock);
    for (struct sw_thread **link = &threads; *link;) {
        struct sw_thread *t = *link;
        int dead = atomic_load(&t->dead);
        for (uint32_t i = 0; i < n; i++) {
            uint64_t ticks = atomic_load_explicit(&t->ticks[i], memory_order_relaxed);
            uint64_t count = atomic_load_explicit(&t->count[i], memory_order_relaxed);
            if (ticks == t->written_ticks[i] && count == t->written_count[i])
                continue;
            t->written_ticks[i] = ticks;
            t->written_count[i] = count;
            mvz_put_uvarint(&b, table[i].id);
            mvz_put_uvarint(&b, t->tid);
            mvz_put_uvarint(&b, count);
            mvz_put_uvarint(&b, mvz_tsc_ok
                                    ? mvz_clock_ns(&(struct mvz_clock_conv){0, conv.mult}, ticks)
                                    : ticks);
            changed++;
        }
        if (dead) {
            *link = t->next;
            t->next = free_blocks;
            free_blocks = t;
        } else {
            link = &t->next;
        }
    }
    pthread_mutex_unlock(&lock);
    if (changed)
        mvz_write_record(MVZ_REC_USER, &b);
    mvz_buf_free(&b);
}

/* The child's trace starts empty: every thread's sums are written again.
 * (The parent's other threads are gone in the child; their sums stay
 * as they were at the fork.) */
void mvz_stopwatch_after_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    for (struct sw_thread *t = threads; t; t = t->next) {
        memset(t->written_ticks, 0, sizeof(t->written_ticks));
        memset(t->written_count, 0, sizeof(t->written_count));
    }
}
