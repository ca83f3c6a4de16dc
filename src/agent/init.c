/*
 * init.c - the agent's life cycle: reads its configuration from the
 * environment, creates this image's trace file, writes the PROCESS record,
 * and at the end writes the final records so the trace is complete.
 *
 * Environment (set by `memviz run`, or by hand with LD_PRELOAD):
 *   MEMVIZ_OUTPUT=FILE     trace of the first image; consumed (unset) so that
 *                          descendants do not overwrite it
 *   MEMVIZ_DIR=DIR         where descendants' traces go (default: FILE's dir,
 *                          or the working directory); made absolute by the
 *                          first image
 *   MEMVIZ_DEPTH=N         stack depth cap (default 256, at most 1024)
 *   MEMVIZ_FOLLOW=0        do not trace children (fork or exec)
 *   MEMVIZ_GROUPS=auto|always|never
 *                          when the events of one time unit of several
 *                          threads are written thread by thread (collector.c;
 *                          never: always in the order they happened)
 *   MEMVIZ_ADDRESSES=1     ADDRS records: the address of every block (the
 *                          heap map at any moment, the heat map)
 *   MEMVIZ_PARENT_TRACE    set by the agent for descendants: the trace that
 *                          gets a CHILD record naming theirs
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "agent/addrmap.h"
#include "agent/agent.h"
#include "agent/ring.h"
#include "agent/snapshot.h"
#include "trace/runpage.h"

struct mvz_agent mvz_agent = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .meta_lock = PTHREAD_MUTEX_INITIALIZER,
    .write_lock = PTHREAD_MUTEX_INITIALIZER,
    .ring_grow_after = RING_GROW_AFTER,
};
__thread struct mvz_tls mvz_tls __attribute__((tls_model("initial-exec")));

uint64_t mvz_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *program_name(char *buf, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return "prog";
    exe[n] = 0;
    const char *base = strrchr(exe, '/');
    snprintf(buf, cap, "%.200s", base ? base + 1 : exe);
    return buf;
}

static void dir_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, cap, ".");
    else if (slash == path)
        snprintf(out, cap, "/");
    else
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

/* Creates a fresh trace file for a descendant image in MEMVIZ_DIR, named
 * memviz.PROG.PID.mvz, or with a numeric suffix when an earlier image of
 * the same pid (before an exec) already took that name. */
