/*
 * mtfork - forks and runs system() while other threads allocate.
 *
 * Two threads run thread_churn: 20,000 x {malloc(48); free} each, never
 * leaking. Meanwhile main, 3 times: fork; the child runs child_work (10 x
 * malloc(77), never freed) and exits with status 0 via exit(); the parent
 * waits. Then system("exit 3") runs /bin/sh (traced as a fork child that
 * execs), and main checks it returned status 3. main_leak: 2 x malloc(1234).
 * Prints "mtfork: ok" when every child exited as expected.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile leaks[16];

__attribute__((noinline)) static void thread_churn(void)
{
    for (int i = 0; i < 20000; i++) {
        void *volatile p = malloc(48);
        free(p);
    }
}

static void *thread_main(void *arg)
{
    (void)arg;
    thread_churn();
    return NULL;
}

__attribute__((noinline)) static void child_work(void)
{
    for (int i = 0; i < 10; i++)
        leaks[i] = malloc(77);
}

__attribute__((noinline)) static void main_leak(void)
{
    for (int i = 0; i < 2; i++)
        leaks[i] = malloc(1234);
}

int main(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, thread_main, NULL) != 0)
            return 1;
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            child_work();
            exit(0);
        }
        int st;
        ok &= waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    int rc = system("exit 3");
    ok &= WIFEXITED(rc) && WEXITSTATUS(rc) == 3;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    main_leak();
    printf("mtfork: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
