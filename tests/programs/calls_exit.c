/*
 * calls_exit - pthread_exit from deep frames and siglongjmp out of a
 * signal handler, for memviz run --callgraph (built with
 * -finstrument-functions and with -pg: flags.mk).
 *
 * A thread runs thr -> t_a -> t_b, and t_b calls pthread_exit. main calls
 * m_deep1 -> m_deep2, which raises SIGUSR1; the handler on_sig calls
 * h_work, then siglongjmps back into main, which then calls after_jump
 * (from main, not under the handler or m_deep2). Edges: (root) -> thr 1,
 * thr -> t_a 1, t_a -> t_b 1, (root) -> main 1, main -> m_deep1 1,
 * m_deep1 -> m_deep2 1, (root) -> on_sig 1, on_sig -> h_work 1, main ->
 * after_jump 1. Prints "thread 7 jumped 1".
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>

static sigjmp_buf back;
static int thread_value, jumped;

void t_b(void)
{
    thread_value = 7;
    pthread_exit(NULL);
}

void t_a(void)
{
    t_b();
}

void *thr(void *arg)
{
    t_a();
    return arg;
}

void h_work(void)
{
    jumped++;
}

void on_sig(int sig)
{
    (void)sig;
    h_work();
    siglongjmp(back, 1);
}

void m_deep2(void)
{
    raise(SIGUSR1);
}

void m_deep1(void)
{
    m_deep2();
}

void after_jump(void)
{
    jumped += 0;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, thr, NULL);
    pthread_join(t, NULL);
    signal(SIGUSR1, on_sig);
    if (!sigsetjmp(back, 1))
        m_deep1();
    after_jump();
    printf("thread %d jumped %d\n", thread_value, jumped);
    return 0;
}
