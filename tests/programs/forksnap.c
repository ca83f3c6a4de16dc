/*
 * forksnap - heap snapshots while another thread forks. No stdio.
 *
 * A forking thread forks FORKS children one after the other as fast as it
 * can; each child allocates and frees a block and leaves by _exit(0)
 * (no exit snapshot of its own), and the parent waits for it. Meanwhile
 * two churning threads allocate and free, and main takes SNAPS snapshots
 * ("fork-1" ...) through the weak memviz_snapshot, so forks land before,
 * during and after them. main keeps one 1,000-byte block in a global the
 * whole time. Writes "forksnap: N forks\n" and exits 0 when every child
 * exited 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FORKS 40
#define SNAPS 8

void memviz_snapshot(const char *name) __attribute__((weak));

void *g_kept;
static volatile int stop;
static int bad_children, forks;

static void *churn(void *arg)
{
    (void)arg;
    while (!stop) {
        void *volatile p = malloc(48);
        free(p);
    }
    return NULL;
}

static void *forker(void *arg)
{
    (void)arg;
    for (int i = 0; i < FORKS; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            void *volatile p = malloc(100);
            free(p);
            _exit(0);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad_children++;
        forks++;
    }
    return NULL;
}

int main(void)
{
    pthread_t t[3];
    g_kept = malloc(1000);
    pthread_create(&t[0], NULL, churn, NULL);
    pthread_create(&t[1], NULL, churn, NULL);
    pthread_create(&t[2], NULL, forker, NULL);
    for (int i = 1; i <= SNAPS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "fork-%d", i);
        if (memviz_snapshot)
            memviz_snapshot(name);
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_join(t[2], NULL);
    stop = 1;
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    char line[64];
    int n = snprintf(line, sizeof(line), "forksnap: %d forks\n", forks);
    if (write(1, line, (size_t)n) < 0)
        return 1;
    return bad_children ? 1 : 0;
}
