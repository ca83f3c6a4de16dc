/*
 * stop.c - stops the program's other threads while a heap snapshot is
 * taken, and reads their registers (snapshot.h's struct mvz_stop).
 *
 * A helper attaches to every other thread with ptrace (PTRACE_SEIZE, then
 * PTRACE_INTERRUPT): unlike a signal, that stops a thread whatever its
 * signal mask and wherever it is (inside malloc, the dynamic loader, a
 * system call), and gives its registers. A thread cannot trace its own
 * process, so the helper is a process of its own that shares our memory
 * (CLONE_VM, as LeakSanitizer's stop-the-world does): no page tables are
 * copied, and what it reads lands where the snapshot's copy finds it. The
 * program allows it with PR_SET_PTRACER (Yama). Where ptrace is refused,
 * nothing is stopped and the snapshot says how many threads ran on.
 *
 * Invariants: a stopped thread is resumed by the helper's detach, or by its
 * exit (a tracer's exit detaches its tracees), so no thread stays stopped
 * past mvz_stop_resume, nor past a helper that fails. The helper calls no
 * libc function that takes a lock (it runs beside threads that hold them).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/snapshot.h"

#define HELPER_STACK (256u << 10)
#define ATTACH_ROUNDS 8   /* re-reads of the thread list, for threads started meanwhile */
#define STOP_WAIT_MS 2000 /* for the helper to stop everything */

static void sys_exit(int code)
{
    syscall(SYS_exit, code);
    __builtin_unreachable();
}

static long rd(int fd, void *buf, size_t n)
{
    long r;
    while ((r = syscall(SYS_read, fd, buf, n)) < 0 && errno == EINTR)
        ;
    return r;
}

static void wr(int fd, char c)
{
    while (syscall(SYS_write, fd, &c, 1) < 0 && errno == EINTR)
        ;
}

static int seen(const struct mvz_stop *s, uint32_t tid)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (s->t[i].tid == tid)
            return 1;
    return 0;
}

/* Stops thread tid and reads its registers into the next slot; 0 when it
 * was not stopped (it exited, or ptrace is refused: -1). */
static int stop_one(struct mvz_stop *s, uint32_t tid)
{
    if (s->n >= MVZ_STOP_MAX)
        return 0;
    if (syscall(SYS_ptrace, PTRACE_SEIZE, tid, 0, 0) < 0)
        return errno == ESRCH ? 0 : -1;
    struct mvz_stopped *t = &s->t[s->n++];
    t->tid = tid;
    t->ok = 0;
    if (syscall(SYS_ptrace, PTRACE_INTERRUPT, tid, 0, 0) < 0)
        return 0; /* attached but not stopped: detached with the others */
    int status;
    while (syscall(SYS_wait4, tid, &status, __WALL, NULL) < 0 && errno == EINTR)
        ;
    struct iovec io = {t->regs, sizeof(t->regs)};
    if (syscall(SYS_ptrace, PTRACE_GETREGSET, tid, NT_PRSTATUS, &io) == 0)
        t->ok = 1;
    return 1;
}

