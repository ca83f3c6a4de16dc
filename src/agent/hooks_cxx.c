/*
 * hooks_cxx.c - C++ operator new and delete in all their variants (plain,
 * array, nothrow, sized, aligned), under their Itanium-ABI names. We
 * allocate with the real malloc/memalign ourselves rather than forwarding to
 * libstdc++, whose operator new would call malloc and be counted twice.
 *
 * The standard's failure protocol is kept: on failure call the installed
 * new-handler and retry; with no handler, throw std::bad_alloc (or return
 * NULL for the nothrow forms). This file is built with -fexceptions so that
 * those exceptions can pass through our frames.
 */
#include <stddef.h>

#include "agent/agent.h"

/* The variants differ only in parameters they do not need (sizes, nothrow tags). */
#pragma GCC diagnostic ignored "-Wunused-parameter"

typedef void (*new_handler_fn)(void);

static new_handler_fn current_new_handler(void)
{
    static new_handler_fn (*get)(void);
    if (!get)
        get = (new_handler_fn(*)(void))mvz_dlsym_next("_ZSt15get_new_handlerv");
    return get ? get() : NULL;
}

static void throw_bad_alloc(void)
{
    static void (*thrower)(void);
    if (!thrower)
        thrower = (void (*)(void))mvz_dlsym_next("_ZSt17__throw_bad_allocv");
    if (thrower)
        thrower();
    __builtin_trap(); /* no libstdc++: nothing sensible to throw */
}

static void *real_alloc(size_t size, size_t align)
{
    if (!mvz_real.malloc)
        mvz_resolve_real();
    if (size == 0)
        size = 1; /* new must return a unique pointer even for 0 bytes */
    if (align <= 16)
        return mvz_real.malloc(size);
    return mvz_real.memalign(align, size);
}

static void *new_impl(size_t size, size_t align, int nothrow, int entry)
{
    void *p;
    for (;;) {
        p = real_alloc(size, align);
        if (p)
            break;
        new_handler_fn handler = current_new_handler();
        if (!handler) {
            if (nothrow)
                return NULL;
            throw_bad_alloc();
        }
        handler();
    }
    if (!mvz_passthrough())
        mvz_on_alloc(p, size, entry, MVZ_HOOK_FRAME);
    return p;
}

static void delete_impl(void *p, int entry)
{
    if (!p)
        return;
    if (!mvz_passthrough())
        mvz_on_free(p, entry);
    mvz_real.free(p);
}

#define NEW_HOOK(mangled, entry, align_expr, nothrow, ...)                                         \
    MVZ_EXPORT void *mangled(__VA_ARGS__)                                                          \
    {                                                                                              \
        return new_impl(size, align_expr, nothrow, entry);                                         \
    }
#define DELETE_HOOK(mangled, entry, ...)                                                           \
    MVZ_EXPORT void mangled(__VA_ARGS__)                                                           \
    {                                                                                              \
        delete_impl(p, entry);                                                                     \
    }

/* The nothrow_t argument is an empty struct passed by reference. */
NEW_HOOK(_Znwm, MVZ_E_NEW, 0, 0, size_t size)
NEW_HOOK(_Znam, MVZ_E_NEW_ARRAY, 0, 0, size_t size)
NEW_HOOK(_ZnwmRKSt9nothrow_t, MVZ_E_NEW_NOTHROW, 0, 1, size_t size, const void *nt)
NEW_HOOK(_ZnamRKSt9nothrow_t, MVZ_E_NEW_ARRAY_NOTHROW, 0, 1, size_t size, const void *nt)
NEW_HOOK(_ZnwmSt11align_val_t, MVZ_E_NEW_ALIGNED, al, 0, size_t size, size_t al)
NEW_HOOK(_ZnamSt11align_val_t, MVZ_E_NEW_ARRAY_ALIGNED, al, 0, size_t size, size_t al)
NEW_HOOK(_ZnwmSt11align_val_tRKSt9nothrow_t, MVZ_E_NEW_ALIGNED_NOTHROW, al, 1, size_t size,
         size_t al, const void *nt)
NEW_HOOK(_ZnamSt11align_val_tRKSt9nothrow_t, MVZ_E_NEW_ARRAY_ALIGNED_NOTHROW, al, 1, size_t size,
         size_t al, const void *nt)

DELETE_HOOK(_ZdlPv, MVZ_E_DELETE, void *p)
DELETE_HOOK(_ZdaPv, MVZ_E_DELETE_ARRAY, void *p)
DELETE_HOOK(_ZdlPvm, MVZ_E_DELETE_SIZED, void *p, size_t size)
DELETE_HOOK(_ZdaPvm, MVZ_E_DELETE_ARRAY_SIZED, void *p, size_t size)
DELETE_HOOK(_ZdlPvSt11align_val_t, MVZ_E_DELETE_ALIGNED, void *p, size_t al)
DELETE_HOOK(_ZdaPvSt11align_val_t, MVZ_E_DELETE_ARRAY_ALIGNED, void *p, size_t al)
DELETE_HOOK(_ZdlPvmSt11align_val_t, MVZ_E_DELETE_SIZED_ALIGNED, void *p, size_t size, size_t al)
DELETE_HOOK(_ZdaPvmSt11align_val_t, MVZ_E_DELETE_ARRAY_SIZED_ALIGNED, void *p, size_t size,
            size_t al)
DELETE_HOOK(_ZdlPvRKSt9nothrow_t, MVZ_E_DELETE_NOTHROW, void *p, const void *nt)
DELETE_HOOK(_ZdaPvRKSt9nothrow_t, MVZ_E_DELETE_ARRAY_NOTHROW, void *p, const void *nt)
DELETE_HOOK(_ZdlPvSt11align_val_tRKSt9nothrow_t, MVZ_E_DELETE_ALIGNED_NOTHROW, void *p, size_t al,
            const void *nt)
DELETE_HOOK(_ZdaPvSt11align_val_tRKSt9nothrow_t, MVZ_E_DELETE_ARRAY_ALIGNED_NOTHROW, void *p,
            size_t al, const void *nt)
