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

/* Handles, for code that keeps them: one dummy each kind. */
static char dummy;

memviz_counter *memviz_counter_new(const char *name)
{
    (void)name;
    return (memviz_counter *)&dummy;
}

void memviz_counter_add(memviz_counter *c, int64_t n)
{
    (void)c;
    (void)n;
}

memviz_value *memviz_value_new(const char *name)
{
    (void)name;
    return (memviz_value *)&dummy;
}

memviz_value *memviz_value_new_double(const char *name)
{
    (void)name;
    return (memviz_value *)&dummy;
}

void memviz_value_set(memviz_value *v, int64_t x)
{
    (void)v;
    (void)x;
}

void memviz_value_set_double(memviz_value *v, double x)
{
    (void)v;
    (void)x;
}

memviz_value *memviz_value_new_string(const char *name)
{
    (void)name;
    return (memviz_value *)&dummy;
}

void memviz_value_set_string(memviz_value *v, const char *s)
{
    (void)v;
    (void)s;
}

void memviz_log(const char *fmt, ...)
{
    (void)fmt;
}

void memviz_phase(const char *name)
{
    (void)name;
}

memviz_stopwatch *memviz_stopwatch_new(const char *name)
{
    (void)name;
    return (memviz_stopwatch *)&dummy;
}

void memviz_stopwatch_start(memviz_stopwatch *s)
{
    (void)s;
}

void memviz_stopwatch_stop(memviz_stopwatch *s)
{
    (void)s;
}

void memviz_value_poll(const char *name, int64_t (*read)(void *ctx), void *ctx)
{
    (void)name;
    (void)read;
    (void)ctx;
}

void memviz_table(const char *name, void (*fill)(void *ctx, struct memviz_table_stats *s),
                  void *ctx)
{
    (void)name;
    (void)fill;
    (void)ctx;
}

memviz_tag *memviz_tag_new(const char *name)
{
    (void)name;
    return (memviz_tag *)&dummy;
}

void memviz_tag_mark(memviz_tag *tag, const void *block)
{
    (void)tag;
    (void)block;
}
