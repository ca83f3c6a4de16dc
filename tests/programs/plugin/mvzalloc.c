/*
 * libmvzalloc.so - a stand-in for another allocator (jemalloc, tcmalloc):
 * it defines malloc, free, calloc and realloc itself, passing them to
 * glibc's internal entry points, so that whichever of it and the agent
 * comes first in LD_PRELOAD takes the program's calls. The test that
 * memviz says so when it is not the agent.
 */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

void *malloc(size_t n)
{
    return __libc_malloc(n);
}

void free(void *p)
{
    __libc_free(p);
}

void *calloc(size_t n, size_t size)
{
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    return __libc_realloc(p, n);
}
