/*
 * stacks - 4,096 distinct call stacks leading to the same allocation line.
 * walk(i, 12) descends 12 levels; at level k it goes through step_a or step_b
 * depending on bit k-1 of i, then alloc_leaf mallocs 8 bytes, which the caller
 * frees at once. Every i in 0..4095 thus has its own stack:
 *   alloc_leaf  4,096 allocations, 32,768 bytes, all temporary, in 4,096
 *               sites of exactly 1 allocation each, every one with 12
 *               step_a/step_b frames between alloc_leaf and walk_all
 * Single-threaded, no stdio: totals 4,096 allocations, 4,096 frees, 32,768
 * bytes, peak 8, nothing leaked, 4,096 temporary.
 *
 * `stacks R` walks all 4,096 stacks R times over: every site then has R
 * allocations, and the totals are R times the above (peak still 8). With
 * R = 40 the agent's per-thread stack cache misses on most of the 163,840
 * lookups and grows twice while the run goes on.
 */
#include <stdlib.h>
#include <unistd.h>

void *dispatch(unsigned i, int k);

__attribute__((noinline)) void *alloc_leaf(void)
{
    return malloc(8);
}

__attribute__((noinline)) void *step_a(unsigned i, int k)
{
    void *p = dispatch(i, k);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

__attribute__((noinline)) void *step_b(unsigned i, int k)
{
    void *p = dispatch(i, k);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

__attribute__((noinline)) void *dispatch(unsigned i, int k)
{
    void *p;
    if (k == 0)
        p = alloc_leaf();
    else if ((i >> (k - 1)) & 1)
        p = step_a(i, k - 1);
    else
        p = step_b(i, k - 1);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

__attribute__((noinline)) void walk_all(unsigned rounds)
{
    for (unsigned n = 0; n < rounds * 4096u; n++) {
        unsigned i = n % 4096u;
        void *p = dispatch(i, 12);
        if (!p)
            abort();
        free(p);
    }
}

int main(int argc, char **argv)
{
    walk_all(argc > 1 ? (unsigned)atoi(argv[1]) : 1);
    static const char msg[] = "stacks: done\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    return 0;
}
