/*
 * libmvzcalls.so - a library built with -finstrument-functions whose
 * static constructor calls, for tests/programs/calls_lib.c: lib_ctor ->
 * lib_helper once at load, and lib_work -> lib_helper at each lib_work.
 */
#include <stdlib.h>

static void *kept;

__attribute__((noinline)) void lib_helper(int n)
{
    kept = realloc(kept, (size_t)n * 16 + 16);
}

__attribute__((constructor)) void lib_ctor(void)
{
    lib_helper(1);
}

void lib_work(int n)
{
    for (int i = 0; i < n; i++)
        lib_helper(i);
}
