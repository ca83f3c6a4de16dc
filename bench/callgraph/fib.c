/* fib.c - deep recursion for bench/callgraph/run: the naive recursive
 * Fibonacci fib(N) (default 32), computed REPEAT times (default 1), every
 * call a real function call.
 *
 * fib(n) makes C(n) = 2 * fib(n + 1) - 1 calls of fib (C(0) = C(1) = 1), so
 * one fib(32) makes 7,049,155 of them; bench/callgraph/run checks the count
 * memviz callgraph reports against REPEAT * C(N).
 *
 * Every call of the recursion has a call path of its own (the sequence of
 * call sites from main differs for each), so a profiler that keys calling
 * contexts by the whole path makes C(N) of them for one fib(N); repeating
 * it walks the same paths again.
 *
 * usage: fib [N [REPEAT]]   prints fib(N) */
#include <stdio.h>
#include <stdlib.h>

/* noinline and noclone: one function, called as written (no recursive
 * inlining, no specialised clone under another name) */
__attribute__((noinline, noclone)) unsigned long fib(unsigned n)
{
    if (n < 2)
        return n;
    unsigned long a = fib(n - 1);
    unsigned long b = fib(n - 2);
    /* an opaque b: at -O2, gcc otherwise turns the second call into a loop
     * (tail recursion with an accumulator), and the plain build would make
     * a third of the calls the instrumented one makes */
    __asm__("" : "+r"(b));
    return a + b;
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 32;
    unsigned long rep = argc > 2 ? strtoul(argv[2], NULL, 10) : 1, r = 0;
    for (unsigned long i = 0; i < rep; i++)
        r += fib(n);
    printf("fib(%u) = %lu\n", n, rep ? r / rep : 0);
    return 0;
}
