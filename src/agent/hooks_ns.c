/*
 * hooks_ns.c - keeps the writer thread out of the way of calls that need a
 * single-threaded caller.
 *
 * The kernel refuses unshare(CLONE_NEWUSER) and setns() into a user or
 * mount namespace (EINVAL) to a process with more than one thread, and
 * the agent's writer thread would make every program one: bubblewrap,
 * `unshare --user` and rootless container tools failed under memviz. So
 * around such a call the writer thread drains the rings, ends and is
 * joined, and a new one starts once the call returned. The events of the
 * program's other threads (if it has any, the call fails anyway) wait in
 * their rings meanwhile.
 */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "agent/agent.h"

/* unshare(2): these need a process that is not threaded. */
#define UNSHARE_ALONE (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)

typedef int (*unshare_fn)(int);
typedef int (*setns_fn)(int, int);

/* Runs call(a, b) with the writer thread stopped. The kernel may count
 * the writer a little after it is joined (its task is released after it
 * wakes the joiner): an EINVAL is retried for a few milliseconds. */
static int alone(int (*call)(int, int), int a, int b)
{
    int paused = mvz_writer_pause();
    int rc = call(a, b);
    for (int i = 0; paused && rc < 0 && errno == EINVAL && i < 20; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        rc = call(a, b);
    }
    int e = errno;
    if (paused)
        mvz_writer_resume();
    errno = e;
    return rc;
}

static int call_unshare(int flags, int unused)
{
    (void)unused;
    static unshare_fn real;
    if (!real)
        real = (unshare_fn)mvz_dlsym_next("unshare");
    return real(flags);
}

static int call_setns(int fd, int nstype)
{
    static setns_fn real;
    if (!real)
        real = (setns_fn)mvz_dlsym_next("setns");
    return real(fd, nstype);
}

MVZ_EXPORT int unshare(int flags)
{
    if (!(flags & UNSHARE_ALONE))
        return call_unshare(flags, 0);
    return alone(call_unshare, flags, 0);
}

/* nstype 0 takes any namespace the descriptor names, a user or mount
 * namespace among them. */
MVZ_EXPORT int setns(int fd, int nstype)
{
    if (nstype && !(nstype & (CLONE_NEWUSER | CLONE_NEWNS)))
        return call_setns(fd, nstype);
    return alone(call_setns, fd, nstype);
}
