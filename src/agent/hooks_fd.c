/*
 * hooks_fd.c - keeps the trace file descriptor out of the program's way.
 *
 * Daemons and spawners close every descriptor they did not open (closefrom,
 * close_range, or a loop of close) and then reuse the low numbers. The trace
 * descriptor is therefore moved high, the close family is hooked so that
 * the program cannot close it (closing it reports success, like closing any
 * other descriptor), and before every write the writer checks that the
 * descriptor still refers to the trace file, reopening the file by path if
 * something (dup2 onto it, a raw close syscall) took it away.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"

static dev_t trace_dev;
static ino_t trace_ino;

static int real_close(int fd)
{
    return (int)syscall(SYS_close, fd);
}

static int is_trace_fd(int fd)
{
    return fd >= 0 && fd == mvz_agent.writer.fd && mvz_agent.writer_ok;
}

int mvz_trace_fd_adopt(int fd)
{
    struct rlimit rl;
    int floor = 900;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)floor + 64)
        floor = rl.rlim_cur > 64 ? (int)rl.rlim_cur - 32 : 3;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (high >= 0) {
        real_close(fd);
        fd = high;
    }
    struct stat st;
    if (fstat(fd, &st) == 0) {
        trace_dev = st.st_dev;
        trace_ino = st.st_ino;
    }
    return fd;
}

void mvz_trace_fd_release(void)
{
    if (mvz_agent.writer.fd >= 0)
        real_close(mvz_agent.writer.fd);
    mvz_agent.writer.fd = -1;
}

/* Caller holds mvz_agent.lock. */
void mvz_trace_fd_check(void)
{
    struct stat st;
    int fd = mvz_agent.writer.fd;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == trace_dev && st.st_ino == trace_ino)
        return;
    int nfd = open(mvz_agent.path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (nfd < 0)
        return; /* the next write fails and is accounted as lost */
    mvz_agent.writer.fd = mvz_trace_fd_adopt(nfd);
}

MVZ_EXPORT int close(int fd)
{
    if (is_trace_fd(fd))
        return 0;
    return real_close(fd);
}

static int close_range_raw(unsigned first, unsigned last, int flags)
{
    if (first > last)
        return 0;
    return (int)syscall(SYS_close_range, first, last, flags);
}

MVZ_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    int fd = mvz_agent.writer.fd;
    if (!is_trace_fd(fd) || (unsigned)fd < first || (unsigned)fd > last)
        return close_range_raw(first, last, flags);
    int rc = fd > 0 ? close_range_raw(first, (unsigned)fd - 1, flags) : 0;
    if ((unsigned)fd < last) {
        int rc2 = close_range_raw((unsigned)fd + 1, last, flags);
        if (rc == 0)
            rc = rc2;
    }
    return rc;
}

MVZ_EXPORT void closefrom(int lowfd)
{
    int saved = errno;
    close_range(lowfd < 0 ? 0 : (unsigned)lowfd, ~0u, 0);
    errno = saved;
}

/* dup2/dup3 onto the trace descriptor: let the program have the number and
 * move the trace elsewhere first. */
static void vacate(int newfd)
{
    if (!is_trace_fd(newfd))
        return;
    mvz_tls.internal++;
    pthread_mutex_lock(&mvz_agent.lock);
    int moved = fcntl(newfd, F_DUPFD_CLOEXEC, newfd + 1);
    if (moved >= 0)
        mvz_agent.writer.fd = moved;
    pthread_mutex_unlock(&mvz_agent.lock);
    mvz_tls.internal--;
}

MVZ_EXPORT int dup2(int oldfd, int newfd)
{
    if (oldfd != newfd)
        vacate(newfd);
    return (int)syscall(SYS_dup2, oldfd, newfd);
}

MVZ_EXPORT int dup3(int oldfd, int newfd, int flags)
{
    if (oldfd != newfd)
        vacate(newfd);
    return (int)syscall(SYS_dup3, oldfd, newfd, flags);
}
