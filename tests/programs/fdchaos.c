/*
 * fdchaos - a program that closes every file descriptor it did not open
 * itself (as daemons and some spawners do: closefrom(3)) and then reuses the
 * low descriptor numbers for its own files. A profiler must neither lose the
 * allocations made after that nor write its data into the program's files.
 *
 *   before_close  2 x malloc(111), kept: 222 bytes
 *   closefrom(3); opens fdchaos.out (O_CREAT | O_TRUNC) in the current
 *   directory - it gets descriptor 3 - and more files on /dev/null
 *   after_close   1,000 x { malloc(64); free } then 3 x malloc(222) kept,
 *                 with a 300 ms pause in the middle so that any periodic
 *                 writer of the profiler runs while the descriptors are reused
 *                 1,003 allocations, 64,666 bytes, 666 leaked (3 blocks),
 *                 1,000 temporary
 *   then writes "payload\n" to fdchaos.out, closes it and reads it back:
 *   exit status 3 when its content is not exactly "payload\n" (someone else
 *   wrote into it), 0 otherwise.
 * Single-threaded, no stdio: totals 1,005 allocations, 1,000 frees, 64,888
 * bytes, peak 888 (222 + 666) , leaked 888 in 5 blocks, 1,000 temporary.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *kept[5];

__attribute__((noinline)) void before_close(void)
{
    kept[0] = malloc(111);
    kept[1] = malloc(111);
    if (!kept[0] || !kept[1])
        abort();
}

__attribute__((noinline)) void after_close(void)
{
    for (int i = 0; i < 1000; i++) {
        volatile char *p = malloc(64);
        if (!p)
            abort();
        p[0] = 1;
        free((void *)p);
        if (i == 500) {
            struct timespec ts = {0, 300 * 1000 * 1000};
            while (nanosleep(&ts, &ts) != 0) {
            }
        }
    }
    for (int i = 0; i < 3; i++) {
        kept[2 + i] = malloc(222);
        if (!kept[2 + i])
            abort();
    }
}

int main(void)
{
    before_close();
    closefrom(3);
    int fd = open("fdchaos.out", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 2;
    int nulls[8];
    for (int i = 0; i < 8; i++)
        nulls[i] = open("/dev/null", O_WRONLY);
    after_close();
    static const char payload[] = "payload\n";
    if (write(fd, payload, sizeof payload - 1) != (ssize_t)(sizeof payload - 1))
        return 2;
    for (int i = 0; i < 8; i++)
        if (nulls[i] >= 0)
            close(nulls[i]);
    char buf[256];
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    close(fd);
    if (n != (ssize_t)(sizeof payload - 1) || memcmp(buf, payload, sizeof payload - 1) != 0) {
        static const char msg[] = "fdchaos: fdchaos.out was written to by someone else\n";
        if (write(1, msg, sizeof msg - 1) < 0)
            return 1;
        return 3;
    }
    static const char msg[] = "fdchaos: done\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    return 0;
}
