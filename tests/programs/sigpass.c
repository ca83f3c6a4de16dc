/*
 * sigpass - a program that counts the signals it is sent, for the test that
 * `memviz run` passes signals sent to its own pid on to the program.
 *
 * "sigpass count N": handlers for SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1
 * and SIGUSR2 count what arrives. The program allocates (8 x malloc(100),
 * freed), prints "sigpass: ready" and waits until N signals have arrived
 * in all (or 20 s have passed), then prints one line per signal number
 * with its count, e.g. "SIGTERM 1", in the order above, and exits with
 * status 3.
 * "sigpass default": prints "sigpass: ready" and sleeps (up to 20 s) with
 * every disposition at its default, so that SIGTERM kills it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
static const char *const names[] = {"SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"};
#define NSIGS (sizeof(sigs) / sizeof(sigs[0]))
static volatile sig_atomic_t counts[NSIGS], total;

static void on_signal(int sig)
{
    for (size_t i = 0; i < NSIGS; i++)
        if (sigs[i] == sig)
            counts[i]++;
    total++;
}

static void ready(void)
{
    void *p[8];
    for (int i = 0; i < 8; i++)
        p[i] = malloc(100);
    for (int i = 0; i < 8; i++)
        free(p[i]);
    printf("sigpass: ready\n");
}

static void nap(void)
{
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0); /* no buffer allocated: exact totals */
    if (argc == 3 && !strcmp(argv[1], "count")) {
        int want = atoi(argv[2]);
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        for (size_t i = 0; i < NSIGS; i++)
            sigaction(sigs[i], &sa, NULL);
        ready();
        for (int i = 0; i < 2000 && total < want; i++)
            nap();
        for (int i = 0; i < 10; i++) /* a signal sent twice would arrive by now */
            nap();
        for (size_t i = 0; i < NSIGS; i++)
            if (counts[i])
                printf("%s %d\n", names[i], (int)counts[i]);
        return 3;
    }
    if (argc == 2 && !strcmp(argv[1], "default")) {
        ready();
        for (int i = 0; i < 2000; i++)
            nap();
        return 0;
    }
    fprintf(stderr, "usage: sigpass count N | sigpass default\n");
    return 2;
}
