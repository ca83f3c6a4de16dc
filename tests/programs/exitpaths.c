/*
 * exitpaths MODE - leaves the process in the way MODE says, after allocating.
 *   exit_alloc    3 x malloc(100), frees the first: 3 allocations, 300 bytes,
 *                 200 leaked (2 blocks), 0 temporary
 *   atexit_alloc  malloc(64) from an atexit() handler, leaked: runs for
 *                 "return" and "exit" only
 *   quick_alloc   malloc(32) from an at_quick_exit() handler, leaked: runs for
 *                 "quick_exit" only
 * MODE         how it ends            status   handlers   totals (allocs / bytes / leaked / blocks)
 * return       return 10 from main    10       atexit     4 / 364 / 264 / 3
 * exit         exit(11)               11       atexit     4 / 364 / 264 / 3
 * _exit        _exit(12)              12       none       3 / 300 / 200 / 2
 * quick_exit   quick_exit(13)         13       quick      4 / 332 / 232 / 3
 * abort        abort()                SIGABRT  none       3 / 300 / 200 / 2
 * Anything else: exit status 2. Writes "exitpaths: MODE\n" first. No stdio.
 * (The first 32 atexit/at_quick_exit registrations use a static table in
 * glibc: no allocation.)
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *kept[4];

__attribute__((noinline)) void exit_alloc(void)
{
    void *a = malloc(100);
    kept[0] = malloc(100);
    kept[1] = malloc(100);
    if (!a || !kept[0] || !kept[1])
        abort();
    memset(a, 0, 100);
    free(a);
}

__attribute__((noinline)) void atexit_alloc(void)
{
    kept[2] = malloc(64);
}

__attribute__((noinline)) void quick_alloc(void)
{
    kept[3] = malloc(32);
}

static void on_exit_handler(void)
{
    atexit_alloc();
}

static void on_quick_exit_handler(void)
{
    quick_alloc();
}

static void say(const char *s)
{
    if (write(1, s, strlen(s)) < 0)
        _exit(99);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    const char *m = argv[1];
    if (strcmp(m, "return") && strcmp(m, "exit") && strcmp(m, "_exit") && strcmp(m, "quick_exit") &&
        strcmp(m, "abort"))
        return 2;
    if (atexit(on_exit_handler) != 0 || at_quick_exit(on_quick_exit_handler) != 0)
        return 3;
    exit_alloc();
    say("exitpaths: ");
    say(m);
    say("\n");
    if (!strcmp(m, "exit"))
        exit(11);
    if (!strcmp(m, "_exit"))
        _exit(12);
    if (!strcmp(m, "quick_exit"))
        quick_exit(13);
    if (!strcmp(m, "abort"))
        abort();
    return 10;
}
