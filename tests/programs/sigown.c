/*
 * sigown - a program with its own signal handlers, and one that blocks every
 * signal: memviz must not change what it sees or does.
 *
 * "sigown handlers": handlers for SIGUSR1, SIGUSR2, SIGPIPE, SIGCHLD and
 * SIGSEGV are installed, then each signal happens once: raise(SIGUSR1),
 * raise(SIGUSR2), a write to a pipe without reader (SIGPIPE, write fails with
 * EPIPE), a child that exits (SIGCHLD), a store through a null pointer
 * (SIGSEGV; the handler siglongjmps back). It prints the counts and whether
 * the dispositions read back are the program's own handlers.
 *   in_handlers: 5 x malloc(100), never freed (500 bytes leaked).
 * "sigown blockall": every signal is blocked (sigprocmask) before anything
 * else; 2 threads (inheriting the mask) each do 1,000 x {malloc(64); free}
 * in blocked_churn, and blocked_leak leaks 4 x malloc(32) in main.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got_usr1, got_usr2, got_pipe, got_chld, got_segv;
static sigjmp_buf segv_jump;
static void *volatile leaks[8];

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        got_usr1++;
    else if (sig == SIGUSR2)
        got_usr2++;
    else if (sig == SIGPIPE)
        got_pipe++;
    else if (sig == SIGCHLD)
        got_chld++;
    else if (sig == SIGSEGV) {
        got_segv++;
        siglongjmp(segv_jump, 1);
    }
}

static int handler_is_ours(int sig)
{
    struct sigaction sa;
    return sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == on_signal;
}

__attribute__((noinline)) static void in_handlers(void)
{
    for (int i = 0; i < 5; i++)
        leaks[i] = malloc(100);
}

static int run_handlers(void)
{
    static const int sigs[] = {SIGUSR1, SIGUSR2, SIGPIPE, SIGCHLD, SIGSEGV};
    for (int i = 0; i < 5; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return 1;
    }
    in_handlers();
    raise(SIGUSR1);
    raise(SIGUSR2);
    int fds[2];
    if (pipe(fds) != 0)
        return 1;
    close(fds[0]);
    ssize_t w = write(fds[1], "x", 1);
    close(fds[1]);
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    while (waitpid(pid, NULL, 0) < 0)
        ;
    if (sigsetjmp(segv_jump, 1) == 0)
        *(volatile int *)(uintptr_t)0 = 1;
    int own = 1;
    for (int i = 0; i < 5; i++)
        own &= handler_is_ours(sigs[i]);
    printf("usr1=%d usr2=%d pipe=%d write=%s chld=%d segv=%d own=%d\n", (int)got_usr1,
           (int)got_usr2, (int)got_pipe, w < 0 ? "EPIPE" : "ok", (int)got_chld, (int)got_segv, own);
    return 0;
}

__attribute__((noinline)) static void blocked_churn(void)
{
    for (int i = 0; i < 1000; i++) {
        void *volatile p = malloc(64);
        free(p);
    }
}

static void *churn_thread(void *arg)
{
    (void)arg;
    blocked_churn();
    return NULL;
}

__attribute__((noinline)) static void blocked_leak(void)
{
    for (int i = 0; i < 4; i++)
        leaks[i] = malloc(32);
}

static int run_blockall(void)
{
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, churn_thread, NULL) != 0)
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    blocked_leak();
    sigset_t now;
    sigprocmask(SIG_SETMASK, NULL, &now);
    printf("still blocked: %s\n",
           sigismember(&now, SIGINT) && sigismember(&now, SIGSEGV) ? "yes" : "no");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "blockall"))
        return run_blockall();
    return run_handlers();
}
