/*
 * nofp - built with -O2 -fomit-frame-pointer (PROG_EXTRA_nofp in flags.mk):
 * no frame pointer chain to follow, and level2 keeps so many values alive
 * across its call that %rbp is used as an ordinary register. A correct
 * unwinder (DWARF CFI) still finds the whole chain:
 *   main -> level1 -> level2 -> level3 -> malloc(1000)      (frames[0] = level3)
 *   main -> level1 -> level2 -> level3 -> inl_alloc -> malloc(2000)
 *       inl_alloc is always_inline: its frame is an inlined frame of level3
 *       (frames[0] = inl_alloc with inlined true, frames[1] = level3).
 * Both blocks leak: 2 allocations, 3,000 bytes, 3,000 leaked. No stdio.
 * noipa keeps GCC from inlining, cloning or changing the functions'
 * signatures; the work after each call keeps them from being tail calls.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *sink[2];
volatile unsigned long seed = 12345;

static inline __attribute__((always_inline)) void *inl_alloc(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

__attribute__((noipa)) unsigned long level3(unsigned long x)
{
    sink[0] = malloc(1000);
    __asm__ volatile("" : : "r"(sink[0]) : "memory");
    sink[1] = inl_alloc(2000);
    if (!sink[0] || !sink[1])
        abort();
    return x * 3 + ((unsigned long)sink[0] & 1);
}

__attribute__((noipa)) unsigned long level2(unsigned long x)
{
    /* Many values live across the call: uses all callee-saved registers,
     * %rbp included. */
    unsigned long a = x * 7 + seed, b = x ^ seed, c = a * b + 1, d = a + b + c, e = d * 31 + seed,
                  f = e ^ (a << 3), g = f + c * 5;
    unsigned long r = level3(x + a + g);
    return r + a * 2 + b * 3 + c * 5 + d * 7 + e * 11 + f * 13 + g * 17;
}

__attribute__((noipa)) unsigned long level1(unsigned long x)
{
    unsigned long r = level2(x + 1);
    __asm__ volatile("" : : "r"(r) : "memory");
    return r + 1;
}

int main(void)
{
    unsigned long r = level1(seed);
    if (r == 0)
        seed = 1;
    static const char msg[] = "nofp: done\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    return 0;
}
