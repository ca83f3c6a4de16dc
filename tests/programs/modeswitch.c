/*
 * modeswitch - a heap known exactly, for a run whose mode a live client
 * switches (POST /api/v1/mode). Steps, each after a line on stdin (the
 * first at once), each announced by a line on stdout:
 *
 *   "a": 1,000 blocks of 100 bytes kept                  (the run is full)
 *   "b": those 1,000 freed; 200,000 blocks of 100 bytes allocated, 100,000
 *        of them freed at once, 100,000 kept              (sampled)
 *   "c": the 100,000 freed; 500 blocks of 200 bytes allocated and never
 *        freed (100,000 bytes leaked)                     (full again)
 *
 * Then it exits 0. No other heap use after the start.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define A 1000
#define B 200000
#define C 500

static void *a[A], *b[B / 2];

static int wait_line(void)
{
    char c;
    while (read(0, &c, 1) == 1)
        if (c == '\n')
            return 1;
    return 0;
}

static void say(const char *what)
{
    if (write(1, what, 2) != 2)
        exit(2);
}

int main(void)
{
    for (int i = 0; i < A; i++)
        if (!(a[i] = malloc(100)))
            return 1;
    say("a\n");
    wait_line();
    for (int i = 0; i < A; i++)
        free(a[i]);
    for (int i = 0; i < B; i++) {
        void *p = malloc(100);
        if (!p)
            return 1;
        if (i % 2)
            free(p);
        else
            b[i / 2] = p;
    }
    say("b\n");
    wait_line();
    for (int i = 0; i < B / 2; i++)
        free(b[i]);
    for (int i = 0; i < C; i++) {
        void *volatile p = malloc(200);
        if (!p)
            return 1;
    }
    say("c\n");
    return 0;
}
