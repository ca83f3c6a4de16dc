/*
 * hooks_malloc.c - the C allocation entry points. Each one calls the real
 * allocator and records what happened; see agent.h for the ordering rule
 * (allocations numbered after the real call, releases before it).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"

MVZ_EXPORT void *malloc(size_t size)
{
    if (MVZ_UNLIKELY(!mvz_real.malloc) && mvz_tls.internal)
        return mvz_bootstrap_alloc(size, 16);
    if (mvz_passthrough())
        return mvz_real.malloc ? mvz_untraced_alloc(mvz_real.malloc(size), size)
                               : mvz_bootstrap_alloc(size, 16);
    void *p = mvz_real.malloc(size);
    if (p)
        mvz_on_alloc(p, size, MVZ_E_MALLOC, MVZ_HOOK_FRAME);
    return p;
}

MVZ_EXPORT void free(void *p)
{
    if (!p || MVZ_UNLIKELY(mvz_bootstrap_owns(p)))
        return;
    if (mvz_passthrough()) {
        mvz_untraced_release(p);
        if (mvz_real.free)
            mvz_real.free(p);
        return;
    }
    mvz_on_free(p, MVZ_E_FREE);
    mvz_real.free(p);
}

MVZ_EXPORT void *calloc(size_t n, size_t size)
{
    if (MVZ_UNLIKELY(!mvz_real.calloc)) {
        /* dlsym's calloc while resolving: bootstrap memory is zeroed. */
        size_t total;
        if (__builtin_mul_overflow(n, size, &total))
            return NULL;
        if (mvz_tls.internal || (mvz_resolve_real(), !mvz_real.calloc))
            return mvz_bootstrap_alloc(total, 16);
    }
    if (mvz_passthrough())
        return mvz_untraced_alloc(mvz_real.calloc(n, size), n * size);
    void *p = mvz_real.calloc(n, size);
    if (p)
        mvz_on_alloc(p, n * size, MVZ_E_CALLOC, MVZ_HOOK_FRAME);
    return p;
}

/* realloc is one release and one allocation; record.c keeps them in order. */
static void *realloc_traced(void *old, size_t size, int entry)
{
    if (!old) {
        void *p = mvz_real.realloc(NULL, size);
        if (p)
            mvz_on_alloc(p, size, entry, MVZ_HOOK_FRAME);
        return p;
    }
    if (!mvz_sample_keeps_release(old)) {
        /* sampled mode, the old block not recorded: only the new one may be */
        void *p = mvz_real.realloc(old, size);
        if (p)
            mvz_on_alloc(p, size, entry, MVZ_HOOK_FRAME);
        return p;
    }
    uint64_t key = mvz_realloc_begin();
    void *p = mvz_real.realloc(old, size);
    if (MVZ_UNLIKELY(mvz_sample_bytes) && !p && size)
        mvz_sample_restore(old); /* failed: the old block lives on */
    mvz_realloc_end(old, size, p, key, entry, MVZ_HOOK_FRAME);
    return p;
}

static void *realloc_from_bootstrap(void *old, size_t size)
{
    /* The old block came from the bootstrap arena; we do not know its size,
     * but it cannot be larger than what is left after it. */
    void *p = malloc(size);
    if (p) {
        size_t room = (size_t)((unsigned char *)mvz_bootstrap_alloc(0, 1) - (unsigned char *)old);
        memcpy(p, old, size < room ? size : room);
    }
    return p;
}

MVZ_EXPORT void *realloc(void *old, size_t size)
{
    if (MVZ_UNLIKELY(old && mvz_bootstrap_owns(old)))
        return realloc_from_bootstrap(old, size);
    if (MVZ_UNLIKELY(!mvz_real.realloc)) {
        if (mvz_tls.internal || (mvz_resolve_real(), !mvz_real.realloc))
            return old ? NULL : mvz_bootstrap_alloc(size, 16);
    }
    if (mvz_passthrough()) {
        mvz_untraced_release(old);
        return mvz_untraced_alloc(mvz_real.realloc(old, size), size);
    }
    return realloc_traced(old, size, MVZ_E_REALLOC);
}

/* Implemented with the real realloc: glibc's reallocarray calls realloc
 * through the PLT, which would land in our hook and count the call twice. */
MVZ_EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (MVZ_UNLIKELY(old && mvz_bootstrap_owns(old)))
        return realloc_from_bootstrap(old, total);
    if (mvz_passthrough()) {
        mvz_untraced_release(old);
        return mvz_untraced_alloc(mvz_real.realloc(old, total), total);
    }
    return realloc_traced(old, total, MVZ_E_REALLOCARRAY);
}

MVZ_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    if (mvz_passthrough()) {
        int r = mvz_real.posix_memalign(out, align, size);
        if (r == 0)
            mvz_untraced_alloc(*out, size);
        return r;
    }
    int rc = mvz_real.posix_memalign(out, align, size);
    if (rc == 0 && *out)
        mvz_on_alloc(*out, size, MVZ_E_POSIX_MEMALIGN, MVZ_HOOK_FRAME);
    return rc;
}

#define ALIGNED_HOOK(name, entry, params, args, size)                                              \
    MVZ_EXPORT void *name params                                                                   \
    {                                                                                              \
        if (mvz_passthrough())                                                                     \
            return mvz_untraced_alloc(mvz_real.name args, size);                                   \
        void *p = mvz_real.name args;                                                              \
        if (p)                                                                                     \
            mvz_on_alloc(p, size, entry, MVZ_HOOK_FRAME);                                          \
        return p;                                                                                  \
    }

ALIGNED_HOOK(aligned_alloc, MVZ_E_ALIGNED_ALLOC, (size_t align, size_t size), (align, size), size)
ALIGNED_HOOK(memalign, MVZ_E_MEMALIGN, (size_t align, size_t size), (align, size), size)
ALIGNED_HOOK(valloc, MVZ_E_VALLOC, (size_t size), (size), size)
ALIGNED_HOOK(pvalloc, MVZ_E_PVALLOC, (size_t size), (size), size)

/* ---- whose malloc the program calls ----
 * Symbols are looked up in load order: the executable, then the preloaded
 * objects in LD_PRELOAD's order, then the rest. An allocator preloaded
 * before the agent (LD_PRELOAD=libjemalloc.so.2:libmemviz.so) or linked into
 * the executable therefore takes the program's calls, and the trace would
 * show no allocations with no word why. Said once, on stderr and in the
 * trace (a NOTICE record, which reports print). */
void mvz_check_allocator(void)
{
    static const char *const names[] = {"malloc", "free", "calloc", "realloc"};
    Dl_info self, other;
    if (!dladdr((void *)mvz_check_allocator, &self))
        return;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        void *f = dlsym(RTLD_DEFAULT, names[i]);
        if (!f || !dladdr(f, &other) || other.dli_fbase == self.dli_fbase)
            continue;
        char exe[512];
        const char *who = other.dli_fname;
        if (!who || !*who) { /* the executable */
            ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
            exe[n > 0 ? n : 0] = 0;
            who = n > 0 ? exe : "the executable";
        }
        char text[1024];
        snprintf(text, sizeof(text),
                 "the program's %s is %s's, not memviz's: the allocations made through it are "
                 "not in this trace (preload libmemviz.so before other allocators)",
                 names[i], who);
        mvz_say(text, NULL);
        struct mvz_buf b = {0};
        mvz_put_uvarint(&b, MVZ_NOTICE_FOREIGN_ALLOCATOR);
        mvz_put_str(&b, text);
        mvz_write_record(MVZ_REC_NOTICE, &b);
        mvz_buf_free(&b);
        return;
    }
}
