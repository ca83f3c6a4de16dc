/*
 * grower - a program that runs for a while and changes its heap in known
 * steps, for snapshots taken during the run (by signal, periodically, on
 * request). No stdio.
 *
 * Each of ROUNDS rounds (every STEP_MS ms) keeps 25 blocks of 100 bytes in
 * a global array (a steady grower: still reachable), replaces a cache
 * entry (a flat cache: 10 blocks of 200 bytes, always), and loses one
 * block of 77 bytes (definitely lost). It handles SIGUSR1 itself (counting
 * them): a snapshot signal of memviz's must not disturb it. It writes
 * "grower: N SIGUSR1\n" at the end; argv[1] is the number of rounds
 * (default 40).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STEP_MS 25
#define KEEP 25
#define CACHE 10

void **kept;
size_t nkept;
void *cache[CACHE];
static volatile sig_atomic_t usr1;

static void on_usr1(int sig)
{
    (void)sig;
    usr1++;
}

static void *must(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    memset(p, 1, n);
    return p;
}

__attribute__((noinline)) static void grow(void)
{
    for (int i = 0; i < KEEP; i++)
        kept[nkept++] = must(100);
}

__attribute__((noinline)) static void churn_cache(int round)
{
    int k = round % CACHE;
    free(cache[k]);
    cache[k] = must(200);
}

__attribute__((noinline)) static void lose(void)
{
    void *volatile p = must(77);
    p = NULL;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 40;
    signal(SIGUSR1, on_usr1);
    kept = must((size_t)rounds * KEEP * sizeof(void *));
    for (int i = 0; i < CACHE; i++)
        cache[i] = must(200);
    for (int r = 0; r < rounds; r++) {
        grow();
        churn_cache(r);
        lose();
        struct timespec ts = {0, STEP_MS * 1000000L};
        while (nanosleep(&ts, &ts) < 0)
            ;
    }
    char line[64] = "grower: ";
    int n = 8, v = (int)usr1, d = 1;
    while (v / d >= 10)
        d *= 10;
    for (; d; d /= 10)
        line[n++] = (char)('0' + v / d % 10);
    memcpy(line + n, " SIGUSR1\n", 9);
    return write(1, line, (size_t)n + 9) < 0;
}
