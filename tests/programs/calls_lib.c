/*
 * calls_lib - a program linked with an instrumented library whose static
 * constructor runs before main (and may run before the agent's own), for
 * memviz run --callgraph (flags.mk). Edges: (root) -> lib_ctor 1, lib_ctor
 * -> lib_helper 1, (root) -> main 1, main -> lib_work 1, lib_work ->
 * lib_helper 5. Prints "done".
 */
#include <stdio.h>

void lib_work(int n);

int main(void)
{
    lib_work(5);
    printf("done\n");
    return 0;
}
