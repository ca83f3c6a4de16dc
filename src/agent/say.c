/*
 * say.c - where the agent's words go: one line each, starting "memviz:".
 *
 * The program's standard error is the program's: git forwards a server
 * process's stderr to its client, so a line of ours there reached a user as
 * "remote: memviz: ...". Under memviz run the lines go to memviz run's own
 * standard error instead, which memviz run hands down as a descriptor
 * (MEMVIZ_LOG_FD=FD:DEV:INO, kept open for exec'd images like the run page's)
 * and as a path through its /proc (MEMVIZ_LOG), for a program that closed
 * or reused that descriptor. Every line checks first that the descriptor
 * is still the one it was (device and inode), so that no line lands in a
 * file of the program's. Without memviz run, and when neither works, the
 * lines go to descriptor 2.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"

#define LOG_FD_FLOOR 1000

static int log_fd = -1;
static dev_t log_dev;
static ino_t log_ino;

static int still_ours(void)
{
    struct stat st;
    return log_fd >= 0 && fstat(log_fd, &st) == 0 && st.st_dev == log_dev && st.st_ino == log_ino;
}

/* memviz run's stderr through its /proc, on a descriptor of our own. */
static void reopen_log(void)
{
    const char *path = getenv("MEMVIZ_LOG");
    int fd = path && *path ? open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY) : -1;
    if (fd < 0)
        return;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, LOG_FD_FLOOR);
    close(fd);
    if (high < 0)
        return;
    log_fd = high;
    if (!still_ours()) { /* not what memviz run described: not ours to use */
        close(high);
        log_fd = -1;
    }
}

/* At start, before anything is said: the descriptor memviz run handed
 * down, if it is still what it described. */
void mvz_say_init(void)
{
    const char *v = getenv("MEMVIZ_LOG_FD");
    int fd;
    unsigned long dev, ino;
    log_fd = -1;
    if (!v || sscanf(v, "%d:%lu:%lu", &fd, &dev, &ino) != 3)
        return;
    log_fd = fd;
    log_dev = (dev_t)dev;
    log_ino = (ino_t)ino;
    if (!still_ours()) {
        log_fd = -1;
        reopen_log();
    }
}

void mvz_say(const char *msg, const char *arg)
{
    char line[4608];
    int n = snprintf(line, sizeof(line), "memviz: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    if (n <= 0)
        return;
    if (log_fd >= 0 && !still_ours()) {
        log_fd = -1;
        reopen_log();
    }
    (void)!write(log_fd >= 0 ? log_fd : 2, line,
                 (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}
