/*
 * lifecycle - allocations before main, after main and at thread exit.
 * "leaked" means live at the very end, after static destructors, atexit
 * handlers, ELF destructors and thread_local destructors have run.
 *
 *   ctor_alloc     new char[1000] from the constructor of a static object
 *                  (before main); its destructor frees it at exit:
 *                  1 x "operator new[]", 1,000 bytes, not leaked
 *   dtor_alloc     malloc(40) from that same static destructor, never freed:
 *                  1 x malloc, 40 bytes, leaked
 *   c_ctor_alloc   malloc(200) from an __attribute__((constructor)) function,
 *                  freed by an __attribute__((destructor)) function:
 *                  1 x malloc, 200 bytes, not leaked
 *   tl_alloc       malloc(300) in the constructor of a thread_local object,
 *                  first used by a second thread and freed by its destructor
 *                  when that thread exits: 1 x malloc, 300 bytes, not leaked
 *   main_leak      malloc(7) in main, never freed: leaked
 * Other allocations: libstdc++'s emergency pool, the thread's DTV, glibc's
 * thread_local destructor list entry - global numbers are bounds.
 */
#include <cstdlib>
#include <pthread.h>
#include <unistd.h>

static void *dtor_kept;
static void *main_kept;
static void *c_block;

__attribute__((noinline)) char *ctor_alloc()
{
    return new char[1000];
}

__attribute__((noinline)) void dtor_alloc()
{
    dtor_kept = malloc(40);
}

__attribute__((noinline)) void *c_ctor_alloc()
{
    return malloc(200);
}

__attribute__((noinline)) void *tl_alloc()
{
    return malloc(300);
}

__attribute__((noinline)) void main_leak()
{
    main_kept = malloc(7);
}

struct Holder {
    char *p;
    Holder() : p(ctor_alloc()) {}
    ~Holder()
    {
        delete[] p;
        dtor_alloc();
    }
};
static Holder holder;

__attribute__((constructor)) static void c_ctor()
{
    c_block = c_ctor_alloc();
}

__attribute__((destructor)) static void c_dtor()
{
    free(c_block);
}

struct TL {
    void *p;
    TL() : p(tl_alloc()) {}
    ~TL()
    {
        free(p);
    }
};
thread_local TL tl;

static void *thread_fn(void *)
{
    void *volatile q = tl.p; /* first use: constructs this thread's TL */
    return q ? nullptr : (void *)1;
}

int main()
{
    pthread_t t;
    if (pthread_create(&t, nullptr, thread_fn, nullptr) != 0)
        return 1;
    void *r;
    pthread_join(t, &r);
    if (r != nullptr || holder.p == nullptr || c_block == nullptr)
        return 1;
    main_leak();
    static const char msg[] = "lifecycle: done\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    return 0;
}
