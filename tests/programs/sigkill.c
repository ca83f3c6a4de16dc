/*
 * sigkill - allocates, sleeps 300 ms, then sends itself SIGKILL: the agent
 * gets no chance to run anything at the end, so whatever it records must
 * already be on its way to the trace.
 *   kill_alloc  10 x malloc(100); frees the first 4: 10 allocations,
 *               1,000 bytes, 600 live when killed (6 blocks), 0 temporary
 * Single-threaded, no stdio: totals 10 allocations, 4 frees, 1,000 bytes,
 * peak 1,000, leaked 600 in 6 blocks. Exit: signal 9 (memviz run: 137).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *blocks[10];

__attribute__((noinline)) void kill_alloc(void)
{
    for (int i = 0; i < 10; i++) {
        blocks[i] = malloc(100);
        if (!blocks[i])
            abort();
        memset(blocks[i], i, 100);
    }
    for (int i = 0; i < 4; i++)
        free(blocks[i]);
}

int main(void)
{
    kill_alloc();
    static const char msg[] = "sigkill: sleeping\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    struct timespec ts = {0, 300 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
    kill(getpid(), SIGKILL);
    return 3; /* not reached */
}
