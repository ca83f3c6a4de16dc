/*
 * forward.c - the floor of any preloaded agent (bench/sample): a preload
 * library whose malloc, free, calloc, realloc and the aligned functions
 * only call glibc's own (__libc_*). What it costs a program is what
 * interposing costs, before any recording: the PLT call into the preload,
 * and the one into glibc. bench/sample runs each workload under it.
 */
#include <errno.h>
#include <stddef.h>

void *__libc_malloc(size_t);
void __libc_free(void *);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);

void *malloc(size_t n)
{
    return __libc_malloc(n);
}

void free(void *p)
{
    __libc_free(p);
}

void *calloc(size_t k, size_t n)
{
    return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
    return __libc_realloc(p, n);
}

void *memalign(size_t a, size_t n)
{
    return __libc_memalign(a, n);
}

void *aligned_alloc(size_t a, size_t n)
{
    return __libc_memalign(a, n);
}

int posix_memalign(void **out, size_t a, size_t n)
{
    void *p = __libc_memalign(a, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}
