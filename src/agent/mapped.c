/*
 * mapped.c - memory for the agent's own tables, mapped straight from the
 * kernel: it must not come from, or disturb, the program's heap (whose
 * allocator calls us).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/agent.h"

#define HUGE_PAGE (2u << 20)

/* Bytes the agent has mapped for itself and not unmapped: an upper bound
 * of its share of the RSS (pages not touched yet are not resident). */
static long mapped_bytes, mapped_max;

void mvz_mapped_count(long delta)
{
    long now = __atomic_add_fetch(&mapped_bytes, delta, __ATOMIC_RELAXED);
    long max = __atomic_load_n(&mapped_max, __ATOMIC_RELAXED);
    while (now > max && !__atomic_compare_exchange_n(&mapped_max, &max, now, 1, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED))
        ;
}

uint64_t mvz_mapped_max(void)
{
    long v = __atomic_load_n(&mapped_max, __ATOMIC_RELAXED);
    return v > 0 ? (uint64_t)v : 0;
}

uint64_t mvz_mapped_now(void)
{
    long v = __atomic_load_n(&mapped_bytes, __ATOMIC_RELAXED);
    return v > 0 ? (uint64_t)v : 0;
}

void mvz_unmap(void *p, size_t bytes)
{
    if (munmap(p, bytes) == 0)
        mvz_owned_unmap(p, bytes);
}

static void *map_counted(size_t bytes, int flags)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    mvz_owned_map(p, bytes);
    return p;
}

/* Zeroed pages, faulted in as they are touched. */
void *mvz_map_zeroed(size_t size)
{
    return map_counted(size, 0);
}

/* Zeroed and populated at once: page by page, a lookup would map the zero
 * page and the insertion fault again, each time flushing the TLBs of the
 * program's threads. */
void *mvz_map_populated(size_t bytes)
{
    return map_counted(bytes, MAP_POPULATE);
}

/* A hash table's memory, populated, in 2 MiB pages where the kernel has
 * them (transparent huge pages, asked for with madvise): its accesses are
 * random, and in 4 KiB pages each would also miss the TLB once the table
 * outgrows what the TLB covers (a few MiB). Free with mvz_unmap(p, bytes). */
void *mvz_map_table(size_t bytes)
{
    if (bytes < HUGE_PAGE)
        return mvz_map_populated(bytes);
    size_t span = bytes + HUGE_PAGE;
    char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    char *t = (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~((uintptr_t)HUGE_PAGE - 1));
    if (t > p)
        munmap(p, (size_t)(t - p));
    if (t + bytes < p + span)
        munmap(t + bytes, (size_t)(p + span - (t + bytes)));
    mvz_owned_map(t, bytes);
    madvise(t, bytes, MADV_HUGEPAGE);
    if (madvise(t, bytes, MADV_POPULATE_WRITE) < 0 && errno == EINVAL) /* before Linux 5.14 */
        for (size_t i = 0; i < bytes; i += 4096)
            t[i] = 0;
    return t;
}

/* ---- the agent's buffers ----
 * The agent's growable buffers (mvz_buf, built with MVZ_AGENT_MEM) take
 * their memory here, never from the program's malloc, which they would
 * disturb: glibc consolidates all its free fast-bin chunks on every
 * request of 1 KiB or more while any exist (perl, whose heap is full of
 * them, spent 7% of its run there when each new stack's 4 KiB record
 * buffer came from malloc), and a freed block of 128 KiB or more raises
 * its mmap threshold (see buf.h).
 *
 * Sizes are powers of two from 4 KiB (mvz_buf doubles), one free list per
 * size. Below 64 KiB buffers are carved out of 1 MiB slabs and never go
 * back to the kernel (the agent keeps few such buffers, and reuses them).
 * From 64 KiB each is a mapping of its own, kept for reuse while the kept
 * ones come to at most BUF_KEEP: the writer takes and frees its 1 MiB
 * chunk buffers, growing through every size, all the time, and unmapping
 * them flushed the TLBs of the program's threads on the other CPUs each
 * time (perl's run made 545 munmap calls a second).
 * The lock is a leaf: nothing else is taken while it is held. */
#define BUF_MIN ((size_t)4 << 10)
#define BUF_SMALL_CLASSES 4 /* 4, 8, 16 and 32 KiB: from slabs */
#define BUF_CLASSES 16      /* up to 128 MiB; larger ones are never kept */
#define BUF_SLAB ((size_t)1 << 20)
#define BUF_KEEP ((size_t)4 << 20)

static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
static void *buf_free[BUF_CLASSES]; /* each free buffer's first word links the next */
static size_t buf_kept;             /* bytes of large buffers in the lists */
static char *slab_pos, *slab_end;

/* The free list of a size, or -1 for one that is too large to keep. */
static int buf_class(size_t size)
{
    for (int c = 0; c < BUF_CLASSES; c++)
        if (size <= BUF_MIN << c)
            return c;
    return -1;
}

static void *map_buffer(size_t bytes)
{
    return map_counted(bytes, 0);
}

/* Caller holds buf_lock. */
static void *carve_small(size_t bytes)
{
    if ((size_t)(slab_end - slab_pos) < bytes) {
        /* counted as carved: the rest is not touched yet */
        char *s = mmap(NULL, BUF_SLAB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (s == MAP_FAILED)
            return NULL;
        mvz_owned_range(s, BUF_SLAB, 1);
        slab_pos = s;
        slab_end = s + BUF_SLAB;
    }
    void *p = slab_pos;
    slab_pos += bytes;
    mvz_mapped_count((long)bytes);
    return p;
}

static void *buf_get(size_t size)
{
    int c = buf_class(size);
    if (c < 0)
        return map_buffer(size);
    size_t bytes = BUF_MIN << c;
    pthread_mutex_lock(&buf_lock);
    void *p = buf_free[c];
    if (p) {
        buf_free[c] = *(void **)p;
        if (c >= BUF_SMALL_CLASSES)
            buf_kept -= bytes;
    } else if (c < BUF_SMALL_CLASSES) {
        p = carve_small(bytes);
    }
    pthread_mutex_unlock(&buf_lock);
    return p || c < BUF_SMALL_CLASSES ? p : map_buffer(bytes);
}

void mvz_mem_put(void *p, size_t size)
{
    if (!p)
        return;
    int c = buf_class(size);
    size_t bytes = c < 0 ? size : BUF_MIN << c;
    pthread_mutex_lock(&buf_lock);
    int keep = c >= 0 && (c < BUF_SMALL_CLASSES || buf_kept + bytes <= BUF_KEEP);
    if (keep) {
        *(void **)p = buf_free[c];
        buf_free[c] = p;
        if (c >= BUF_SMALL_CLASSES)
            buf_kept += bytes;
    }
    pthread_mutex_unlock(&buf_lock);
    if (!keep)
        mvz_unmap(p, bytes);
}

void *mvz_mem_grow(void *old, size_t old_cap, size_t cap)
{
    void *p = buf_get(cap);
    if (p && old) {
        memcpy(p, old, old_cap);
        mvz_mem_put(old, old_cap);
    }
    return p;
}

/* fork: held across it, so that the child's lists are whole */
void mvz_mem_before_fork(void)
{
    pthread_mutex_lock(&buf_lock);
}

void mvz_mem_after_fork(int child)
{
    if (child)
        pthread_mutex_init(&buf_lock, NULL);
    else
        pthread_mutex_unlock(&buf_lock);
}