int mvz_open_descendant_trace(void)
{
    const char *dir = getenv("MEMVIZ_DIR");
    char name[256];
    program_name(name, sizeof(name));
    for (int i = 0; i < 100; i++) {
        if (i == 0)
            snprintf(mvz_agent.path, sizeof(mvz_agent.path), "%s/memviz.%s.%d.mvz", dir ? dir : ".",
                     name, (int)mvz_agent.pid);
        else
            snprintf(mvz_agent.path, sizeof(mvz_agent.path), "%s/memviz.%s.%d.%d.mvz",
                     dir ? dir : ".", name, (int)mvz_agent.pid, i);
        int fd = open(mvz_agent.path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

/* path made absolute against the working directory (left as it is when
 * that is unknown). */
static void absolute_path(const char *path, char *out, size_t cap)
{
    char cwd[PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof(cwd))) {
        snprintf(out, cap, "%s", path);
        return;
    }
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    int n = !strcmp(path, ".") || !*path
                ? snprintf(out, cap, "%s", cwd)
                : snprintf(out, cap, "%s/%s", strcmp(cwd, "/") ? cwd : "", path);
    if (n < 0 || (size_t)n >= cap) /* too long: as it was given */
        snprintf(out, cap, "%s", path);
}

/* The first image fixes where every descendant's trace goes, as an
 * absolute directory: a child that changes directory first (make -C, git's
 * pack-objects) would otherwise put its trace, or fail to, relative to its
 * new working directory. MEMVIZ_DIR, else the first trace's directory. */
static void fix_trace_dir(const char *first_trace)
{
    const char *dir = getenv("MEMVIZ_DIR");
    char rel[PATH_MAX], abs[PATH_MAX];
    if (dir && *dir)
        snprintf(rel, sizeof(rel), "%s", dir);
    else
        dir_of(first_trace, rel, sizeof(rel));
    absolute_path(rel, abs, sizeof(abs));
    mvz_setenv("MEMVIZ_DIR", abs);
}

/* Decides this image's trace path and opens it. Returns the fd or -1.
 * Every path it records or hands on is absolute, so that reports open
 * them from any directory. */
int mvz_open_trace(void)
{
    const char *out = getenv("MEMVIZ_OUTPUT");
    const char *parent = getenv("MEMVIZ_PARENT_TRACE");
    if (!(parent && *parent))
        fix_trace_dir(out && *out ? out : "./first");
    if (out && *out && !(parent && *parent)) {
        absolute_path(out, mvz_agent.path, sizeof(mvz_agent.path));
        return open(mvz_agent.path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    }
    if (parent && *parent) {
        snprintf(mvz_agent.parent_path, sizeof(mvz_agent.parent_path), "%s", parent);
        mvz_agent.child_how = MVZ_CHILD_EXEC;
    }
    return mvz_open_descendant_trace();
}

/* The command line: the complete arguments among the first ARGV_KEEP
 * bytes of /proc/self/cmdline (NUL-separated), and the number of arguments
 * in all, which goes after the record's other fields so that readers can
 * say how many were cut (a link of 40,000 object files). */
#define ARGV_KEEP ((size_t)256 << 10)

static uint64_t put_argv(struct mvz_buf *b)
{
    struct mvz_buf raw = {0};
    uint64_t total = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    char chunk[4096];
    ssize_t k;
    while (fd >= 0 && (k = read(fd, chunk, sizeof(chunk))) > 0) {
        for (ssize_t i = 0; i < k; i++)
            total += chunk[i] == 0;
        if (raw.len < ARGV_KEEP)
            mvz_put_bytes(&raw, chunk,
                          (size_t)k < ARGV_KEEP - raw.len ? (size_t)k : ARGV_KEEP - raw.len);
    }
    if (fd >= 0)
        close(fd);
    uint64_t kept = 0;
    for (size_t i = 0; i < raw.len; i++)
        kept += raw.data[i] == 0;
    mvz_put_uvarint(b, kept);
    for (size_t i = 0, n = 0; n < kept; n++) {
        size_t len = strlen((const char *)raw.data + i);
        mvz_put_uvarint(b, len);
        mvz_put_bytes(b, raw.data + i, len);
        i += len + 1;
    }
    mvz_buf_free(&raw);
    return total;
}

void mvz_write_process_record(void)
{
    struct mvz_buf b = {0};
    char exe[PATH_MAX] = "", cwd[PATH_MAX] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0)
        exe[n] = 0;
    if (!getcwd(cwd, sizeof(cwd)))
        cwd[0] = 0;
    mvz_put_uvarint(&b, (uint64_t)mvz_agent.pid);
    mvz_put_uvarint(&b, (uint64_t)getppid());
    mvz_put_uvarint(&b, realtime_ns());
    mvz_put_uvarint(&b, mvz_agent.start_ns);
    mvz_put_uvarint(&b, (uint64_t)sysconf(_SC_PAGESIZE));
    mvz_put_uvarint(&b, (uint64_t)mvz_agent.depth);
    mvz_put_uvarint(&b, (uint64_t)(mvz_agent.parent_path[0] ? mvz_agent.child_how : 0));
    mvz_put_str(&b, mvz_agent.parent_path);
    mvz_put_str(&b, exe);
    mvz_put_str(&b, cwd);
    uint64_t argc_total = put_argv(&b);
    mvz_put_uvarint(&b, argc_total); /* format 5.1 */
    mvz_write_record(MVZ_REC_PROCESS, &b);
    mvz_buf_free(&b);
}

/* Appends a CHILD record to the parent's trace: one chunk, one write, on an
 * O_APPEND descriptor, so it cannot tear the parent's own chunks. */
void mvz_announce_to_parent(void)
{
    if (!mvz_agent.parent_path[0])
        return;
    int fd = open(mvz_agent.parent_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0)
        return;
    struct mvz_chunk_writer w;
    if (mvz_cw_init(&w, fd) == 0) {
        struct mvz_buf b = {0};
        mvz_put_uvarint(&b, (uint64_t)mvz_agent.pid);
        mvz_put_uvarint(&b, (uint64_t)mvz_agent.child_how);
        mvz_put_str(&b, mvz_agent.path);
        mvz_cw_record(&w, MVZ_REC_CHILD, &b);
        if (mvz_cw_flush(&w) == 0)
            mvz_runpage_child_announced();
        mvz_buf_free(&b);
        mvz_cw_destroy(&w);
    }
    close(fd);
}

static void read_config(void)
{
    const char *d = getenv("MEMVIZ_DEPTH");
    long depth = d ? strtol(d, NULL, 10) : MVZ_DEFAULT_DEPTH;
    if (depth < 1)
        depth = 1;
    if (depth > MVZ_MAX_DEPTH)
        depth = MVZ_MAX_DEPTH;
    mvz_agent.depth = (int)depth;
    const char *f = getenv("MEMVIZ_FOLLOW");
    mvz_agent.follow = !(f && strcmp(f, "0") == 0);
    const char *g = getenv("MEMVIZ_GROUPS");
    mvz_agent.groups = !g                         ? MVZ_GROUPS_AUTO
                       : strcmp(g, "always") == 0 ? MVZ_GROUPS_ALWAYS
                       : strcmp(g, "never") == 0  ? MVZ_GROUPS_NEVER
                                                  : MVZ_GROUPS_AUTO;
    const char *a = getenv("MEMVIZ_ADDRESSES");
    mvz_agent.addresses = a && strcmp(a, "1") == 0;
    const char *cg = getenv("MEMVIZ_CALLGRAPH");
    mvz_cg_on = cg && strcmp(cg, "1") == 0;
    /* MEMVIZ_RING_GROW=N: grow after N half rings; 0: never (256 KiB a thread). */
    const char *rg = getenv("MEMVIZ_RING_GROW");
    long grow = rg ? strtol(rg, NULL, 10) : RING_GROW_AFTER;
    mvz_agent.ring_grow_after = grow <= 0 ? UINT32_MAX : grow > 1000000 ? 1000000 : (uint32_t)grow;
}

/* Starts tracing this image. Runs at most once per image, at the first hook
 * call or at the constructor, whichever comes first. */
_Atomic int mvz_init_started;

void mvz_init(void)
{
    if (atomic_exchange(&mvz_init_started, 1))
        return;
    mvz_tls.internal++;
    mvz_agent.pid = getpid();
    mvz_say_init();
    mvz_clock_init();
    atomic_store(&mvz_agent.seq, 1);
    read_config();
    mvz_cg_pg_init();
    const char *parent = getenv("MEMVIZ_PARENT_TRACE");
    if (parent && *parent && !mvz_agent.follow) {
        /* A descendant under --no-follow: stay out of the way. */
        mvz_tls.internal--;
        return;
    }
    int fd = mvz_open_trace();
    if (fd < 0) {
        char why[4400];
        snprintf(why, sizeof(why), "%s (%s); the program runs untraced", mvz_agent.path,
                 strerror(errno));
        mvz_say("cannot create the trace file", why);
        mvz_tls.internal--;
        return;
    }
    fd = mvz_trace_fd_adopt(fd);
    unsetenv("MEMVIZ_OUTPUT");
    if (!mvz_agent.follow)
        unsetenv("LD_PRELOAD");
    else
        mvz_setenv("MEMVIZ_PARENT_TRACE", mvz_agent.path);
    if (mvz_cw_init(&mvz_agent.writer, fd) == 0 && mvz_cw_write_header(&mvz_agent.writer) == 0)
        mvz_agent.writer_ok = 1;
    mvz_runpage_attach();
    mvz_stacks_init();
    mvz_modules_init_self();
    mvz_write_process_record();
    mvz_sample_init(); /* before the first allocation is recorded */
    mvz_sample_write_record();
    mvz_modules_scan();
    mvz_check_allocator();
    mvz_announce_to_parent();
    atomic_store(&mvz_agent.state, MVZ_RECORDING);
    mvz_callgraph_patch(); /* -fpatchable-function-entry: the loaded objects */
    mvz_tls.internal--;
}

static uint64_t peak_rss_bytes(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        return (uint64_t)ru.ru_maxrss * 1024u;
    return 0;
}

/* The first record wins: exit() records itself before libc runs the exit
 * handlers, where the same exit would otherwise look like a return. */
void mvz_record_exit(int how, int status, int sig)
{
    static _Atomic int recorded;
    if (atomic_load(&mvz_agent.state) != MVZ_RECORDING || getpid() != mvz_agent.pid)
        return;
    if (atomic_exchange(&recorded, 1))
        return;
    struct mvz_buf b = {0};
    mvz_tls.internal++;
    mvz_put_uvarint(&b, (uint64_t)how);
    mvz_put_uvarint(&b, MVZ_EXIT_FROM_AGENT);
    mvz_put_svarint(&b, status);
    mvz_put_uvarint(&b, (uint64_t)sig);
    mvz_put_uvarint(&b, mvz_now_ns() - mvz_agent.start_ns);
    mvz_put_uvarint(&b, peak_rss_bytes());
    mvz_write_record(MVZ_REC_EXIT, &b);
    mvz_buf_free(&b);
    mvz_tls.internal--;
}

/* MEMVIZ_STATS=1: what the agent's own tables came to, for bench/. */
static void say_stats(void)
{
    struct mvz_addrmap_stats s;
    mvz_addrmap_stats(&s);
    char line[256];
    snprintf(line, sizeof(line),
             "peak %zu live blocks, peak %zu bytes (%.1f a block), %zu spilled at the end, %zu "
             "munmap calls",
             s.peak_live, s.peak_bytes, s.peak_live ? (double)s.peak_bytes / s.peak_live : 0.0,
             s.spilled, s.unmaps);
    mvz_say("address table", line);
    snprintf(
        line, sizeof(line), "%zu bytes in compression state, %zu in buffers, %zu layout trials",
        mvz_collect_zstd_bytes() + ZSTD_sizeof_CCtx(mvz_agent.writer.cctx),
        mvz_collect_buffer_bytes() + mvz_agent.writer.queued.raw.cap + mvz_agent.writer.out.cap,
        mvz_collect_trials());
    mvz_say("writer", line);
}

/* The last word of a trace. Runs from the agent's atexit handler, _exit,
 * fatal signal handlers and exec; the first caller wins. A vfork child
 * shares our memory but is not us: it must not end our trace. */
void mvz_finish(void)
{
    if (getpid() != mvz_agent.pid)
        return;
    int expected = MVZ_RECORDING;
    if (!atomic_compare_exchange_strong(&mvz_agent.state, &expected, MVZ_FINISHED))
        return;
    mvz_tls.internal++;
    mvz_snapshot_wait_all(); /* their records come before END */
    mvz_user_poll(1);        /* the instruments' last values */
    mvz_callgraph_write_all();
    struct mvz_buf b = {0};
    pthread_mutex_lock(&mvz_agent.lock);
    mvz_writer_flush_final_locked();
    /* Timed after the final flush: other threads may still have been
     * allocating while it drained their rings (exit() from one thread), and
     * the end must not come before any event in the trace; memviz run
     * prints it as the duration, as the report computes it. */
    uint64_t end = mvz_now_ns() - mvz_agent.start_ns, rss = peak_rss_bytes();
    mvz_put_uvarint(&b, end);
    mvz_put_uvarint(&b, rss);
    mvz_put_uvarint(&b, mvz_agent.lost_events);
    uint64_t agent_max = mvz_mapped_max() + mvz_rings_touched();
    mvz_put_uvarint(&b, agent_max);
    mvz_trace_fd_check();
    mvz_cw_record(&mvz_agent.writer, MVZ_REC_END, &b);
    mvz_writer_write_queued_locked();
    struct mvz_run_counts *c = mvz_runpage_counts();
    c->duration_ns = end;
    if (rss > c->peak_rss) { /* ru_maxrss, above every sample: when is unknown */
        c->peak_rss = rss;
        c->agent_rss = agent_max < rss ? agent_max : rss;
    }
    mvz_runpage_publish(mvz_collect_exact() && !mvz_agent.writer.error ? MVZ_RUN_ENDED
                                                                       : MVZ_RUN_INEXACT);
    pthread_mutex_unlock(&mvz_agent.lock);
    if (getenv("MEMVIZ_STATS"))
        say_stats();
    mvz_buf_free(&b);
    mvz_tls.internal--;
}

/* Runs for exit() and for a return from main (libc calls exit with main's
 * value). The exit hook has already recorded an explicit exit(). */
static void on_exit_handler(int status, void *arg)
{
    (void)arg;
    mvz_record_exit(MVZ_EXIT_RETURN, status, 0);
    const char *scan = getenv("MEMVIZ_LEAK_SCAN");
    if (!scan || strcmp(scan, "0")) { /* the leak scan: what is still reachable */
        uintptr_t regs[MVZ_SNAP_REGS] = {0}, caller[3];
        MVZ_SAVE_REGS(regs);
        MVZ_CALLER_STATE(caller);
        mvz_snapshot_take("exit", MVZ_SNAP_EXIT, (uintptr_t)regs, regs, caller, NULL);
    }
    mvz_finish();
}

static void at_quick_exit_handler(void)
{
    mvz_finish();
}

__attribute__((constructor(101))) static void mvz_constructor(void)
{
    mvz_resolve_real();
    mvz_init();
    if (atomic_load(&mvz_agent.state) != MVZ_RECORDING)
        return;
    mvz_tls.internal++;
    /* Registered now, before the program registers its own handlers, so it
     * runs after them: blocks freed by static destructors are not leaks. */
    on_exit(on_exit_handler, NULL);
    at_quick_exit(at_quick_exit_handler);
    mvz_process_hooks_init();
    mvz_snapshot_init();
    mvz_tls.internal--;
    mvz_writer_start();
}
