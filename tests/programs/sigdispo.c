/*
 * sigdispo - checks that the profiler is invisible in signal dispositions.
 * Programs decide what to do from them (CPython installs its
 * KeyboardInterrupt handler only where SIGINT is at the default), so every
 * signal must look as it would without the profiler: here, all at SIG_DFL,
 * whether asked with sigaction() or signal(). Then installs its own SIGSEGV
 * handler and checks that it is the one that runs.
 * Exit status: 0 when all is as expected, 1 + the index of the first signal
 * that looked different otherwise, 20 when its own handler did not run.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGILL,
                           SIGFPE, SIGABRT, SIGSYS, SIGTRAP, SIGUSR1, SIGPIPE};

static volatile sig_atomic_t handled;

static void on_segv(int sig)
{
    (void)sig;
    handled = 1;
}

int main(void)
{
    for (size_t i = 0; i < sizeof(sigs) / sizeof(*sigs); i++) {
        struct sigaction old;
        memset(&old, 0xff, sizeof(old));
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
            return 1 + (int)i;
        sighandler_t prev = signal(sigs[i], SIG_DFL);
        if (prev != SIG_DFL)
            return 1 + (int)i;
    }
    void *p = malloc(100); /* something to trace */
    signal(SIGSEGV, on_segv);
    raise(SIGSEGV);
    free(p);
    if (!handled)
        return 20;
    (void)!write(1, "sigdispo: ok\n", 13);
    return 0;
}
