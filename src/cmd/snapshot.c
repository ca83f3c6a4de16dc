/*
 * snapshot.c - `memviz snapshot PID [NAME]`: asks a running program that
 * memviz run started (or a descendant of it) to take a heap snapshot now,
 * and waits until it has. The request goes through the page memviz run
 * shares with its agents (src/trace/runpage.h), found through the
 * program's environment: no signal is sent, so the program's own signal
 * handling is never disturbed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "trace/runpage.h"
#include "util/fmt.h"

#define WAIT_S 30

/* The value of variable `name` in process pid's environment, or "". */
static void environ_of(int pid, const char *name, char *out, size_t cap)
{
    char path[64], buf[1 << 16];
    snprintf(path, sizeof(path), "/proc/%d/environ", pid);
    out[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = 0;
    size_t len = strlen(name);
    for (char *p = buf; p < buf + n; p += strlen(p) + 1)
        if (!strncmp(p, name, len) && p[len] == '=') {
            snprintf(out, cap, "%s", p + len + 1);
            return;
        }
}

/* The run page of pid: its descriptor, else its path. */
static struct mvz_run_page *page_of(int pid, size_t *size)
{
    char v[4096], path[4160];
    int fd = -1;
    environ_of(pid, "MEMVIZ_RUN_FD", v, sizeof(v));
    if (*v) {
        snprintf(path, sizeof(path), "/proc/%d/fd/%s", pid, v);
        fd = open(path, O_RDWR | O_CLOEXEC);
    }
    if (fd < 0) {
        environ_of(pid, "MEMVIZ_RUN_PAGE", v, sizeof(v));
        if (*v)
            fd = open(v, O_RDWR | O_CLOEXEC);
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || (uint64_t)st.st_size < mvz_run_page_size(1)) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return NULL;
    struct mvz_run_page *pg = p;
    if (pg->magic != MVZ_RUN_MAGIC || pg->version != MVZ_RUN_VERSION ||
        mvz_run_page_size(pg->nimages) > (uint64_t)st.st_size) {
        munmap(p, (size_t)st.st_size);
        return NULL;
    }
    *size = (size_t)st.st_size;
    return pg;
}

struct mvz_run_image *mvz_run_image_of(struct mvz_run_page *pg, int pid)
{
    uint32_t n = __atomic_load_n(&pg->claimed, __ATOMIC_ACQUIRE);
    struct mvz_run_image *last = NULL;
    for (uint32_t i = 0; i < n && i < pg->nimages; i++)
        if (pg->img[i].pid == pid &&
            __atomic_load_n(&pg->img[i].state, __ATOMIC_ACQUIRE) == MVZ_RUN_TRACING)
            last = &pg->img[i];
    return last;
}

int mvz_snapshot_request(struct mvz_run_image *im, int pid, const char *name, char *msg, size_t cap)
{
    uint32_t req = __atomic_load_n(&im->snap_req, __ATOMIC_ACQUIRE) + 1;
    char def[32];
    snprintf(def, sizeof(def), "command-%u", req);
    snprintf(im->snap_name, sizeof(im->snap_name), "%s", name && *name ? name : def);
    __atomic_store_n(&im->snap_req, req, __ATOMIC_RELEASE);
    struct timespec tick = {0, 5 * 1000 * 1000};
    for (int i = 0; i < WAIT_S * 200; i++) {
        if (__atomic_load_n(&im->snap_done, __ATOMIC_ACQUIRE) == req) {
            char a[32];
            snprintf(msg, cap, "snapshot \"%s\" of %d taken (the program paused %s); its trace: %s",
                     im->snap_name, pid, mvz_fmt_duration(im->snap_pause_ns, a, sizeof(a)),
                     im->trace);
            return 0;
        }
        if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
            snprintf(msg, cap, "process %d ended before taking the snapshot", pid);
            return -1;
        }
        nanosleep(&tick, NULL);
    }
    snprintf(msg, cap, "process %d did not take the snapshot within %d s", pid, WAIT_S);
    return -1;
}

static int usage(FILE *out)
{
    fprintf(out, "usage: memviz snapshot PID [NAME]\n"
                 "Takes a heap snapshot of PID, a program that memviz run started (or its\n"
                 "child; memviz run's own pid means the program it runs), named NAME\n"
                 "(default \"command-N\"); memviz leaks --snapshot NAME and the other\n"
                 "snapshot commands read it from the trace.\n");
    return out == stdout ? 0 : MVZ_EXIT_USAGE;
}

int cmd_snapshot(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
        return usage(stdout);
    if (argc < 2 || argc > 3)
        return mvz_usage_error("snapshot", "expects a pid and an optional name");
    char *end;
    long pid = strtol(argv[1], &end, 10);
    if (!*argv[1] || *end || pid <= 0 || pid > (1 << 22))
        return mvz_usage_error("snapshot", "'%s' is not a process id", argv[1]);
    const char *name = argc == 3 ? argv[2] : NULL;
    if (name && (!*name || strlen(name) >= sizeof(((struct mvz_run_image *)0)->snap_name)))
        return mvz_usage_error("snapshot", "a name of 1 to 63 bytes, please");
    if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
        mvz_error("no process %ld", pid);
        return 1;
    }
    size_t size;
    struct mvz_run_page *pg = page_of((int)pid, &size);
    if (!pg) { /* memviz run's own pid: the program it runs */
        char path[64], kids[64] = "";
        snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", pid, pid);
        FILE *f = fopen(path, "re");
        char comm[64] = "";
        snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
        FILE *c = fopen(path, "re");
        if (c && fgets(comm, sizeof(comm), c) && !strcmp(comm, "memviz\n") && f &&
            fgets(kids, sizeof(kids), f) && atol(kids) > 0) {
            pid = atol(kids);
            pg = page_of((int)pid, &size);
        }
        if (f)
            fclose(f);
        if (c)
            fclose(c);
    }
    struct mvz_run_image *im = pg ? mvz_run_image_of(pg, (int)pid) : NULL;
    if (!im) {
        mvz_error("process %ld is not being traced by memviz run (use the API, memviz_snapshot, "
                  "or memviz run --snapshot-on SIGNAL)",
                  pid);
        if (pg)
            munmap(pg, size);
        return 1;
    }
    char msg[512];
    int rc = mvz_snapshot_request(im, (int)pid, name, msg, sizeof(msg)) == 0 ? 0 : 1;
    if (rc)
        mvz_error("%s", msg);
    else
        printf("memviz: %s\n", msg);
    munmap(pg, size);
    return rc;
}
