/*
 * forkcount - instruments across fork. Counter "jobs": the parent adds 3,
 * forks; the child adds 5 (8 in the child's count) and a stopwatch
 * "step" times 2 sections in the child, which exits 0; the parent waits
 * and adds 1 (4 in its count). Exits 0 when the child did.
 */
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../include/memviz.h"

static void pause_ms(long ms)
{
    struct timespec ts = {0, ms * 1000 * 1000};
    nanosleep(&ts, NULL);
}

int main(void)
{
    memviz_counter *jobs = memviz_counter_new("jobs");
    memviz_stopwatch *step = memviz_stopwatch_new("step");
    memviz_counter_add(jobs, 3);
    pause_ms(150); /* past the writer's period: the parent's trace has 3 */
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        memviz_counter_add(jobs, 5);
        for (int i = 0; i < 2; i++) {
            memviz_stopwatch_start(step);
            pause_ms(1);
            memviz_stopwatch_stop(step);
        }
        return 0;
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
        return 1;
    memviz_counter_add(jobs, 1);
    return 0;
}
