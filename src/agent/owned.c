/*
 * owned.c - two sets of address ranges a heap snapshot must know about.
 *
 * Owned: the memory the agent maps for itself. The scan reads the
 * program's memory for pointers; the agent's tables, rings and buffers are
 * full of block addresses (every event carries one) and would make every
 * block look reachable, so the scan leaves these ranges out. Their bytes
 * are counted too: memviz's share of the program's RSS (mapped.c).
 *
 * Untraced: blocks the program's malloc gave while the agent itself was
 * running (dlopen of its unwinder, its environment variables), which the
 * trace does not have. The program's own structures run through some of
 * them (the dynamic loader's list of link maps: a library the program
 * dlopens later hangs off the unwinder's), so the scan reads them as roots.
 *
 * Invariants: each set is open addressing on the range's start, linear
 * probing, at most half full counting deleted slots; a slot is empty when
 * len is 0 and deleted when len is DELETED. Each has its lock, which a
 * snapshot holds across its clone so that the copy is whole.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/agent.h"

#define DELETED ((size_t)-1)

struct owned_slot {
    uintptr_t start;
    size_t len;
};

struct range_set {
    struct owned_slot *v;
    size_t cap, used; /* used counts deleted slots too */
    size_t live;
    pthread_mutex_t lock;
};

static struct range_set owned = {.lock = PTHREAD_MUTEX_INITIALIZER},
                        untraced = {.lock = PTHREAD_MUTEX_INITIALIZER};
_Atomic size_t mvz_untraced_n;

static size_t slot_of(uintptr_t start, size_t cap)
{
    return (size_t)((start >> 12) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

static void put(struct owned_slot *v, size_t cap, uintptr_t start, size_t len)
{
    size_t j = slot_of(start, cap);
    while (v[j].len && v[j].len != DELETED)
        j = (j + 1) & (cap - 1);
    v[j] = (struct owned_slot){start, len};
}

/* Rehashes into a table sized for the live ranges; deleted slots go. */
static int grow(struct range_set *t)
{
    size_t cap = 256;
    while (cap < 4 * (t->live + 1))
        cap *= 2;
    struct owned_slot *v =
        mmap(NULL, cap * sizeof(*v), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (v == MAP_FAILED)
        return -1;
    for (size_t i = 0; i < t->cap; i++)
        if (t->v[i].len && t->v[i].len != DELETED)
            put(v, cap, t->v[i].start, t->v[i].len);
    if (t->v)
        munmap(t->v, t->cap * sizeof(*t->v));
    t->v = v;
    t->cap = cap;
    t->used = t->live;
    return 0;
}

static size_t set_note(struct range_set *t, uintptr_t start, size_t len, int add)
{
    pthread_mutex_lock(&t->lock);
    if (add) {
        if (2 * (t->used + 1) <= t->cap || grow(t) == 0) {
            put(t->v, t->cap, start, len);
            t->used++;
            t->live++;
        }
    } else if (t->cap) {
        size_t j = slot_of(start, t->cap);
        for (; t->v[j].len; j = (j + 1) & (t->cap - 1))
            if (t->v[j].start == start && t->v[j].len != DELETED) {
                t->v[j].len = DELETED;
                t->live--;
                break;
            }
    }
    size_t live = t->live;
    pthread_mutex_unlock(&t->lock);
    return live;
}

static void set_each(const struct range_set *t, void (*fn)(void *ctx, uintptr_t start, size_t len),
                     void *ctx)
{
    for (size_t i = 0; i < t->cap; i++)
        if (t->v[i].len && t->v[i].len != DELETED)
            fn(ctx, t->v[i].start, t->v[i].len);
}

void mvz_owned_range(const void *p, size_t len, int add)
{
    if (p && len)
        set_note(&owned, (uintptr_t)p, len, add);
}

void mvz_untraced_note(const void *p, size_t len, int add)
{
    if (!p)
        return;
    atomic_store(&mvz_untraced_n, set_note(&untraced, (uintptr_t)p, len ? len : 1, add));
}

void mvz_untraced_each(void (*fn)(void *ctx, uintptr_t start, size_t len), void *ctx)
{
    set_each(&untraced, fn, ctx);
}

void mvz_owned_map(const void *p, size_t len)
{
    mvz_owned_range(p, len, 1);
    mvz_mapped_count((long)len);
}

void mvz_owned_unmap(const void *p, size_t len)
{
    mvz_owned_range(p, len, 0);
    mvz_mapped_count(-(long)len);
}

void mvz_owned_lock(void)
{
    pthread_mutex_lock(&owned.lock);
    pthread_mutex_lock(&untraced.lock);
}

void mvz_owned_unlock(void)
{
    pthread_mutex_unlock(&untraced.lock);
    pthread_mutex_unlock(&owned.lock);
}

void mvz_owned_after_clone(void)
{
    pthread_mutex_init(&owned.lock, NULL);
    pthread_mutex_init(&untraced.lock, NULL);
}

size_t mvz_owned_each(void (*fn)(void *ctx, uintptr_t start, size_t len), void *ctx)
{
    set_each(&owned, fn, ctx);
    /* the tables themselves hold no block addresses, but are ours */
    if (owned.v)
        fn(ctx, (uintptr_t)owned.v, owned.cap * sizeof(*owned.v));
    if (untraced.v)
        fn(ctx, (uintptr_t)untraced.v, untraced.cap * sizeof(*untraced.v));
    return owned.live;
}
