/*
 * live_keep - N blocks of 32-47 bytes, all live at exit and all reachable
 * from one array in a global: the heap snapshot's scan reads every block,
 * and the graph has N edges from the array. For bench/snapshot.
 */
#include <stdio.h>
#include <stdlib.h>

void **g_all;

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    g_all = malloc((size_t)n * sizeof(*g_all));
    if (!g_all)
        return 1;
    for (long i = 0; i < n; i++)
        if (!(g_all[i] = malloc(32 + (size_t)(i % 16))))
            return 1;
    printf("%ld\n", n);
    return 0;
}
