/*
 * churn - plain malloc/calloc/free churn with exactly known numbers.
 *
 * Single-threaded and free of stdio (output goes through write(2)), so the
 * process makes no allocation other than the ones below: the harness checks
 * the global summary exactly, not only per function.
 *
 * Timeline of live requested bytes (see tests/integration/run_tests.py):
 *   temp_loop      1000 x malloc(64), each freed at once      live 0 (max 64)
 *   leak_some      7 x malloc(123), never freed               live 861
 *   build_array    100 x malloc(1000)                         live 100,861
 *   calloc_blocks  50 x calloc(10, 20) = 200 bytes each       live 110,861  <- global peak
 *   free_array     frees the 100 blocks of build_array        live 10,861
 *   free_calloc    frees calloc blocks 0..29 (20 stay live)   live 4,861
 *   big_temp       malloc(50000), freed at once               live 4,861 (max 54,861)
 *   rss_touch      mmaps and touches 16 MiB (not heap) for 250 ms
 * at exit: 7 x 123 + 20 x 200 = 4,861 bytes in 27 blocks are leaked.
 *
 * With argument --echo-stdin it first copies up to 200 bytes of stdin to
 * stdout as "stdin: <data>" (read(2)/write(2) only).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void say(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void *array_blocks[100];
static void *calloc_ptrs[50];
static void *leaked[7];

__attribute__((noinline)) void temp_loop(void)
{
    for (int i = 0; i < 1000; i++) {
        volatile char *p = malloc(64);
        if (!p)
            abort();
        p[0] = (char)i;
        free((void *)p);
    }
}

__attribute__((noinline)) void leak_some(void)
{
    for (int i = 0; i < 7; i++) {
        leaked[i] = malloc(123);
        if (!leaked[i])
            abort();
        memset(leaked[i], i, 123);
    }
}

__attribute__((noinline)) void build_array(void)
{
    for (int i = 0; i < 100; i++) {
        array_blocks[i] = malloc(1000);
        if (!array_blocks[i])
            abort();
        memset(array_blocks[i], 0x5a, 1000);
    }
}

__attribute__((noinline)) void calloc_blocks(void)
{
    for (int i = 0; i < 50; i++) {
        calloc_ptrs[i] = calloc(10, 20);
        if (!calloc_ptrs[i])
            abort();
    }
}

__attribute__((noinline)) void free_array(void)
{
    for (int i = 0; i < 100; i++)
        free(array_blocks[i]);
}

__attribute__((noinline)) void free_calloc(void)
{
    for (int i = 0; i < 30; i++)
        free(calloc_ptrs[i]);
}

__attribute__((noinline)) void big_temp(void)
{
    volatile char *p = malloc(50000);
    if (!p)
        abort();
    p[49999] = 1;
    free((void *)p);
}

/* Raises the resident set size by 16 MiB without touching the heap, and keeps
 * it there long enough for any RSS sampler to see it. */
__attribute__((noinline)) void rss_touch(void)
{
    size_t len = 16u << 20;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        abort();
    memset(m, 1, len);
    struct timespec ts = {0, 250 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
    munmap(m, len);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--echo-stdin") == 0) {
        char buf[201];
        size_t got = 0;
        ssize_t r;
        while (got < 200 && (r = read(0, buf + got, 200 - got)) > 0)
            got += (size_t)r;
        buf[got] = 0;
        say(1, "stdin: ");
        say(1, buf);
    }
    temp_loop();
    leak_some();
    build_array();
    calloc_blocks();
    free_array();
    free_calloc();
    big_temp();
    rss_touch();
    say(1, "churn: done\n");
    say(2, "churn: stderr check\n");
    return 0;
}
