/*
 * stepper - a heap that grows in known steps, at its driver's pace. No
 * stdio (its buffers would be blocks too).
 *
 * For step i = 1, 2, ..., STEPS it keeps 10 more blocks of i * 1,000 bytes
 * (step_alloc), writes "step i\n" and waits for a line on stdin before
 * the next step; after the last it waits for one more line, frees every
 * block and exits 0. So after step i the live heap is 10,000 * i(i+1)/2
 * bytes in 10 * i blocks, exactly; at the end it is empty.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STEPS 5

static void *kept[10 * STEPS];

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
    for (int i = 1; i <= STEPS; i++) {
        step_alloc(i);
        char line[16] = "step 0\n";
        line[5] = (char)('0' + i);
        if (write(1, line, 7) != 7)
            return 1;
        wait_line();
    }
    wait_line();
    for (int k = 0; k < 10 * STEPS; k++)
        free(kept[k]);
    return 0;
}
