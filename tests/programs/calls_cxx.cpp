/*
 * calls_cxx - a C++ exception through three instrumented frames, for
 * memviz run --callgraph (built with -finstrument-functions: flags.mk).
 *
 * main calls level1 -> level2 -> level3 4 times; 3 times level3 throws
 * (one allocation each, the exception, by __cxa_allocate_exception) and
 * main catches it and calls after_catch, which allocates and frees 32
 * bytes; the 4th time level3 returns. So: main -> level1 4 calls, level1
 * -> level2 4, level2 -> level3 4, main -> after_catch 3 (never under
 * the frames the exceptions left), 3 allocations in level3's context
 * and 3 of 32 bytes in after_catch's.
 */
#include <cstdio>

int level3(int x)
{
    if (x > 0)
        throw 42;
    return x;
}

int level2(int x)
{
    return level3(x) + 1;
}

int level1(int x)
{
    return level2(x) + 1;
}

void after_catch()
{
    int *p = new int[8];
    p[0] = 1;
    delete[] p;
}

int main()
{
    int caught = 0;
    for (int i = 0; i < 3; i++) {
        try {
            level1(1);
        } catch (int) {
            caught++;
            after_catch();
        }
    }
    level1(0);
    std::printf("caught %d\n", caught);
    return 0;
}
