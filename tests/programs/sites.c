/*
 * sites - allocations whose stacks part far from where the walk starts.
 * leaf() calls malloc; it is reached through path_a() or path_b(), and
 * those through outer_x() or outer_y(): two pairs of functions of the
 * same shape, so at every malloc the program's innermost state (leaf's
 * return address, stack pointer and frame pointer) is the same, and only
 * return addresses further up the stack tell the four stacks apart. The
 * agent remembers walks by that state (unwind.c); one that skipped a
 * check of those words would give all four the same stack.
 *
 * Each of R rounds (R = 20,000 unless given):
 *   outer_x: path_a -> leaf(24), path_b -> leaf(40)
 *   outer_y: path_a -> leaf(24), path_a -> leaf(24)
 * and every block is freed at once. So, R = 20,000:
 *   leaf    4R = 80,000 allocations, 112R = 2,240,000 bytes
 *   path_a  3R = 60,000 allocations,  72R = 1,440,000 bytes
 *   path_b   R = 20,000 allocations,  40R =   800,000 bytes
 *   outer_x 2R = 40,000 allocations,  64R = 1,280,000 bytes
 *   outer_y 2R = 40,000 allocations,  48R =   960,000 bytes
 * nothing leaked.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile long sink;

__attribute__((noinline)) void leaf(size_t size)
{
    char *p = malloc(size);
    if (!p)
        abort();
    p[0] = 1;
    sink += p[0];
    free(p);
}

/* The same shape twice: one frame size, one call into leaf. */
__attribute__((noinline)) void path_a(void)
{
    leaf(24);
    sink++;
}

__attribute__((noinline)) void path_b(void)
{
    leaf(40);
    sink++;
}

__attribute__((noinline)) void outer_x(void)
{
    path_a();
    path_b();
    sink++;
}

__attribute__((noinline)) void outer_y(void)
{
    path_a();
    path_a();
    sink++;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 20000;
    for (long r = 0; r < rounds; r++) {
        outer_x();
        outer_y();
    }
    printf("sites: done\n");
    return 0;
}
