/*
 * leakkinds - a heap graph built by hand, one of each of memcheck's leak
 * cases, for the exit snapshot's leak kinds (and memcheck's, on the same
 * program). No stdio: its buffers would be blocks of libc's.
 *
 * At exit (sizes in bytes; "->" a start pointer, "-?->" an interior one):
 *   still reachable  g_reach -> A(100) -> B(200); g_tls (TLS) -> T(150);
 *                    g_both and g_both2 -> S(50)                 500 in 4
 *   definitely lost  L(300), nothing points to it;
 *                    D1(400) -> D2(500) -> D3(600), nothing to D1;
 *                    C1(700) <-> C2(700), a cycle nothing points into;
 *                    E1(1000) -?-> E2(1100), nothing to E1      2400 in 4
 *   indirectly lost  D2, D3, one of C1 and C2, E2                2900 in 4
 *   possibly lost    g_inner -?-> P(900);
 *                    g_start -> Q(120) -?-> R(130)               1030 in 2
 *                    (Q is still reachable: 120 more in 1 block)
 * so still reachable 620 in 5.
 *
 * With an argument "mid", it also calls memviz_snapshot("mid") (when the
 * agent is there: the symbol is weak) while a block M(64) is held only by a
 * local variable, which the mid snapshot must find reachable.
 */
#include <stdlib.h>
#include <string.h>

void memviz_snapshot(const char *name) __attribute__((weak));

void *g_reach, *g_both, *g_both2, *g_start;
char *g_inner;
__thread void *g_tls;

static void *must(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    memset(p, 0, n);
    return p;
}

/* Writes through a volatile pointer, so that the stores happen even when
 * nothing reads them back. */
static void link(void *from, size_t off, void *to)
{
    *(void *volatile *)((char *)from + off) = to;
}

__attribute__((noinline)) static void reachable(void)
{
    g_reach = must(100);
    link(g_reach, 8, must(200));
    g_tls = must(150);
    g_both = must(50);
    g_both2 = g_both;
}

__attribute__((noinline)) static void definite(void)
{
    void *volatile lost = must(300);
    lost = NULL;
    void *d1 = must(400), *d2 = must(500), *d3 = must(600);
    link(d1, 0, d2);
    link(d2, 16, d3);
    void *c1 = must(700), *c2 = must(700);
    link(c1, 0, c2);
    link(c2, 0, c1);
    void *e1 = must(1000), *e2 = must(1100);
    link(e1, 32, (char *)e2 + 40);
}

__attribute__((noinline)) static void possible(void)
{
    g_inner = (char *)must(900) + 16;
    g_start = must(120);
    link(g_start, 0, (char *)must(130) + 40);
}

/* Overwrites the stack below main's frame, where the helpers' locals were:
 * a stale copy of a lost block's address must not make it look held. */
__attribute__((noinline)) static void scrub(void)
{
    volatile char junk[16384];
    memset((char *)junk, 0, sizeof(junk));
}

__attribute__((noinline)) static void mid_snapshot(void)
{
    void *volatile m = must(64);
    if (memviz_snapshot)
        memviz_snapshot("mid");
    free(m);
}

int main(int argc, char **argv)
{
    reachable();
    definite();
    possible();
    scrub();
    if (argc > 1 && !strcmp(argv[1], "mid"))
        mid_snapshot();
    scrub();
    return 0;
}
