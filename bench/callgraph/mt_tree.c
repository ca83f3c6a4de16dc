/* mt_tree.c - threads and allocations in deep call chains, for
 * bench/callgraph/run: T threads (default 4) each build a binary tree of
 * depth D (default 12: 4,095 nodes) R times (default 60), every node
 * allocated (malloc) by a chain of small functions under the recursion,
 * then walk it (a checksum, a small function per node) and free it
 * (recursively, a free per node).
 *
 * Each thread makes, per round, about 7 calls per node: build, node_new,
 * node_init, mix (twice: in build and in the walk), sum and release (plus
 * the calls on the empty children of the leaves); so about 4 * 60 * 4,095 *
 * 8 = 8 million calls and 1 million allocations in all with the defaults.
 * The threads' calling contexts repeat from round to round (the trees have
 * the same shape), unlike fib's.
 *
 * usage: mt_tree [THREADS [ROUNDS [DEPTH]]]   prints the checksum */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noclone))

struct node {
    struct node *left, *right;
    uint64_t key, payload[3];
};

static unsigned rounds = 60, depth = 12;

NOINLINE static uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    return x ^ (x >> 27);
}

NOINLINE static void node_init(struct node *n, uint64_t key)
{
    n->left = n->right = NULL;
    n->key = key;
    n->payload[0] = n->payload[1] = n->payload[2] = key;
}

NOINLINE static struct node *node_new(uint64_t key)
{
    struct node *n = malloc(sizeof(*n));
    if (!n)
        abort();
    node_init(n, key);
    return n;
}

NOINLINE static struct node *build(unsigned d, uint64_t key)
{
    if (!d)
        return NULL;
    struct node *n = node_new(mix(key));
    n->left = build(d - 1, key * 2);
    n->right = build(d - 1, key * 2 + 1);
    return n;
}

NOINLINE static uint64_t sum(const struct node *n)
{
    if (!n)
        return 0;
    uint64_t s = mix(n->key + n->payload[2]);
    s += sum(n->left);
    s ^= sum(n->right);
    return s;
}

NOINLINE static void release(struct node *n)
{
    if (!n)
        return;
    release(n->left);
    release(n->right);
    free(n);
}

static void *worker(void *arg)
{
    uint64_t seed = (uintptr_t)arg, total = 0;
    for (unsigned r = 0; r < rounds; r++) {
        struct node *t = build(depth, seed + r);
        total += sum(t);
        release(t);
    }
    return (void *)(uintptr_t)total;
}

int main(int argc, char **argv)
{
    unsigned nthreads = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
    if (argc > 2)
        rounds = (unsigned)atoi(argv[2]);
    if (argc > 3)
        depth = (unsigned)atoi(argv[3]);
    if (nthreads < 1 || nthreads > 64)
        nthreads = 4;
    pthread_t th[64];
    for (unsigned i = 0; i < nthreads; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1)))
            abort();
    uint64_t check = 0;
    for (unsigned i = 0; i < nthreads; i++) {
        void *v;
        pthread_join(th[i], &v);
        check ^= (uintptr_t)v;
    }
    printf("checksum %016llx\n", (unsigned long long)check);
    return 0;
}
