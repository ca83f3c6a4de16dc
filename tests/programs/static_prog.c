/*
 * static_prog - built with -static (see flags.mk): the dynamic loader never
 * runs, so the agent cannot be preloaded. It prints one line and exits 5, so
 * the test can check that memviz passes its output and status through.
 */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    void *volatile p = malloc(10);
    free(p);
    printf("static_prog: ran\n");
    return 5;
}
