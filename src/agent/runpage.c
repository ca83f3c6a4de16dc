/*
 * runpage.c - this image's entry in the page memviz run shares with its
 * process tree (src/trace/runpage.h): the numbers of the closing summary,
 * kept current by the writer so that memviz run never reads a trace to
 * print them.
 *
 * Without memviz run (bare LD_PRELOAD), or when the page cannot be found,
 * nothing here does anything. Nothing here may fail the program.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "trace/runpage.h"

static struct mvz_run_page *page;
static struct mvz_run_image *mine;
static struct mvz_run_counts counts; /* writer only (under mvz_agent.lock) */

static struct mvz_run_page *map_page(int fd)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < mvz_run_page_size(1))
        return NULL;
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return NULL;
    struct mvz_run_page *pg = p;
    if (pg->magic != MVZ_RUN_MAGIC || pg->version != MVZ_RUN_VERSION ||
        mvz_run_page_size(pg->nimages) > (uint64_t)st.st_size) {
        munmap(p, (size_t)st.st_size);
        return NULL;
    }
    mvz_owned_range(p, (size_t)st.st_size, 1);
    return pg;
}

/* The descriptor memviz run handed down (left open for descendants that
 * exec), or, when the program closed it or put something else there, the
 * same memfd through memviz run's /proc. */
static void find_page(void)
{
    const char *fds = getenv("MEMVIZ_RUN_FD");
    if (!fds || !*fds)
        return;
    int fd = atoi(fds);
    page = map_page(fd);
    if (!page) {
        const char *path = getenv("MEMVIZ_RUN_PAGE");
        int nfd = path ? open(path, O_RDWR | O_CLOEXEC) : -1;
        page = map_page(nfd);
        if (nfd >= 0)
            close(nfd); /* descendants find it the same way */
    }
}

/* Takes an entry for this image, naming the one that started it. */
static void claim(int parent)
{
    mine = NULL;
    memset(&counts, 0, sizeof(counts));
    uint32_t i = __atomic_fetch_add(&page->claimed, 1, __ATOMIC_RELAXED);
    if (i >= page->nimages)
        return;
    struct mvz_run_image *e = &page->img[i];
    e->pid = mvz_agent.pid;
    e->parent = parent;
    e->how = (uint32_t)(mvz_agent.parent_path[0] ? mvz_agent.child_how : 0);
    e->children = 0;
    if (strlen(mvz_agent.path) >= sizeof(e->trace))
        return; /* the entry stays unclaimed in effect: memviz run reads the trace */
    memcpy(e->trace, mvz_agent.path, strlen(mvz_agent.path) + 1);
    __atomic_store_n(&e->state, MVZ_RUN_TRACING, __ATOMIC_RELEASE);
    mine = e;
    char s[16];
    snprintf(s, sizeof(s), "%u", i);
    mvz_setenv("MEMVIZ_RUN_SLOT", s); /* descendants' parent */
}

/* At the start of an image that memviz run started (or whose ancestor it
 * started). Called once the trace path is known. */
void mvz_runpage_attach(void)
{
    find_page();
    if (!page)
        return;
    const char *ps = getenv("MEMVIZ_RUN_SLOT");
    long parent = ps && *ps && mvz_agent.parent_path[0] ? strtol(ps, NULL, 10) : -1;
    claim(parent >= 0 && parent < (long)page->nimages ? (int)parent : -1);
}

/* In a fork child: an entry of its own, whose parent is the forking image's. */
void mvz_runpage_after_fork_child(void)
{
    if (!page)
        return;
    int parent = mine ? (int)(mine - page->img) : -1;
    claim(parent);
}

/* The child's CHILD record reached the parent's trace. */
void mvz_runpage_child_announced(void)
{
    if (mine && mine->pid == mvz_agent.pid && mine->parent >= 0)
        __atomic_fetch_add(&page->img[mine->parent].children, 1, __ATOMIC_RELAXED);
}

uint64_t mvz_runpage_period_ns(void)
{
    return page ? __atomic_load_n(&page->period_ns, __ATOMIC_RELAXED) : 0;
}

struct mvz_run_counts *mvz_runpage_counts(void)
{
    return &counts;
}

int mvz_runpage_snapshot_request(char *name, size_t cap, uint32_t *req)
{
    if (!mine || mine->pid != mvz_agent.pid)
        return 0;
    uint32_t r = __atomic_load_n(&mine->snap_req, __ATOMIC_ACQUIRE);
    if (r == __atomic_load_n(&mine->snap_done, __ATOMIC_RELAXED))
        return 0;
    size_t n = strnlen(mine->snap_name, sizeof(mine->snap_name));
    n = n < cap - 1 ? n : cap - 1;
    memcpy(name, mine->snap_name, n);
    name[n] = 0;
    *req = r;
    return 1;
}

int mvz_runpage_sample_request(uint32_t *gen, uint64_t *rate)
{
    if (!page)
        return 0;
    *gen = __atomic_load_n(&page->sample_gen, __ATOMIC_ACQUIRE);
    *rate = __atomic_load_n(&page->sample_req, __ATOMIC_RELAXED);
    return *gen != 0;
}

void mvz_runpage_sample_done(uint32_t gen, uint64_t rate)
{
    if (!mine || mine->pid != mvz_agent.pid)
        return;
    mine->sample_now = rate;
    __atomic_store_n(&mine->sample_done, gen, __ATOMIC_RELEASE);
}

void mvz_runpage_snapshot_done(uint32_t req, uint64_t pause_ns)
{
    if (!mine || mine->pid != mvz_agent.pid)
        return;
    mine->snap_pause_ns = pause_ns;
    __atomic_store_n(&mine->snap_done, req, __ATOMIC_RELEASE);
}

/* Copies the counts into the entry. state: MVZ_RUN_TRACING while the
 * image runs; at its end, MVZ_RUN_ENDED, or MVZ_RUN_INEXACT when events
 * were lost (the trace then lacks them, and memviz run must read it). */
void mvz_runpage_publish(uint32_t state)
{
    if (!mine || mine->pid != mvz_agent.pid) /* a fork child that has no entry of its own */
        return;
    mine->n = counts;
    __atomic_store_n(&mine->state, state, __ATOMIC_RELEASE);
}
