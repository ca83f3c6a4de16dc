/*
 * forkexec - a parent that allocates, a forked child that allocates and
 * exits, and a second forked child that execs the "churn" test program
 * (argv[1], or "churn" next to /proc/self/exe). No stdio anywhere.
 *
 * Parent:  parent_alloc  a = malloc(1111); b = malloc(1111); free(a)
 *                        2 allocations, 2,222 bytes, 1,111 leaked (1 block)
 *          parent_after  malloc(3333) after both children ended, leaked
 *          parent totals: 3 allocations, 1 free, 5,555 bytes, peak 4,444
 *          (1,111 + 3,333), leaked 4,444 in 2 blocks, 0 temporary.
 * Child 1 (fork, no exec): child_work  3 x malloc(2222), never freed, then
 *          exit(7): 3 allocations, 6,666 bytes, 6,666 leaked (3 blocks).
 * Child 2 (fork + exec churn): churn's own numbers (see churn.c), exit 0.
 * The parent exits 0 when child 1 exited with 7 and child 2 with 0, else 1.
 * stdout: churn's "churn: done\n" then "forkexec: ok\n".
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *s)
{
    if (write(1, s, strlen(s)) < 0)
        _exit(99);
}

static void *kept_parent[2];
static void *kept_child[3];

__attribute__((noinline)) void parent_alloc(void)
{
    void *a = malloc(1111);
    void *b = malloc(1111);
    if (!a || !b)
        abort();
    memset(a, 1, 1111);
    memset(b, 2, 1111);
    free(a);
    kept_parent[0] = b;
}

__attribute__((noinline)) void parent_after(void)
{
    kept_parent[1] = malloc(3333);
    if (!kept_parent[1])
        abort();
}

__attribute__((noinline)) void child_work(void)
{
    for (int i = 0; i < 3; i++) {
        kept_child[i] = malloc(2222);
        if (!kept_child[i])
            abort();
        memset(kept_child[i], i, 2222);
    }
}

int main(int argc, char **argv)
{
    char churn[PATH_MAX];
    if (argc > 1) {
        strncpy(churn, argv[1], sizeof churn - 1);
        churn[sizeof churn - 1] = 0;
    } else {
        ssize_t n = readlink("/proc/self/exe", churn, sizeof churn - 16);
        if (n <= 0)
            return 1;
        churn[n] = 0;
        char *slash = strrchr(churn, '/');
        strcpy(slash ? slash + 1 : churn, "churn");
    }

    parent_alloc();

    pid_t c1 = fork();
    if (c1 < 0)
        return 1;
    if (c1 == 0) {
        child_work();
        exit(7);
    }
    int st1 = 0;
    if (waitpid(c1, &st1, 0) != c1)
        return 1;

    pid_t c2 = fork();
    if (c2 < 0)
        return 1;
    if (c2 == 0) {
        char *args[] = {churn, NULL};
        execv(churn, args);
        _exit(127);
    }
    int st2 = 0;
    if (waitpid(c2, &st2, 0) != c2)
        return 1;

    parent_after();
    if (WIFEXITED(st1) && WEXITSTATUS(st1) == 7 && WIFEXITED(st2) && WEXITSTATUS(st2) == 0) {
        say("forkexec: ok\n");
        return 0;
    }
    say("forkexec: bad child status\n");
    return 1;
}
