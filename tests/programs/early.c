/*
 * early - allocations made before main, by the constructor of a library the
 * program links against (tests/programs/early/mvzearly.c): they must be
 * traced with their stacks like any other. Exit status 0 when the library's
 * block exists.
 */
#include <unistd.h>

extern void *mvzearly_block;

int main(void)
{
    (void)!write(1, "early: ok\n", 10);
    return mvzearly_block ? 0 : 1;
}
