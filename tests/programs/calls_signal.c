/*
 * calls_signal - signal handlers are entry points of their own, for
 * memviz run --callgraph (built with -finstrument-functions and with -pg:
 * flags.mk).
 *
 * main installs on_usr1 with signal() and on_usr2 with sigaction
 * (SA_SIGINFO, on an alternate stack), then calls deep1 -> deep2 twice;
 * deep2 raises SIGUSR1 and SIGUSR2 each time. on_usr1 calls handled once,
 * on_usr2 twice. So: (root) -> on_usr1 2 calls, (root) -> on_usr2 2,
 * on_usr1 -> handled 2, on_usr2 -> handled 4, main -> deep1 2, deep1 ->
 * deep2 2, and no handler under deep2. It prints "kept 1 1" when
 * sigaction and signal report its own handlers back.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int handled_calls;
static char alt[64 * 1024];

void handled(void)
{
    handled_calls++;
}

void on_usr1(int sig)
{
    (void)sig;
    handled();
}

void on_usr2(int sig, siginfo_t *info, void *uctx)
{
    (void)sig;
    (void)info;
    (void)uctx;
    handled();
    handled();
}

void deep2(void)
{
    raise(SIGUSR1);
    raise(SIGUSR2);
}

void deep1(void)
{
    deep2();
}

int main(void)
{
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof(alt), .ss_flags = 0};
    sigaltstack(&ss, NULL);
    signal(SIGUSR1, on_usr1);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_usr2;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGUSR2, &sa, NULL);
    deep1();
    deep1();
    struct sigaction old;
    sigaction(SIGUSR2, NULL, &old);
    void (*prev)(int) = signal(SIGUSR1, on_usr1);
    printf("kept %d %d\n", (old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_usr2,
           prev == on_usr1);
    return handled_calls == 6 ? 0 : 1;
}
