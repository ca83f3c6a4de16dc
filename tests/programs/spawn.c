/*
 * spawn MODE [CHURN] - other ways of starting a program: MODE "exec" replaces
 * this process with churn (no fork); MODE "spawn" starts churn with
 * posix_spawn() (glibc: clone(CLONE_VM | CLONE_VFORK) + exec, no fork
 * handlers run) and waits for it; MODE "vfork" does the same with vfork() +
 * execv() (the child borrows the parent's memory until it execs). CHURN
 * defaults to "churn" next to /proc/self/exe. No stdio.
 *
 *   before_start  2 x malloc(500), kept: 2 allocations, 1,000 bytes
 *   after_spawn   malloc(300), kept ("spawn"/"vfork" modes, after churn ended)
 * "exec":  this image makes only before_start's 2 allocations, then becomes
 *          churn (same pid), whose exit status (0) is the process's.
 * "spawn", "vfork": 3 allocations, 1,300 bytes, peak 1,300, 1,300 leaked in 3 blocks
 *          (posix_spawn allocates nothing: its child stack is mmapped);
 *          exits 0 when churn exited 0, else 1. churn is a child process.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void *kept[3];

__attribute__((noinline)) void before_start(void)
{
    kept[0] = malloc(500);
    kept[1] = malloc(500);
    if (!kept[0] || !kept[1])
        abort();
}

__attribute__((noinline)) void after_spawn(void)
{
    kept[2] = malloc(300);
    if (!kept[2])
        abort();
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    char churn[PATH_MAX];
    if (argc > 2) {
        strncpy(churn, argv[2], sizeof churn - 1);
        churn[sizeof churn - 1] = 0;
    } else {
        ssize_t n = readlink("/proc/self/exe", churn, sizeof churn - 16);
        if (n <= 0)
            return 1;
        churn[n] = 0;
        char *slash = strrchr(churn, '/');
        strcpy(slash ? slash + 1 : churn, "churn");
    }
    char *args[] = {churn, NULL};

    before_start();
    if (strcmp(argv[1], "exec") == 0) {
        execv(churn, args);
        return 127;
    }
    pid_t pid;
    if (strcmp(argv[1], "spawn") == 0) {
        if (posix_spawn(&pid, churn, NULL, NULL, args, environ) != 0)
            return 1;
    } else if (strcmp(argv[1], "vfork") == 0) {
        pid = vfork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            execv(churn, args);
            _exit(127);
        }
    } else {
        return 2;
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return 1;
    after_spawn();
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 1;
    static const char msg[] = "spawn: ok\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    return 0;
}
