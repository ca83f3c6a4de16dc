/*
 * mvzearly - a shared library the "early" test program links against. Its
 * constructor allocates while the dynamic loader is still initialising the
 * process, possibly before the profiler's own constructor has run.
 *   early_ctor_alloc: malloc(4321), kept (a leak)
 *   early_ctor_temp:  malloc(55) freed at once (a temporary)
 */
#include <stdlib.h>

void *mvzearly_block;

__attribute__((noinline)) void *early_ctor_alloc(void)
{
    return malloc(4321);
}

__attribute__((noinline)) void early_ctor_temp(void)
{
    void *p = malloc(55);
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
}

__attribute__((constructor)) static void mvzearly_init(void)
{
    mvzearly_block = early_ctor_alloc();
    early_ctor_temp();
}
