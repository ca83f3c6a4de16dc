/*
 * recursion - deep call stacks.
 *   main -> recurse(200) -> recurse(199) -> ... -> recurse(1) -> alloc_at_bottom
 *       alloc_at_bottom: malloc(42), leaked. Its stack, innermost first:
 *       alloc_at_bottom, 200 x recurse, main, then libc's start-up frames
 *       (__libc_start_call_main, __libc_start_main, _start): 205 frames in
 *       all, below the default cap of 256, so all of it must be there.
 *   main -> recurse_deep(1000) -> ... -> recurse_deep(1) -> alloc_deep
 *       alloc_deep: malloc(43), leaked. 1,003+ frames: cut at the cap, the
 *       innermost frames are kept (alloc_deep then recurse_deep ...).
 * Single-threaded, no stdio: 2 allocations, 85 bytes, 85 leaked.
 */
#include <stdlib.h>
#include <unistd.h>

static void *kept[2];

__attribute__((noinline)) void *alloc_at_bottom(void)
{
    return malloc(42);
}

__attribute__((noinline)) void *recurse(int n)
{
    void *p;
    if (n <= 1)
        p = alloc_at_bottom();
    else
        p = recurse(n - 1);
    /* work after the call: never a tail call */
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

__attribute__((noinline)) void *alloc_deep(void)
{
    return malloc(43);
}

__attribute__((noinline)) void *recurse_deep(int n)
{
    void *p;
    if (n <= 1)
        p = alloc_deep();
    else
        p = recurse_deep(n - 1);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

int main(void)
{
    kept[0] = recurse(200);
    kept[1] = recurse_deep(1000);
    if (!kept[0] || !kept[1])
        return 1;
    static const char msg[] = "recursion: done\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    return 0;
}