int mvz_tasks_each(int pid, int (*fn)(void *ctx, uint32_t tid), void *ctx)
{
    char path[64] = "/proc/", digits[12];
    int nd = 0, len = 6;
    for (uint32_t v = (uint32_t)pid; v || !nd; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    while (nd)
        path[len++] = digits[--nd];
    memcpy(path + len, "/task", 6);
    int fd = (int)syscall(SYS_open, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[4096];
    int sum = 0;
    long got;
    while ((got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
        for (long off = 0; off < got;) {
            const char *name = buf + off + 19; /* struct linux_dirent64's d_name */
            unsigned short reclen;
            memcpy(&reclen, buf + off + 16, sizeof(reclen));
            off += reclen;
            uint32_t tid = 0;
            for (const char *c = name; *c >= '0' && *c <= '9'; c++)
                tid = tid * 10 + (uint32_t)(*c - '0');
            int r = tid ? fn(ctx, tid) : 0;
            if (r < 0) {
                syscall(SYS_close, fd);
                return -1;
            }
            sum += r;
        }
    syscall(SYS_close, fd);
    return sum;
}

static int stop_task(void *ctx, uint32_t tid)
{
    struct mvz_stop *s = ctx;
    if (tid == s->self || tid == s->skip || seen(s, tid))
        return 0;
    return stop_one(s, tid);
}

/* One pass over the program's threads: stops those not seen yet. Returns
 * how many were new, or -1 when ptrace is refused. */
static int stop_round(struct mvz_stop *s)
{
    return mvz_tasks_each(s->pid, stop_task, s);
}

static void detach_all(struct mvz_stop *s)
{
    for (uint32_t i = 0; i < s->n; i++)
        syscall(SYS_ptrace, PTRACE_DETACH, s->t[i].tid, 0, 0);
}

/* The helper: waits for the go, stops every other thread of the program
 * (listed by the program's pid: /proc/self is the helper's own), says so,
 * waits for the word to resume them, detaches. Runs on its own stack, in
 * our memory. */
static int helper_main(void *arg)
{
    struct mvz_stop *s = arg;
    char c;
    if (rd(s->go[0], &c, 1) != 1)
        sys_exit(1);
    int failed = 0;
    for (int round = 0; round < ATTACH_ROUNDS; round++) {
        int r = stop_round(s);
        if (r < 0) {
            failed = 1;
            break;
        }
        if (r == 0)
            break;
    }
    if (failed) {
        detach_all(s);
        s->n = 0;
    }
    wr(s->done[1], failed ? 'f' : 's');
    rd(s->go[0], &c, 1); /* resume (or the pipe closed: resume too) */
    detach_all(s);
    sys_exit(0);
    return 0;
}

/* Waits up to ms for one byte from fd; 0 when none came. */
static int read_within(int fd, char *c, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    int r;
    while ((r = (int)syscall(SYS_poll, &p, 1, ms)) < 0 && errno == EINTR)
        ;
    return r == 1 && rd(fd, c, 1) == 1;
}

static void end_helper(struct mvz_stop *s)
{
    if (s->go[1] >= 0)
        close(s->go[1]); /* a helper waiting for the word resumes and exits */
    if (s->helper > 0)
        while (waitpid(s->helper, NULL, __WALL) < 0 && errno == EINTR)
            ;
    close(s->go[0]);
    close(s->done[0]);
    close(s->done[1]);
    s->go[0] = s->go[1] = s->done[0] = s->done[1] = -1;
    s->helper = 0; /* the stack and the table are kept for the next snapshot */
}

/* The stopped threads' registers and the helper's stack: mapped once, the
 * agent's own (the copy reads the registers from its parameters, not as a
 * root), before the snapshot takes the lock of those ranges. */
static struct mvz_stopped *table;
static void *helper_stack;

int mvz_stop_prepare(void)
{
    if (!table) {
        void *p = mmap(NULL, MVZ_STOP_MAX * sizeof(*table), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return -1;
        mvz_owned_range(p, MVZ_STOP_MAX * sizeof(*table), 1);
        table = p;
    }
    if (!helper_stack) {
        void *p =
            mmap(NULL, HELPER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return -1;
        mvz_owned_range(p, HELPER_STACK, 1);
        helper_stack = p;
    }
    return 0;
}

int mvz_stop_others(struct mvz_stop *s, uint32_t self, uint32_t skip)
{
    memset(s, 0, sizeof(*s));
#if defined(__SANITIZE_THREAD__)
    /* the helper would run instrumented code on a thread ThreadSanitizer
     * does not know, with the taker's thread state */
    (void)self, (void)skip;
    return -1;
#endif
    s->go[0] = s->go[1] = s->done[0] = s->done[1] = -1;
    s->pid = getpid();
    s->self = self;
    s->skip = skip;
    if (!table || !helper_stack)
        return -1; /* mvz_stop_prepare failed */
    s->t = table;
    s->stack = helper_stack;
    if (pipe2(s->go, O_CLOEXEC) < 0 || pipe2(s->done, O_CLOEXEC) < 0) {
        end_helper(s);
        return -1;
    }
    /* no exit signal: the program's wait() never sees it */
    s->helper = clone(helper_main, (char *)s->stack + HELPER_STACK,
                      CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED, s);
    if (s->helper <= 0) {
        end_helper(s);
        return -1;
    }
    prctl(PR_SET_PTRACER, s->helper, 0, 0, 0); /* Yama: EINVAL where there is none */
    wr(s->go[1], 'g');
    char c = 0;
    if (!read_within(s->done[0], &c, STOP_WAIT_MS) || c != 's') {
        kill(s->helper, SIGKILL); /* its exit detaches whatever it stopped */
        end_helper(s);
        s->n = 0;
        return -1;
    }
    return 0;
}

void mvz_stop_resume(struct mvz_stop *s)
{
    if (s->helper > 0)
        wr(s->go[1], 'r');
    end_helper(s);
    prctl(PR_SET_PTRACER, 0, 0, 0, 0);
}
