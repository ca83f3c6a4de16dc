/*
 * branches - a call tree of known shape: from main, a full binary tree of
 * calls DEPTH deep (each call makes a call to left() and one to right()),
 * each of the 2^DEPTH leaves allocating once, 16 + (leaf % 64) bytes,
 * kept live to the end (leaked). 2^DEPTH distinct stacks, and a top-down
 * call tree of 2^(DEPTH+1) - 1 nodes below main: big enough to make the
 * web UI drop frames to stay under a size.
 *   branches [DEPTH]   (default 12, at most 16)
 */
#include <stdlib.h>

static void *kept[1 << 16];
static unsigned nkept;

static void left(int depth, unsigned path);
static void right(int depth, unsigned path);

static void branch(int depth, unsigned path)
{
    if (depth == 0) {
        kept[nkept++] = malloc(16 + (path % 64));
        return;
    }
    left(depth - 1, path << 1);
    right(depth - 1, (path << 1) | 1);
}

__attribute__((noinline)) static void left(int depth, unsigned path)
{
    branch(depth, path);
}

__attribute__((noinline)) static void right(int depth, unsigned path)
{
    branch(depth, path);
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 12;
    if (depth < 0 || depth > 16)
        return 2;
    branch(depth, 0);
    return nkept == (1u << depth) ? 0 : 1;
}
