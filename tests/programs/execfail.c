/*
 * execfail - an exec that fails must not end the trace: the program goes
 * on, and so must the recording.
 *   before_exec: 1,000 x { malloc(32); free }   (1,000 temporaries)
 *   execv("/nonexistent/program") fails
 *   after_exec:  100 x malloc(500), kept: 50,000 bytes leaked
 * Single-threaded, no stdio: 1,100 allocations, 1,000 frees, peak 50,000.
 */
#include <stdlib.h>
#include <unistd.h>

static void *kept[100];

__attribute__((noinline)) void before_exec(void)
{
    for (int i = 0; i < 1000; i++) {
        volatile char *p = malloc(32);
        p[0] = 1;
        free((void *)p);
    }
}

__attribute__((noinline)) void after_exec(void)
{
    for (int i = 0; i < 100; i++)
        kept[i] = malloc(500);
}

int main(void)
{
    before_exec();
    char *argv[] = {"program", NULL};
    execv("/nonexistent/program", argv);
    after_exec();
    (void)!write(1, "execfail: went on\n", 18);
    return 0;
}
