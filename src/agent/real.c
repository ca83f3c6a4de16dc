/*
 * real.c - finds the allocator the program would have used without us (the
 * next definition after libmemviz in symbol lookup order: normally glibc's,
 * but jemalloc or tcmalloc when the program links one) and serves the
 * allocations dlsym makes while we are still looking it up.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "agent/agent.h"

struct mvz_real mvz_real;

/* dlsym allocates (its error state) before malloc can be resolved. Those
 * few requests are served from here and never freed. */
#define BOOTSTRAP_SIZE (256 * 1024)
static _Alignas(64) unsigned char bootstrap[BOOTSTRAP_SIZE];
static _Atomic size_t bootstrap_used;

void *mvz_bootstrap_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    size_t old = atomic_load(&bootstrap_used), start;
    do {
        start = (old + align - 1) & ~(align - 1);
        if (start + size > BOOTSTRAP_SIZE || start + size < start)
            return NULL;
    } while (!atomic_compare_exchange_weak(&bootstrap_used, &old, start + size));
    return bootstrap + start;
}

int mvz_bootstrap_owns(const void *p)
{
    const unsigned char *c = p;
    return c >= bootstrap && c < bootstrap + BOOTSTRAP_SIZE;
}

void *mvz_dlsym_next(const char *name)
{
    mvz_tls.internal++;
    void *f = dlsym(RTLD_NEXT, name);
    mvz_tls.internal--;
    return f;
}

/* Resolution order matters only in that malloc/calloc/free must exist before
 * anything else runs through them. Concurrent first calls are harmless:
 * every thread stores the same pointers. */
void mvz_resolve_real(void)
{
    static _Atomic int resolving;
    if (mvz_real.malloc)
        return;
    atomic_store(&resolving, 1);
    struct mvz_real r;
    r.malloc = mvz_dlsym_next("malloc");
    r.free = mvz_dlsym_next("free");
    r.calloc = mvz_dlsym_next("calloc");
    r.realloc = mvz_dlsym_next("realloc");
    r.posix_memalign = mvz_dlsym_next("posix_memalign");
    r.aligned_alloc = mvz_dlsym_next("aligned_alloc");
    r.memalign = mvz_dlsym_next("memalign");
    r.valloc = mvz_dlsym_next("valloc");
    r.pvalloc = mvz_dlsym_next("pvalloc");
    /* Publish malloc last: callers test it to know resolution is done. */
    void *(*m)(size_t) = r.malloc;
    r.malloc = NULL;
    memcpy(&mvz_real, &r, sizeof(r));
    atomic_thread_fence(memory_order_release);
    mvz_real.malloc = m;
    atomic_store(&resolving, 0);
}
