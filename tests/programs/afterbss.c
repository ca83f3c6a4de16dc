/*
 * afterbss - a root in memory the kernel merged into the agent's own data
 * mapping. Maps one anonymous page right after the last mapping of
 * libmemviz.so (its .bss), which the kernel merges into that mapping, and
 * keeps the only pointer to a 123-byte block there: the block is still
 * reachable, not lost. Prints "merged" when the page did join the
 * mapping (else "apart"), so a test knows it looked at the merged case.
 * Without the agent preloaded it prints "no agent".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The end of the mapping right after libmemviz.so's last one, if that is
 * anonymous and writable (the agent's .bss); 0 otherwise. */
static unsigned long agent_bss_end(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int after_agent = 0;
    unsigned long end = 0, lo, hi;
    while (f && fgets(line, sizeof(line), f)) {
        char perms[8], path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perms, path) < 3)
            continue;
        if (strstr(path, "libmemviz.so")) {
            after_agent = 1;
            end = 0;
        } else if (after_agent) {
            end = !path[0] && perms[1] == 'w' ? hi : 0;
            after_agent = 0;
        }
    }
    if (f)
        fclose(f);
    return end;
}

/* Whether addr lies in a mapping that starts below it. */
static int merged_at(unsigned long addr)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long lo, hi;
    int merged = 0;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < addr && addr < hi)
            merged = 1;
    if (f)
        fclose(f);
    return merged;
}

int main(void)
{
    unsigned long end = agent_bss_end();
    if (!end) {
        puts("no agent");
        return 0;
    }
    void **page = mmap((void *)end, 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (page == MAP_FAILED || (unsigned long)page != end) {
        puts("taken");
        return 0;
    }
    page[7] = malloc(123);
    puts(merged_at(end) ? "merged" : "apart");
    return 0;
}
