/*
 * gate.c - libmvztsangate.so, the shim that lets ThreadSanitizer host the
 * memviz agent in an uninstrumented program (tests/tsan/tsan.mk).
 *
 * The TSan build of the agent is preloaded between this gate and libtsan:
 *     LD_PRELOAD="libmvztsangate.so build/tsan/libmemviz.so libtsan.so.2"
 * so the program's malloc reaches the agent first, and the agent's "real"
 * allocator (dlsym(RTLD_NEXT)) is TSan's. But TSan itself calls malloc,
 * realloc, free and sigaction while it sets up the process (from its
 * constructor) and each new thread (pthread_getattr_np in its thread start
 * routine), before its state for that thread exists; instrumented agent code
 * entered then crashes in __tsan_func_entry. So this gate, which is NOT
 * instrumented, defines those entry points first in symbol lookup order and
 * sends each call
 *   - to the agent once the calling thread is "ready": the main thread from
 *     the end of TSan's initialisation (TSan's OnInitialize hook, below),
 *     every other thread from the moment its start routine runs
 *     (pthread_create is wrapped to mark it) until its TSan state is torn
 *     down (a thread-specific destructor re-armed to the last round unmarks
 *     it);
 *   - otherwise to where the call would go without the agent: TSan's
 *     allocator (so that every block has one owner whichever way it is freed)
 *     and libc's sigaction/signal (what TSan's own start-up expects).
 * Every forwarding function ends in a tail call (a jmp), as do the wrapped
 * pthread_create and thread start routine, so the gate leaves no frame in
 * the stacks the agent records (run_tsan.py checks that no frame of the gate
 * is in any trace).
 *
 * Blocks allocated through TSan directly (before readiness) and freed through
 * the agent later show up as unmatched frees; the threaded test programs
 * allocate nothing of their own at those times.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* TSan's interceptors under their own names (libtsan.so.2 exports them). */
void *__interceptor_malloc(size_t);
void __interceptor_free(void *);
void *__interceptor_calloc(size_t, size_t);
void *__interceptor_realloc(void *, size_t);
void *__interceptor_reallocarray(void *, size_t, size_t);
int __interceptor_posix_memalign(void **, size_t, size_t);
void *__interceptor_aligned_alloc(size_t, size_t);
void *__interceptor_memalign(size_t, size_t);
void *__interceptor_valloc(size_t);
void *__interceptor_pvalloc(size_t);
int __interceptor_pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
void __tsan_init(void);
/* libc's own sigaction and BSD-semantics signal. */
int __sigaction(int, const struct sigaction *, struct sigaction *);
sighandler_t bsd_signal(int, sighandler_t);

/* The agent's definitions (the next ones after this library). */
static struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    int (*sigaction)(int, const struct sigaction *, struct sigaction *);
    sighandler_t (*signal)(int, sighandler_t);
} agent;

static __thread int ready __attribute__((tls_model("initial-exec")));
static int tsan_up; /* TSan finished initialising; agent.* are resolved */

/* A thread not (yet or any more) known to TSan. The first such call in the
 * process initialises TSan if nothing has yet (its hook below then marks
 * this thread ready); inside TSan's own initialisation __tsan_init returns
 * at once and the call goes to TSan. */
__attribute__((noinline)) static int not_ready(void)
{
    if (!tsan_up)
        __tsan_init();
    return ready;
}

#define READY __builtin_expect(ready || not_ready(), 1)

EXPORT void *malloc(size_t n)
{
    return (READY ? agent.malloc : __interceptor_malloc)(n);
}

EXPORT void free(void *p)
{
    (READY ? agent.free : __interceptor_free)(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
    return (READY ? agent.calloc : __interceptor_calloc)(n, size);
}

EXPORT void *realloc(void *p, size_t n)
{
    return (READY ? agent.realloc : __interceptor_realloc)(p, n);
}

EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
    return (READY ? agent.reallocarray : __interceptor_reallocarray)(p, n, size);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    return (READY ? agent.posix_memalign : __interceptor_posix_memalign)(out, align, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    return (READY ? agent.aligned_alloc : __interceptor_aligned_alloc)(align, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
    return (READY ? agent.memalign : __interceptor_memalign)(align, n);
}

EXPORT void *valloc(size_t n)
{
    return (READY ? agent.valloc : __interceptor_valloc)(n);
}

EXPORT void *pvalloc(size_t n)
{
    return (READY ? agent.pvalloc : __interceptor_pvalloc)(n);
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    return (READY ? agent.sigaction : __sigaction)(sig, act, old);
}

EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    return (READY ? agent.signal : bsd_signal)(sig, handler);
}

/* ---- thread readiness ---- */

/* Runs among the thread's last destructors (it re-arms itself until the
 * last round, as TSan's own finaliser does): after it, frees by libc's
 * thread teardown go to TSan directly. */
static pthread_key_t unready_key;

static void unready(void *arg)
{
    uintptr_t round = (uintptr_t)arg;
    if (round < PTHREAD_DESTRUCTOR_ITERATIONS) {
        ready = 0; /* setspecific may allocate: not through the agent */
        pthread_setspecific(unready_key, (void *)(round + 1));
        ready = 1;
        return;
    }
    ready = 0;
}

struct start {
    void *(*fn)(void *);
    void *arg;
};

static void *thread_start(void *p)
{
    struct start s = *(struct start *)p;
    __interceptor_free(p);
    pthread_setspecific(unready_key, (void *)(uintptr_t)1);
    ready = 1;
    return s.fn(s.arg);
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (!tsan_up)
        return __interceptor_pthread_create(t, attr, fn, arg);
    /* Not the program's allocation: straight to TSan, never recorded. If
     * pthread_create fails it is lost (16 bytes): the tail call keeps the
     * gate's frame out of the stacks of glibc's allocations in there. */
    struct start *s = __interceptor_malloc(sizeof(*s));
    if (!s)
        return EAGAIN;
    s->fn = fn;
    s->arg = arg;
    return __interceptor_pthread_create(t, attr, thread_start, s);
}

static void *next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "memviz tsan gate: %s not found after the gate\n", name);
        abort();
    }
    return f;
}

/* Opens the gate for the main thread once TSan is up: called by TSan at the
 * end of its initialisation (a weak hook libtsan.so.2 exports for tools,
 * __tsan::OnInitialize()), so that allocations by library constructors that
 * run before this library's are recorded too; the constructor is the
 * fallback for a runtime without the hook. */
static void open_gate(void)
{
    if (tsan_up)
        return;
    agent.malloc = next("malloc");
    agent.free = next("free");
    agent.calloc = next("calloc");
    agent.realloc = next("realloc");
    agent.reallocarray = next("reallocarray");
    agent.posix_memalign = next("posix_memalign");
    agent.aligned_alloc = next("aligned_alloc");
    agent.memalign = next("memalign");
    agent.valloc = next("valloc");
    agent.pvalloc = next("pvalloc");
    agent.sigaction = next("sigaction");
    agent.signal = next("signal");
    pthread_key_create(&unready_key, unready);
    tsan_up = 1;
    ready = 1;
}

EXPORT void tsan_on_initialize(void) __asm__("_ZN6__tsan12OnInitializeEv");
EXPORT void tsan_on_initialize(void)
{
    open_gate();
}

__attribute__((constructor)) static void gate_constructor(void)
{
    open_gate();
}
