/*
 * sighandler - allocations made from signal handlers.
 *   SIGUSR1, sent 5 times with raise() from main; usr1_handler calls
 *   handler_alloc: a = malloc(24); b = malloc(24); free(a); b is kept.
 *       handler_alloc: 10 allocations, 240 bytes, 120 leaked (5 blocks),
 *       0 temporary. raise() is synchronous, so each one runs the handler once
 *       before it returns; the stack goes handler_alloc <- usr1_handler <-
 *       (signal frame) <- raise internals <- main.
 *   SIGALRM from a POSIX timer (every 5 ms) aimed at the main thread only
 *   (SIGEV_THREAD_ID), while main waits in sigsuspend() and allocates nothing;
 *   alrm_handler calls alarm_alloc (malloc(16), kept) for its first 5 runs
 *   only, and disarms the timer on the 5th; later runs (a signal already
 *   pending) allocate nothing. So exactly:
 *       alarm_alloc: 5 allocations, 80 bytes, 80 leaked (5 blocks).
 * Single-threaded, no stdio, no allocation outside the handlers (glibc 2.34+
 * timer_create does not allocate for signal notification): totals 15
 * allocations, 5 frees, 320 bytes, leaked 200 in 10 blocks; peak 200 at the
 * last alarm_alloc (handler_alloc 120 + alarm_alloc 80); 0 temporary.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

static void *usr1_kept[5];
static volatile sig_atomic_t usr1_count;
static void *alarm_kept[5];
static volatile sig_atomic_t alarm_count;
static timer_t timer;

__attribute__((noinline)) void handler_alloc(void)
{
    void *a = malloc(24);
    void *b = malloc(24);
    if (!a || !b)
        abort();
    memset(a, 1, 24);
    free(a);
    usr1_kept[usr1_count++] = b;
}

__attribute__((noinline)) void alarm_alloc(void)
{
    alarm_kept[alarm_count] = malloc(16);
    if (!alarm_kept[alarm_count])
        abort();
}

__attribute__((noinline)) void usr1_handler(int sig)
{
    (void)sig;
    if (usr1_count < 5)
        handler_alloc();
}

__attribute__((noinline)) void alrm_handler(int sig)
{
    (void)sig;
    if (alarm_count >= 5)
        return;
    alarm_alloc();
    alarm_count++;
    if (alarm_count == 5) {
        struct itimerspec off;
        memset(&off, 0, sizeof off);
        timer_settime(timer, 0, &off, NULL);
    }
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = usr1_handler;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        return 1;
    for (int i = 0; i < 5; i++)
        raise(SIGUSR1);
    if (usr1_count != 5)
        return 2;

    sa.sa_handler = alrm_handler;
    if (sigaction(SIGALRM, &sa, NULL) != 0)
        return 1;
    sigset_t block, waitmask;
    sigemptyset(&block);
    sigaddset(&block, SIGALRM);
    if (sigprocmask(SIG_BLOCK, &block, &waitmask) != 0)
        return 1;
    sigdelset(&waitmask, SIGALRM);

    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGALRM;
    sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0)
        return 3;
    struct itimerspec its = {{0, 5 * 1000 * 1000}, {0, 5 * 1000 * 1000}};
    if (timer_settime(timer, 0, &its, NULL) != 0)
        return 3;
    while (alarm_count < 5)
        sigsuspend(&waitmask);
    timer_delete(timer);
    static const char msg[] = "sighandler: done\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    return 0;
}
