/*
 * calls - a program whose call graph is known exactly, for memviz run
 * --callgraph (built with -finstrument-functions: flags.mk).
 *
 * Entry points: the static constructor ctor (calls leaf once), main, the
 * atexit handler at_end (calls leaf once), two threads running worker.
 * main, in order:
 *   leaf 10 times from one site;
 *   two_sites once, which calls leaf from two sites, once each;
 *   fib(12): 465 calls of fib, 464 of them from fib;
 *   qsort of 50 ints with compare, which counts its calls: printed as
 *   "compare N" (qsort is not instrumented: main -> compare, via qsort);
 *   apply(twice, 3) and apply(leaf, 2): one call site in apply calls
 *   twice 3 times and leaf twice;
 *   jump_outer once: it calls jump1 -> jump2 -> jump3, which longjmps
 *   back into jump_outer; jump_outer then calls after_jump once;
 *   make_block 5 times (64 bytes each), keep once (make_block 3 times,
 *   128 bytes each), nap once (sleeps 50 ms);
 *   two threads, each: worker calls leaf 100 times and make_block 7
 *   times (32 bytes), freeing what it made;
 *   deep_exit1 -> deep_exit2, which calls exit(0).
 * Every block make_block returns is freed but keep's 3 (384 bytes leaked).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int compares;
static jmp_buf jump_back;
static void *kept[3];

int leaf(int x)
{
    return x + 1;
}

int twice(int x)
{
    return 2 * x;
}

void two_sites(void)
{
    leaf(1);
    leaf(2);
}

int fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int compare(const void *a, const void *b)
{
    compares++;
    return *(const int *)a - *(const int *)b;
}

int apply(int (*f)(int), int n)
{
    int sum = 0;
    for (int i = 0; i < n; i++)
        sum += f(i);
    return sum;
}

void jump3(void)
{
    longjmp(jump_back, 1);
}

void jump2(void)
{
    jump3();
}

void jump1(void)
{
    jump2();
}

void after_jump(void)
{
    leaf(0);
}

void jump_outer(void)
{
    if (!setjmp(jump_back))
        jump1();
    after_jump();
}

void *make_block(size_t size)
{
    return malloc(size);
}

void keep(void)
{
    for (int i = 0; i < 3; i++)
        kept[i] = make_block(128);
}

void nap(void)
{
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

void *worker(void *arg)
{
    void *blocks[7];
    for (int i = 0; i < 100; i++)
        leaf(i);
    for (int i = 0; i < 7; i++)
        blocks[i] = make_block(32);
    for (int i = 0; i < 7; i++)
        free(blocks[i]);
    return arg;
}

void at_end(void)
{
    leaf(-1);
}

__attribute__((constructor)) void ctor(void)
{
    leaf(100);
}

void deep_exit2(void)
{
    exit(0);
}

void deep_exit1(void)
{
    deep_exit2();
}

int main(void)
{
    atexit(at_end);
    for (int i = 0; i < 10; i++)
        leaf(i);
    two_sites();
    fib(12);
    int v[50];
    for (int i = 0; i < 50; i++)
        v[i] = (i * 37) % 50;
    qsort(v, 50, sizeof(v[0]), compare);
    printf("compare %d\n", compares);
    fflush(stdout);
    apply(twice, 3);
    apply(leaf, 2);
    jump_outer();
    void *blocks[5];
    for (int i = 0; i < 5; i++)
        blocks[i] = make_block(64);
    for (int i = 0; i < 5; i++)
        free(blocks[i]);
    keep();
    nap();
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    deep_exit1();
    return 1;
}
