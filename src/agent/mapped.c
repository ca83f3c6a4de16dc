/*
 * mapped.c - memory for the agent's own tables, mapped straight from the
 * kernel: it must not come from, or disturb, the program's heap (whose
 * allocator calls us).
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "agent/agent.h"

#define HUGE_PAGE (2u << 20)

/* Zeroed pages, faulted in as they are touched. */
void *mvz_map_zeroed(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Zeroed and populated at once: page by page, a lookup would map the zero
 * page and the insertion fault again, each time flushing the TLBs of the
 * program's threads. */
void *mvz_map_populated(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* A hash table's memory, populated, in 2 MiB pages where the kernel has
 * them (transparent huge pages, asked for with madvise): its accesses are
 * random, and in 4 KiB pages each would also miss the TLB once the table
 * outgrows what the TLB covers (a few MiB). Free with munmap(p, bytes). */
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
    madvise(t, bytes, MADV_HUGEPAGE);
    if (madvise(t, bytes, MADV_POPULATE_WRITE) < 0 && errno == EINVAL) /* before Linux 5.14 */
        for (size_t i = 0; i < bytes; i += 4096)
            t[i] = 0;
    return t;
}
