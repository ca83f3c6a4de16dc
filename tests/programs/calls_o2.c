/*
 * calls_o2 - optimised code's calls, for memviz run --callgraph (built at
 * -O2 with -finstrument-functions and with -pg: flags.mk).
 *
 * rec(10) is a recursive function returning nothing, each level calling
 * work after the level below returned: at -O2 gcc makes its exit hook a
 * tail call, made after the frame is gone (the exit must still end that
 * level alone). mid(x) ends in a tail call of leaf (at -O2 a jump: in a
 * -pg build leaf's hook finds mid's return address already taken over),
 * and main calls mid from two places; with the real return addresses it
 * prints "a=4 b=70 work=10". Edges with -finstrument-functions: main ->
 * rec 1, rec -> rec 10, rec -> work 10, main -> mid 2, mid -> leaf 2. With
 * -pg the tail calls are jumps that end the caller's frame: main -> leaf
 * 2, and each rec ends by jumping to work, so work's calls are made by
 * rec's caller (rec -> work 9, main -> work 1).
 */
#include <stdio.h>

static volatile int works;

__attribute__((noinline)) void work(void)
{
    works++;
}

__attribute__((noinline)) void rec(int n)
{
    if (n > 0) {
        rec(n - 1);
        work();
    }
}

__attribute__((noinline)) int leaf(int x)
{
    return x * 2;
}

__attribute__((noinline)) int mid(int x)
{
    return leaf(x + 1);
}

int main(void)
{
    rec(10);
    int a = mid(1);
    int b = mid(34);
    printf("a=%d b=%d work=%d\n", a, b, works);
    return 0;
}
