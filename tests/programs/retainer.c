/*
 * retainer - what keeps memory alive, every number known (heap snapshots'
 * `memviz retain`). No stdio. At exit:
 *   g_table -> buckets(512) -> 100 entries (48 each, made by table_insert),
 *              each -> its key (16, made by key_new): g_table retains 6,912
 *              bytes in 201 blocks; the entries' site 6,400 in 200 blocks.
 *   g_tls (thread-local) -> T(200): the TLS root retains 200.
 *   g_a and g_b -> S(400): each reaches it, neither retains it.
 * In the snapshot "mid" (memviz_snapshot, when the agent is there) also:
 *   a stack slot -> K(300): the stack retains 300; K is a suspect.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void memviz_snapshot(const char *name) __attribute__((weak));

struct entry {
    struct entry *next;
    char *key;
    uint64_t value, pad[3];
};
_Static_assert(sizeof(struct entry) == 48, "entries are 48 bytes");

struct entry **g_table;
void *g_a, *g_b;
__thread void *g_tls;

static void *must(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    memset(p, 0, n);
    return p;
}

__attribute__((noinline)) static char *key_new(int i)
{
    char *k = must(16);
    k[0] = (char)('a' + i % 26);
    return k;
}

__attribute__((noinline)) static void table_insert(int i)
{
    struct entry *e = must(sizeof(*e));
    e->key = key_new(i);
    e->value = (uint64_t)i;
    e->next = g_table[i % 64];
    g_table[i % 64] = e;
}

__attribute__((noinline)) static void build(void)
{
    g_table = must(64 * sizeof(*g_table));
    for (int i = 0; i < 100; i++)
        table_insert(i);
    g_tls = must(200);
    g_a = must(400);
    g_b = g_a;
}

__attribute__((noinline)) static void scrub(void)
{
    volatile char junk[8192];
    memset((char *)junk, 0, sizeof(junk));
}

__attribute__((noinline)) static void mid(void)
{
    void *volatile k = must(300);
    if (memviz_snapshot)
        memviz_snapshot("mid");
    free(k);
}

int main(void)
{
    build();
    scrub();
    mid();
    scrub();
    return 0;
}
