/*
 * env.c - the agent's variables in the environment that the processes the
 * program starts inherit (MEMVIZ_PARENT_TRACE, MEMVIZ_DIR,
 * MEMVIZ_RUN_SLOT), set without malloc.
 *
 * setenv(3) keeps its strings in a tree of malloc'd nodes that the
 * program's own setenv calls later extend. Made while the agent is running,
 * those nodes are not in the trace, and a heap snapshot does not scan
 * memory it does not know for pointers: the program's later nodes, held
 * only through them, looked lost (git: two 24-byte blocks "definitely
 * lost" that memcheck finds reachable). So the agent builds a new
 * environment array in memory mapped here, which a snapshot scans (it is
 * not the agent's own), and points `environ` at it. glibc's setenv then
 * leaves it alone (it reallocates only an array it made itself) and copies
 * it into a malloc'd one the next time the program sets a variable.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/agent.h"

extern char **environ;

static void *map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void mvz_setenv(const char *name, const char *value)
{
    size_t nlen = strlen(name), vlen = strlen(value), n = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    /* one mapping: the array (n entries, the new one, NULL), then the string */
    size_t bytes = (n + 2) * sizeof(char *) + nlen + vlen + 2;
    char **v = map(bytes);
    if (!v)
        return;
    char *s = (char *)(v + n + 2);
    memcpy(s, name, nlen);
    s[nlen] = '=';
    memcpy(s + nlen + 1, value, vlen + 1);
    size_t k = 0;
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, name, nlen) || (*e)[nlen] != '=')
            v[k++] = *e;
    v[k++] = s;
    v[k] = NULL;
    environ = v; /* the old array is left: the program may hold it */
}
