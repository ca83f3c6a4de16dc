/*
 * calls_deep - recursion deeper than the call graph's shadow stack (2^19
 * open calls), for memviz run --callgraph (built with
 * -finstrument-functions and with -pg: flags.mk): a thread with a 512 MiB
 * stack calls down(600000), 600,001 nested calls, then leaf 10 times. The
 * calls past the limit go uncounted, the program runs as without memviz
 * and what follows the recursion is counted exactly. Prints "depth
 * 600000".
 */
#include <pthread.h>
#include <stdio.h>

#define DEPTH 600000

int down(int n)
{
    return n == 0 ? 0 : down(n - 1) + 1;
}

int leaf(int x)
{
    return x + 1;
}

void *deep(void *arg)
{
    int got = down(DEPTH);
    for (int i = 0; i < 10; i++)
        leaf(i);
    printf("depth %d\n", got);
    return arg;
}

int main(void)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 512u << 20);
    pthread_t t;
    if (pthread_create(&t, &a, deep, NULL) != 0)
        return 2;
    pthread_join(t, NULL);
    return 0;
}
