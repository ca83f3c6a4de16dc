/*
 * calls_coro - a coroutine (ucontext) whose calls are left half-way while
 * the main stack runs on, for memviz run --callgraph (built with
 * -finstrument-functions and with -pg: flags.mk). The coroutine runs
 * co_main, which calls co_step three times, each yielding back to main
 * from inside co_inner; main resumes it three times, calling main_work
 * between. The program runs as without memviz and prints "steps 3 work 3";
 * every function's calls are counted: co_main 1, co_step 3, co_inner 3,
 * main_work 3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

static ucontext_t main_ctx, co_ctx;
static int steps, works;

__attribute__((noinline)) void co_inner(void)
{
    swapcontext(&co_ctx, &main_ctx);
}

__attribute__((noinline)) void co_step(void)
{
    steps++;
    co_inner();
}

__attribute__((noinline)) void co_main(void)
{
    for (int i = 0; i < 3; i++)
        co_step();
}

__attribute__((noinline)) void main_work(void)
{
    works++;
}

int main(void)
{
    size_t size = 256 * 1024;
    char *stack = malloc(size);
    getcontext(&co_ctx);
    co_ctx.uc_stack.ss_sp = stack;
    co_ctx.uc_stack.ss_size = size;
    co_ctx.uc_link = &main_ctx;
    makecontext(&co_ctx, co_main, 0);
    for (int i = 0; i < 3; i++) {
        swapcontext(&main_ctx, &co_ctx);
        main_work();
    }
    swapcontext(&main_ctx, &co_ctx); /* co_main returns: back here by uc_link */
    printf("steps %d work %d\n", steps, works);
    free(stack);
    return 0;
}
