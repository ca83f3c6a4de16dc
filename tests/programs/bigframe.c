/*
 * bigframe - allocations under large frames (built with -O2
 * -fomit-frame-pointer, PROG_EXTRA_bigframe in flags.mk): each 20,000-byte
 * frame puts its CFA 20 KB above RSP, past a page of stack-clash probes,
 * innermost and mid-stack.
 *   main -> big_frame -> malloc(111), three times     (frames[0] = big_frame)
 *   main -> through_big -> small_leaf -> malloc(222)   (the big frame mid-stack)
 * All four blocks leak: 4 allocations, 555 bytes. No stdio.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *sink[4];

__attribute__((noipa)) void big_frame(int i)
{
    volatile char buf[20000];
    buf[0] = (char)i;
    sink[i] = malloc(111);
    buf[sizeof(buf) - 1] = (char)(buf[0] + 1);
    __asm__ volatile("" : : "r"(sink[i]) : "memory");
}

__attribute__((noipa)) void small_leaf(void)
{
    sink[3] = malloc(222);
    __asm__ volatile("" : : "r"(sink[3]) : "memory");
}

__attribute__((noipa)) void through_big(void)
{
    volatile char buf[20000];
    buf[0] = 1;
    small_leaf();
    buf[sizeof(buf) - 1] = (char)(buf[0] + 1);
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        big_frame(i);
    through_big();
    static const char msg[] = "bigframe: done\n";
    if (write(1, msg, sizeof(msg) - 1) < 0)
        return 1;
    return 0;
}
