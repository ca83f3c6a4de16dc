/*
 * calls_dispatch - an interpreter's dispatch, for memviz run --callgraph
 * (flags.mk builds it with -finstrument-functions, and with -O2 -pg): one
 * function calling twelve others in a pseudo-random order, each of which
 * ends in a call of leaf (a tail call at -O2), and calling note from a
 * different site after each. The hooks' caches of a caller's last callees
 * and a callee's last sites miss here; the tables they make after a while
 * must count as exactly. Prints how many times each operation ran:
 * "ops N0 N1 ... N11" (dispatch's calls: their sum).
 */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))
#define OPS 12

static volatile long sink;

NOINLINE void leaf(long x)
{
    sink += x;
}

NOINLINE void note(int k)
{
    sink ^= k;
}

#define OP(n)                                                                                      \
    NOINLINE void op##n(long x)                                                                    \
    {                                                                                              \
        sink -= n;                                                                                 \
        leaf(x + n);                                                                               \
    }
OP(0)
OP(1)
OP(2)
OP(3)
OP(4)
OP(5)
OP(6)
OP(7)
OP(8)
OP(9)
OP(10)
OP(11)

NOINLINE void dispatch(int k, long x)
{
    switch (k) {
    case 0:
        op0(x);
        note(0);
        break;
    case 1:
        op1(x);
        note(1);
        break;
    case 2:
        op2(x);
        note(2);
        break;
    case 3:
        op3(x);
        note(3);
        break;
    case 4:
        op4(x);
        note(4);
        break;
    case 5:
        op5(x);
        note(5);
        break;
    case 6:
        op6(x);
        note(6);
        break;
    case 7:
        op7(x);
        note(7);
        break;
    case 8:
        op8(x);
        note(8);
        break;
    case 9:
        op9(x);
        note(9);
        break;
    case 10:
        op10(x);
        note(10);
        break;
    default:
        op11(x);
        note(11);
        break;
    }
    sink++; /* no tail call from here */
}

int main(void)
{
    unsigned long counts[OPS] = {0}, r = 12345;
    for (long i = 0; i < 20000; i++) {
        r = r * 6364136223846793005ul + 1442695040888963407ul;
        int k = (int)((r >> 33) % OPS);
        counts[k]++;
        dispatch(k, i);
    }
    printf("ops");
    for (int k = 0; k < OPS; k++)
        printf(" %lu", counts[k]);
    printf("\n");
    return 0;
}
