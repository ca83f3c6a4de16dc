/*
 * overflow - dies of a stack overflow after known allocations.
 *
 * keep_some: 3 x malloc(1000), never freed (3,000 bytes live at the crash).
 * Then recurse() calls itself without end, each frame holding 4 KiB, until
 * the stack runs out and the kernel sends SIGSEGV. With "thread" as argument
 * the recursion runs in a second thread, after that thread's own keep_one:
 * 1 x malloc(500), never freed (3,500 bytes live at the crash). The agent
 * gives a thread its alternate stack at its first allocation.
 * The trace must still be complete and say the process was killed by
 * SIGSEGV: the agent's handler runs on its alternate signal stack.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void *volatile kept[3];

__attribute__((noinline)) static void keep_some(void)
{
    for (int i = 0; i < 3; i++)
        kept[i] = malloc(1000);
}

__attribute__((noinline)) static int recurse(int depth)
{
    volatile char frame[4096];
    memset((char *)frame, depth & 0xff, sizeof(frame));
    return recurse(depth + 1) + frame[depth % sizeof(frame)];
}

static void *volatile kept_by_thread;

__attribute__((noinline)) static void keep_one(void)
{
    kept_by_thread = malloc(500);
}

static void *thread_main(void *arg)
{
    (void)arg;
    keep_one();
    recurse(0);
    return NULL;
}

int main(int argc, char **argv)
{
    keep_some();
    if (argc > 1 && !strcmp(argv[1], "thread")) {
        pthread_t t;
        pthread_create(&t, NULL, thread_main, NULL);
        pthread_join(t, NULL);
        return 0;
    }
    return recurse(0);
}
