/*
 * stepper - a heap that grows in known steps, at its driver's pace. No
 * stdio (its buffers would be blocks too).
 *
 * For step i = 1, 2, ..., STEPS it keeps 10 more blocks of i * 1,000 bytes
 * (step_alloc), writes "step i\n" and waits for a line on stdin before
 * the next step; after the last it waits for one more line, frees every
 * block and exits 0. So after step i the live heap is 10,000 * i(i+1)/2
 * bytes in 10 * i blocks, exactly; at the end it is empty.
 *
 * Through the instrumentation API (declared weak: without memviz it runs
 * all the same), each step adds 1 to the counter "steps", sets the value
 * "step" to i and logs "step i"; the memviz's calls come before its
 * "step i" line. The stopwatch "waiting" times each wait for a line: at
 * step i, i - 1 sections are done. The tag "first" marks each step's first
 * block: i live at step i.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STEPS 5

typedef struct memviz_counter memviz_counter;
typedef struct memviz_value memviz_value;
memviz_counter *memviz_counter_new(const char *name) __attribute__((weak));
void memviz_counter_add(memviz_counter *c, long n) __attribute__((weak));
memviz_value *memviz_value_new(const char *name) __attribute__((weak));
void memviz_value_set(memviz_value *v, long x) __attribute__((weak));
memviz_value *memviz_value_new_string(const char *name) __attribute__((weak));
void memviz_value_poll(const char *name, long (*read)(void *ctx), void *ctx) __attribute__((weak));
void memviz_value_set_string(memviz_value *v, const char *s) __attribute__((weak));
void memviz_log(const char *fmt, ...) __attribute__((weak));
typedef struct memviz_tag memviz_tag;
memviz_tag *memviz_tag_new(const char *name) __attribute__((weak));
void memviz_tag_mark(memviz_tag *t, const void *block) __attribute__((weak));
typedef struct memviz_stopwatch memviz_stopwatch;
memviz_stopwatch *memviz_stopwatch_new(const char *name) __attribute__((weak));
void memviz_stopwatch_start(memviz_stopwatch *s) __attribute__((weak));
void memviz_stopwatch_stop(memviz_stopwatch *s) __attribute__((weak));

static void *kept[10 * STEPS];

/* The polled value "polls": how often memviz has read it. */
static long count_polls(void *ctx)
{
    static long n;
    (void)ctx;
    return ++n;
}

__attribute__((noinline)) static void step_alloc(int i)
{
    for (int k = 0; k < 10; k++) {
        kept[10 * (i - 1) + k] = malloc((size_t)i * 1000);
        if (!kept[10 * (i - 1) + k])
            abort();
        memset(kept[10 * (i - 1) + k], i, (size_t)i * 1000);
    }
}

/* Reads up to a newline; 0 at the end of input. */
static int wait_line(void)
{
    char c;
    ssize_t n;
    while ((n = read(0, &c, 1)) == 1)
        if (c == '\n')
            return 1;
    return 0;
}

int main(void)
{
    memviz_counter *steps = memviz_counter_new ? memviz_counter_new("steps") : NULL;
    memviz_value *step = memviz_value_new ? memviz_value_new("step") : NULL;
    memviz_stopwatch *waiting = memviz_stopwatch_new ? memviz_stopwatch_new("waiting") : NULL;
    memviz_tag *first = memviz_tag_new ? memviz_tag_new("first") : NULL;
    memviz_value *stage = memviz_value_new_string ? memviz_value_new_string("stage") : NULL;
    if (memviz_value_poll && getenv("STEPPER_POLL")) /* its poller thread allocates */
        memviz_value_poll("polls", count_polls, NULL);
    for (int i = 1; i <= STEPS; i++) {
        step_alloc(i);
        if (first)
            memviz_tag_mark(first, kept[10 * (i - 1)]);
        if (steps) {
            memviz_counter_add(steps, 1);
            memviz_value_set(step, i);
            memviz_log("step %d", i);
        }
        char line[16] = "step 0\n";
        line[5] = (char)('0' + i);
        if (stage) {
            line[6] = 0;
            memviz_value_set_string(stage, line); /* "step i" */
            line[6] = '\n';
        }
        if (write(1, line, 7) != 7)
            return 1;
        if (waiting)
            memviz_stopwatch_start(waiting);
        wait_line();
        if (waiting)
            memviz_stopwatch_stop(waiting);
    }
    wait_line();
    for (int k = 0; k < 10 * STEPS; k++)
        free(kept[k]);
    return 0;
}
