/*
 * memviz_stub.c - libmemviz-stub.so: include/memviz.h's functions, doing
 * nothing, for programs that call them and must also run without memviz.
 * Under memviz the agent, preloaded before this library, defines the same
 * functions and takes the calls.
 */
#include "../../include/memviz.h"

void memviz_snapshot(const char *name)
{
    (void)name;
}

void memviz_register_root(const void *p, size_t n)
{
    (void)p;
    (void)n;
}

void memviz_ignore(const void *block)
{
    (void)block;
}
