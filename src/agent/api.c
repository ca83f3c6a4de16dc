/*
 * api.c - the program's side of memviz (include/memviz.h): heap snapshots
 * on demand, roots memviz cannot find by itself, and blocks not to report.
 *
 * Registered roots and ignored blocks are kept in small tables of mapped
 * memory under api_lock; a snapshot's copy reads them (scan.c). Invariant:
 * an ignored address is forgotten when the collector takes its block's
 * release (mvz_api_released), so a later block at the same address is not
 * ignored by mistake.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/snapshot.h"

struct api_range {
    uintptr_t p;
    size_t n;
};

struct api_table {
    struct api_range *v;
    size_t n, cap;
};

static struct api_table roots, ignored;
static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic size_t mvz_api_ignored_n;

static int table_put(struct api_table *t, uintptr_t p, size_t n)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].p == p) {
            t->v[i].n = n;
            return 0;
        }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        struct api_range *v = mmap(NULL, cap * sizeof(*v), PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (v == MAP_FAILED)
            return -1;
        mvz_owned_map(v, cap * sizeof(*v));
        if (t->v) {
            memcpy(v, t->v, t->n * sizeof(*v));
            mvz_unmap(t->v, t->cap * sizeof(*t->v));
        }
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = (struct api_range){p, n};
    return 0;
}

static void table_drop(struct api_table *t, uintptr_t p)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].p == p) {
            t->v[i] = t->v[--t->n];
            return;
        }
}

MVZ_EXPORT void memviz_snapshot(const char *name)
{
    uintptr_t regs[MVZ_SNAP_REGS] = {0}, caller[3];
    MVZ_SAVE_REGS(regs);
    MVZ_CALLER_STATE(caller);
    mvz_snapshot_take(name, MVZ_SNAP_API, (uintptr_t)regs, regs, caller, NULL);
}

MVZ_EXPORT void memviz_register_root(const void *p, size_t n)
{
    if (!p)
        return;
    mvz_tls.internal++;
    pthread_mutex_lock(&api_lock);
    if (n)
        table_put(&roots, (uintptr_t)p, n);
    else
        table_drop(&roots, (uintptr_t)p);
    pthread_mutex_unlock(&api_lock);
    mvz_tls.internal--;
}

MVZ_EXPORT void memviz_ignore(const void *block)
{
    if (!block)
        return;
    mvz_tls.internal++;
    pthread_mutex_lock(&api_lock);
    if (table_put(&ignored, (uintptr_t)block, 1) == 0)
        atomic_store(&mvz_api_ignored_n, ignored.n);
    pthread_mutex_unlock(&api_lock);
    mvz_tls.internal--;
}

void mvz_api_released_slow(const void *block)
{
    pthread_mutex_lock(&api_lock);
    table_drop(&ignored, (uintptr_t)block);
    atomic_store(&mvz_api_ignored_n, ignored.n);
    pthread_mutex_unlock(&api_lock);
}

/* For a snapshot's copy, which holds api_lock's state of the moment: it
 * was taken under the lock (mvz_api_lock). */
void mvz_api_lock(void)
{
    pthread_mutex_lock(&api_lock);
}

void mvz_api_unlock(void)
{
    pthread_mutex_unlock(&api_lock);
}

void mvz_api_roots(void (*fn)(void *ctx, uintptr_t p, size_t n), void *ctx)
{
    for (size_t i = 0; i < roots.n; i++)
        fn(ctx, roots.v[i].p, roots.v[i].n);
}

void mvz_api_ignored(void (*fn)(void *ctx, uintptr_t block), void *ctx)
{
    for (size_t i = 0; i < ignored.n; i++)
        fn(ctx, ignored.v[i].p);
}
