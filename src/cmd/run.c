/*
 * run.c - `memviz run`: starts a program with the agent preloaded, waits
 * for it, records how it ended in its trace (the agent cannot see SIGKILL;
 * we can), prints a short summary and exits with the program's status.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "analysis/profile.h"
#include "cmd/cmd.h"
#include "analysis/instrumentation.h"
#include "cmd/run.h"
#include "analysis/index.h"
#include "trace/callgraph.h"
#include "ui/model.h"
#include "cmd/run_live.h"
#include "trace/chunk_writer.h"
#include "trace/runpage.h"
#include "util/fmt.h"

/* The program's descriptor for the page: high, out of the way of programs
 * that use the low numbers (the agent leaves it open for exec'd images). */
#define PAGE_FD_FLOOR 1000

/* Makes the page the agents publish their summaries in. Without it (no
 * memfd), the summary comes from reading the final trace, as it must when
 * an image could not finish its trace. */
static void make_page(struct run_opts *o)
{
    o->page_fd = -1;
    o->page = NULL;
    uint64_t size = mvz_run_page_size(MVZ_RUN_IMAGES);
    int fd = memfd_create("memviz-run", MFD_CLOEXEC);
    if (fd < 0)
        return;
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)size) == 0)
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        close(fd);
        return;
    }
    o->page = p;
    o->page->magic = MVZ_RUN_MAGIC;
    o->page->version = MVZ_RUN_VERSION;
    o->page->nimages = MVZ_RUN_IMAGES;
    o->page_fd = fd;
}

/* In the child, before exec: the page's descriptor, inherited. */
static void pass_page(const struct run_opts *o)
{
    if (o->page_fd < 0)
        return;
    int fd = fcntl(o->page_fd, F_DUPFD, PAGE_FD_FLOOR);
    if (fd < 0)
        return;
    char s[32];
    snprintf(s, sizeof(s), "%d", fd);
    setenv("MEMVIZ_RUN_FD", s, 1);
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getppid(), o->page_fd);
    setenv("MEMVIZ_RUN_PAGE", path, 1);
    unsetenv("MEMVIZ_RUN_SLOT");
}

/* The agent lives next to the binary: BIN/../lib/libmemviz.so, both in the
 * build tree and after `make install`. MEMVIZ_AGENT overrides. */
static int find_agent(char *out, size_t cap)
{
    const char *env = getenv("MEMVIZ_AGENT");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return access(out, R_OK);
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    snprintf(out, cap, "%.3900s/../lib/libmemviz.so", exe);
    if (access(out, R_OK) == 0)
        return 0;
    snprintf(out, cap, "%.3900s/../lib/memviz/libmemviz.so", exe);
    return access(out, R_OK);
}

static void default_trace_name(char *out, size_t cap, const char *prog, pid_t pid)
{
    const char *base = strrchr(prog, '/');
    snprintf(out, cap, "memviz.%s.%d.mvz", base ? base + 1 : prog, (int)pid);
}

static void setup_child_env(const struct run_opts *o, const char *agent, const char *trace)
{
    const char *old = getenv("LD_PRELOAD");
    char *preload = NULL;
    if (old && *old && asprintf(&preload, "%s:%s", agent, old) > 0)
        setenv("LD_PRELOAD", preload, 1);
    else
        setenv("LD_PRELOAD", agent, 1);
    free(preload);
    setenv("MEMVIZ_OUTPUT", trace, 1);
    unsetenv("MEMVIZ_PARENT_TRACE");
    unsetenv("MEMVIZ_DIR");
    if (o->depth > 0) {
        char d[32];
        snprintf(d, sizeof(d), "%ld", o->depth);
        setenv("MEMVIZ_DEPTH", d, 1);
    }
    setenv("MEMVIZ_FOLLOW", o->follow ? "1" : "0", 1);
    setenv("MEMVIZ_LEAK_SCAN", o->leak_scan ? "1" : "0", 1);
    if (o->snapshot_signal) {
        char s[16];
        snprintf(s, sizeof(s), "%d", o->snapshot_signal);
        setenv("MEMVIZ_SNAPSHOT_ON", s, 1);
    } else {
        unsetenv("MEMVIZ_SNAPSHOT_ON");
    }
    if (o->snapshot_every[0])
        setenv("MEMVIZ_SNAPSHOT_EVERY", o->snapshot_every, 1);
    else
        unsetenv("MEMVIZ_SNAPSHOT_EVERY");
    setenv("MEMVIZ_SNAPSHOT_CONTENTS", o->snapshot_contents ? "1" : "0", 1);
    setenv("MEMVIZ_ADDRESSES", o->addresses ? "1" : "0", 1);
    setenv("MEMVIZ_CALLGRAPH", o->callgraph ? "1" : "0", 1);
    if (o->callgraph_filter)
        setenv("MEMVIZ_CALLGRAPH_FILTER", o->callgraph_filter, 1);
    else
        unsetenv("MEMVIZ_CALLGRAPH_FILTER");
    if (o->sample) {
        char v[32];
        snprintf(v, sizeof(v), "%llu", (unsigned long long)o->sample);
        setenv("MEMVIZ_SAMPLE", v, 1);
    } else {
        unsetenv("MEMVIZ_SAMPLE");
    }
}

/* In the child, before exec: memviz run's standard error, for the agents'
 * lines (src/agent/say.c), so that they stay out of the program's own. */
static void pass_log(void)
{
    struct stat st;
    if (fstat(2, &st) < 0)
        return;
    int fd = fcntl(2, F_DUPFD, PAGE_FD_FLOOR);
    if (fd < 0)
        return;
    char v[96];
    snprintf(v, sizeof(v), "%d:%lu:%lu", fd, (unsigned long)st.st_dev, (unsigned long)st.st_ino);
    setenv("MEMVIZ_LOG_FD", v, 1);
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/2", (int)getppid());
    setenv("MEMVIZ_LOG", path, 1);
}

/* ---- signals sent to memviz run go on to the program ----
 *
 * Service managers, scripts and `kill` signal the pid they started, which
 * is memviz run's: it passes those signals on to the program, as init
 * shims and timeout(1) do, then waits for it and prints its summary as
 * usual. A signal the kernel sent (the terminal's ^C or ^\, a hangup)
 * went to the whole foreground process group, the program included, so
 * it is not sent twice; nor is one the program sent us itself. */
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define N_FORWARDED (sizeof(forwarded_signals) / sizeof(forwarded_signals[0]))
static volatile sig_atomic_t forward_to;

static void forward_signal(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    int saved = errno;
    /* si_code <= 0: SI_USER, SI_QUEUE, SI_TKILL..., a process sent it */
    if (si->si_code <= 0 && forward_to > 0 && si->si_pid != forward_to)
        kill((pid_t)forward_to, sig);
    errno = saved;
}

/* Before fork: the signals are held until the handlers know the pid. */
static void block_forwarded(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaddset(&set, forwarded_signals[i]);
    sigprocmask(SIG_BLOCK, &set, old);
}

/* In the parent after fork: any signal held meanwhile is passed on now. */
static void start_forwarding(pid_t pid, const sigset_t *old)
{
    forward_to = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded_signals[i], &sa, NULL);
    sigprocmask(SIG_SETMASK, old, NULL);
}

/* In the child: exec the program; on failure report errno through the
 * close-on-exec pipe so the parent prints the one error message. */
static void exec_child(const struct run_opts *o, const char *agent, int errfd, const sigset_t *mask)
{
    sigprocmask(SIG_SETMASK, mask, NULL);
    char trace[PATH_MAX];
    if (o->output)
        snprintf(trace, sizeof(trace), "%s", o->output);
    else
        default_trace_name(trace, sizeof(trace), o->argv[0], getpid());
    if (!o->untraced) {
        setup_child_env(o, agent, trace);
        pass_page(o);
        pass_log();
    }
    execvp(o->argv[0], o->argv);
    int e = errno;
    (void)!write(errfd, &e, sizeof(e));
    _exit(e == ENOENT ? 127 : 126);
}

/* Follows exec links of the same pid to the trace of the image that ended. */
static void final_image_trace(const char *first, pid_t pid, char *out, size_t cap)
{
    snprintf(out, cap, "%s", first);
    for (int hops = 0; hops < 64; hops++) {
        struct mvz_trace t;
        char err[256];
        struct mvz_replay_ops none = {0};
        if (mvz_replay(out, &t, &none, NULL, err, sizeof(err)) < 0)
            return;
        const char *next = NULL;
        for (size_t i = 0; i < t.nchildren; i++)
            if (t.children[i].pid == pid && t.children[i].how == MVZ_CHILD_EXEC)
                next = t.children[i].trace;
        if (next)
            snprintf(out, cap, "%s", next);
        mvz_trace_free(&t);
        if (!next)
            return;
    }
}

static void append_exit(const char *trace, int status)
{
    int fd = open(trace, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0)
        return;
    struct mvz_chunk_writer w;
    if (mvz_cw_init(&w, fd) == 0) {
        struct mvz_buf b = {0};
        int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        mvz_put_uvarint(&b, sig ? MVZ_EXIT_SIGNAL : MVZ_EXIT_STATUS);
        mvz_put_uvarint(&b, MVZ_EXIT_FROM_CLI);
        mvz_put_svarint(&b, WIFEXITED(status) ? WEXITSTATUS(status) : 0);
        mvz_put_uvarint(&b, (uint64_t)sig);
        mvz_put_uvarint(&b, 0); /* time unknown to us; the agent's, if any, is kept */
        /* wait4's ru_maxrss is the largest of the process's and its
         * waited-for children's: sh and make showed their biggest child's.
         * The process's own peak is the agent's (its samples, and its own
         * getrusage at exit). */
        mvz_put_uvarint(&b, 0);
        mvz_cw_record(&w, MVZ_REC_EXIT, &b);
        mvz_cw_flush(&w);
        mvz_buf_free(&b);
        mvz_cw_destroy(&w);
    }
    close(fd);
}

/* What the summary says of the image that exited. */
struct final_image {
    char trace[PATH_MAX];
    struct mvz_run_counts n;
    size_t children;
    int ends_early; /* the trace was cut short or damaged */
};

/* Prints the summary of the image that exited (after any exec of the same
 * process: for a wrapper script, the program it ran) and names the traces. */
static void print_summary(const char *first, const struct final_image *f, const char *prog,
                          int status)
{
    char a[32], b[32], c[32], d[32];
    const struct mvz_run_counts *s = &f->n;
    if (WIFSIGNALED(status))
        fprintf(stderr, "memviz: %s was killed by signal %d (%s) after %s\n", prog,
                WTERMSIG(status), strsignal(WTERMSIG(status)),
                mvz_fmt_duration(s->duration_ns, a, sizeof(a)));
    else
        fprintf(stderr, "memviz: %s exited with status %d after %s\n", prog, WEXITSTATUS(status),
                mvz_fmt_duration(s->duration_ns, a, sizeof(a)));
    fprintf(stderr, "memviz: %s allocation calls, %s allocated, peak heap %s at %s\n",
            mvz_fmt_count(s->allocations, a, sizeof(a)),
            mvz_fmt_bytes(s->allocated_bytes, b, sizeof(b)),
            mvz_fmt_bytes(s->peak_bytes, c, sizeof(c)),
            mvz_fmt_duration(s->peak_time_ns, d, sizeof(d)));
    fprintf(stderr, "memviz: %s not freed %s in %s block(s), %s temporary allocations, peak RSS %s",
            mvz_fmt_bytes(s->live_bytes, a, sizeof(a)),
            f->ends_early ? "when the trace ends" : "at exit",
            mvz_fmt_count(s->live_blocks, b, sizeof(b)), mvz_fmt_count(s->temporary, c, sizeof(c)),
            mvz_fmt_bytes(s->peak_rss, d, sizeof(d)));
    if (s->agent_rss)
        fprintf(stderr, " (memviz's own: at most %s of it)",
                mvz_fmt_bytes(s->agent_rss, a, sizeof(a)));
    fputc('\n', stderr);
    if (f->ends_early)
        fprintf(stderr, "memviz: the trace ends early: these numbers cover the first %s\n",
                mvz_fmt_duration(s->duration_ns, a, sizeof(a)));
    /* -o may be relative; the agent's path is absolute */
    if (!mvz_same_file(first, f->trace))
        fprintf(stderr,
                "memviz: trace written to %s; the process replaced itself with exec, "
                "these numbers are from its last image: %s\n",
                first, f->trace);
    else if (f->children)
        fprintf(stderr, "memviz: trace written to %s (%zu child trace%s listed in it)\n", f->trace,
                f->children, f->children == 1 ? "" : "s");
    else
        fprintf(stderr, "memviz: trace written to %s\n", f->trace);
}

/* A large trace gets its index now, so that `memviz ui` opens it at once
 * (analysis/index.h): the one replay it needs is made while the user is
 * here anyway. A failure costs only the speed of the first open. */
static void index_large(const char *trace)
{
    struct stat st;
    if (stat(trace, &st) < 0 || (uint64_t)st.st_size < mvz_ui_index_from())
        return;
    char a[32], err[512], path[4200];
    fprintf(stderr, "memviz: indexing the %s trace for memviz ui (--no-index skips this)\n",
            mvz_fmt_bytes((uint64_t)st.st_size, a, sizeof(a)));
    if (mvz_ui_index_write(trace, err, sizeof(err)) < 0)
        fprintf(stderr, "memviz: no index written: %s\n", err);
    else if (mvz_index_path(trace, path, sizeof(path)) == 0)
        fprintf(stderr, "memviz: index written to %s\n", path);
}

/* Whether entry i is the first of its pid (a process's images claim
 * entries in exec order). At most 4,096 entries: a quadratic look is fine. */
static int first_of_pid(const struct mvz_run_page *pg, uint32_t i)
{
    for (uint32_t j = 0; j < i; j++)
        if (pg->img[j].pid == pg->img[i].pid && pg->img[j].state != MVZ_RUN_FREE)
            return 0;
    return 1;
}

/* When the program started other programs or processes: the whole tree's
 * totals, summed over the page's entries (one per traced image). An image
 * that neither ended its trace nor exec'd counts with the numbers its
 * agent last published, and the line says how many did so. */
static void print_tree_totals(const struct run_opts *o)
{
    if (!o->page)
        return;
    uint32_t claimed = __atomic_load_n(&o->page->claimed, __ATOMIC_ACQUIRE);
    uint32_t n = claimed < o->page->nimages ? claimed : o->page->nimages;
    if (n < 2)
        return;
    struct mvz_run_counts t = {0};
    uint32_t procs = 0, images = 0, open = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct mvz_run_image *e = &o->page->img[i];
        uint32_t state = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
        if (state == MVZ_RUN_FREE)
            continue;
        images++;
        procs += first_of_pid(o->page, i);
        open += state != MVZ_RUN_ENDED && state != MVZ_RUN_EXECED;
        t.allocations += e->n.allocations;
        t.allocated_bytes += e->n.allocated_bytes;
        t.live_bytes += e->n.live_bytes;
        t.live_blocks += e->n.live_blocks;
    }
    char a[32], b[32], c[32], d[32], e[32], f[32];
    fprintf(stderr,
            "memviz: the whole tree: %s process(es), %s program image(s): %s allocation calls, "
            "%s allocated, %s not freed at their ends in %s block(s)\n",
            mvz_fmt_count(procs, a, sizeof(a)), mvz_fmt_count(images, b, sizeof(b)),
            mvz_fmt_count(t.allocations, c, sizeof(c)), mvz_fmt_bytes(t.allocated_bytes, d, 32),
            mvz_fmt_bytes(t.live_bytes, e, sizeof(e)), mvz_fmt_count(t.live_blocks, f, sizeof(f)));
    if (open)
        fprintf(stderr,
                "memviz: %u image(s) of the tree did not end their traces cleanly: their numbers "
                "are as their agents last left them\n",
                open);
    if (claimed > n)
        fprintf(stderr, "memviz: %u image(s) beyond the first %u are not counted\n", claimed - n,
                n);
}

/* The final image's numbers as its agent left them in the page, when it
 * ended its trace cleanly: no trace is read. Returns 0, or -1 when the
 * trace must be read instead. */
static int final_from_page(const struct run_opts *o, pid_t pid, struct final_image *f)
{
    if (!o->page)
        return -1;
    uint32_t n = __atomic_load_n(&o->page->claimed, __ATOMIC_ACQUIRE);
    if (n > o->page->nimages)
        n = o->page->nimages;
    const struct mvz_run_image *last = NULL;
    for (uint32_t i = 0; i < n; i++) /* images of one pid claim entries in exec order */
        if (o->page->img[i].pid == pid && o->page->img[i].state != MVZ_RUN_FREE)
            last = &o->page->img[i];
    if (!last || __atomic_load_n(&last->state, __ATOMIC_ACQUIRE) != MVZ_RUN_ENDED ||
        !memchr(last->trace, 0, sizeof(last->trace)))
        return -1;
    snprintf(f->trace, sizeof(f->trace), "%s", last->trace);
    f->n = last->n;
    f->children = __atomic_load_n(&last->children, __ATOMIC_RELAXED);
    f->ends_early = 0;
    return 0;
}

/* The final image's numbers from its trace (a replay), for an image that
 * did not end its trace (killed, or out of memory) or ran without a page. */
static int final_from_trace(struct final_image *f)
{
    struct mvz_profile p;
    char err[512];
    if (mvz_profile_load(&p, f->trace, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return -1;
    }
    const struct mvz_summary *s = &p.sum;
    f->n = (struct mvz_run_counts){
        .allocations = s->allocations,
        .frees = s->frees,
        .allocated_bytes = s->allocated_bytes,
        .live_bytes = s->leaked_bytes,
        .live_blocks = s->leaked_blocks,
        .peak_bytes = s->peak_bytes,
        .peak_time_ns = s->peak_time_ns,
        .temporary = s->temporary,
        .peak_rss = p.trace.peak_rss,
        .agent_rss = mvz_trace_agent_rss(&p.trace),
        .duration_ns = s->duration_ns,
    };
    f->children = p.trace.nchildren;
    f->ends_early =
        p.trace.truncated || p.trace.bad_chunks || !(p.trace.have_end || p.trace.have_exec);
    mvz_profile_free(&p);
    return 0;
}

static int output_writable(const char *path, const char *prog)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        mvz_error("cannot write the trace %s: %s; running %s untraced", path, strerror(errno),
                  prog);
        return 0;
    }
    close(fd);
    return 1;
}

/* The file execvp would run for prog, or NULL. */
static const char *resolve_program(const char *prog, char *out, size_t cap)
{
    if (strchr(prog, '/'))
        return snprintf(out, cap, "%s", prog) < (int)cap ? out : NULL;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/bin:/usr/bin"; *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        snprintf(out, cap, "%.*s/%s", (int)len, len ? p : ".", prog);
        if (access(out, X_OK) == 0)
            return out;
        p += len + (colon ? 1 : 0);
    }
    return NULL;
}

/* The interpreter of a "#!" script, or NULL. */
static const char *script_interpreter(const char *file, char *out, size_t cap)
{
    char line[PATH_MAX];
    FILE *f = fopen(file, "r");
    if (!f)
        return NULL;
    int ok = fgets(line, sizeof(line), f) && line[0] == '#' && line[1] == '!';
    fclose(f);
    if (!ok)
        return NULL;
    char *p = line + 2;
    p += strspn(p, " \t");
    size_t n = strcspn(p, " \t\n");
    snprintf(out, cap, "%.*s", (int)n, p);
    return n ? out : NULL;
}

/* Whether the ELF file has a PT_INTERP header: 1 yes, 0 no, -1 not ELF. */
static int has_interp(const char *file)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int r = -1;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    size_t n;
    if (e && elf_kind(e) == ELF_K_ELF && elf_getphdrnum(e, &n) == 0) {
        r = 0;
        for (size_t i = 0; i < n; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
                r = 1;
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return r;
}

/* Why the dynamic loader will not preload the agent into prog ("statically
 * linked", "setuid"), or NULL when it will (or when it cannot tell). For a
 * script, its interpreter is what runs and is traced. */
static const char *untraceable_reason(const char *prog)
{
    char file[PATH_MAX], interp[PATH_MAX];
    struct stat st;
    if (!resolve_program(prog, file, sizeof(file)))
        return NULL;
    if (script_interpreter(file, interp, sizeof(interp)))
        snprintf(file, sizeof(file), "%s", interp);
    if (stat(file, &st) < 0)
        return NULL;
    /* glibc ignores LD_PRELOAD in secure-execution mode */
    if ((st.st_mode & S_ISUID) && st.st_uid != geteuid())
        return "setuid";
    if ((st.st_mode & S_ISGID) && st.st_gid != getegid())
        return "setgid";
    return has_interp(file) == 0 ? "statically linked" : NULL;
}

/* Why an image left no trace: the directory, or a program the dynamic
 * loader does not preload into (static, setuid/setgid). */
static void explain_no_trace(const char *prog, const char *trace)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(trace, '/');
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - trace) : 1, slash ? trace : ".");
    if (!*dir)
        snprintf(dir, sizeof(dir), "/");
    const char *why = untraceable_reason(prog);
    if (why)
        mvz_error("no trace was written: %s is %s, which the agent cannot be preloaded into", prog,
                  why);
    else if (access(dir, W_OK) < 0)
        mvz_error("no trace was written: cannot create files in %s: %s", dir, strerror(errno));
    else
        mvz_error("no trace was written for %s (see the messages above)", prog);
}

/* --live before the program starts: the token file and the socket. */
static int live_prepare(struct run_opts *o)
{
    if (!o->rl.window_ns)
        o->rl.window_ns = 600ull * 1000000000ull;
    if (o->live_token)
        snprintf(o->rl.token_file, sizeof(o->rl.token_file), "%s", o->live_token);
    else if (o->output)
        snprintf(o->rl.token_file, sizeof(o->rl.token_file), "%s.token", o->output);
    else
        snprintf(o->rl.token_file, sizeof(o->rl.token_file), "memviz-live.%d.token", (int)getpid());
    return run_live_bind(&o->rl);
}

/* MEMVIZ_CALLGRAPH_TIME, read by the agent: -1 (said) if it is not valid. */
static int callgraph_time_ok(void)
{
    const char *v = getenv("MEMVIZ_CALLGRAPH_TIME");
    if (mvz_cg_time_every_parse(v))
        return 0;
    mvz_error("MEMVIZ_CALLGRAPH_TIME=%s: expected \"exact\" or a power of two from 1 to 1024", v);
    return -1;
}

/* --callgraph needs a program that calls the hooks: -1 (said) if not. */
static int check_instrumented(const char *prog, const char *filter)
{
    char file[PATH_MAX];
    int bits = resolve_program(prog, file, sizeof(file)) ? mvz_program_instrumentation(file) : -1;
    if (bits < 0)
        return 0; /* not ELF (a script) or not found: exec will say */
    if (filter && !(bits & MVZ_INSTR_PATCHABLE)) {
        mvz_error("--callgraph-filter picks the functions of a -fpatchable-function-entry build; "
                  "%s is not one (its instrumented functions are all recorded)",
                  prog);
        return -1;
    }
    if (bits)
        return callgraph_time_ok();
    mvz_error("%s has no call instrumentation, nor have the libraries it needs: build it with "
              "-finstrument-functions, -pg or -fpatchable-function-entry=5 to record its call "
              "graph",
              prog);
    return -1;
}

int cmd_run(int argc, char **argv)
{
    struct run_opts o;
    int rc = run_parse_options(argc, argv, &o);
    if (rc)
        return rc;
    char agent[PATH_MAX];
    if (find_agent(agent, sizeof(agent)) < 0) {
        mvz_error("cannot find the agent library libmemviz.so (set MEMVIZ_AGENT)");
        return 1;
    }
    const char *why = untraceable_reason(o.argv[0]);
    if (!why && o.callgraph && check_instrumented(o.argv[0], o.callgraph_filter) < 0)
        return 1;
    if (why) {
        mvz_error("%s is %s: the agent cannot be preloaded into it; running it untraced", o.argv[0],
                  why);
        o.untraced = 1;
    } else if (o.output && !output_writable(o.output, o.argv[0])) {
        o.untraced = 1;
    }
    if (!o.untraced)
        make_page(&o);
    if (o.live && !o.untraced && live_prepare(&o) < 0)
        return 1;
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        mvz_error("pipe: %s", strerror(errno));
        return 1;
    }
    sigset_t mask;
    block_forwarded(&mask);
    pid_t pid = fork();
    if (pid < 0) {
        mvz_error("fork: %s", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        close(pipefd[0]);
        exec_child(&o, agent, pipefd[1], &mask);
    }
    close(pipefd[1]);
    start_forwarding(pid, &mask);
    char first[PATH_MAX];
    if (o.output)
        snprintf(first, sizeof(first), "%s", o.output);
    else
        default_trace_name(first, sizeof(first), o.argv[0], pid);
    if (o.live && !o.untraced)
        run_live_start(&o.rl, first, o.page, pid);
    int exec_errno = 0;
    ssize_t got = read(pipefd[0], &exec_errno, sizeof(exec_errno));
    close(pipefd[0]);
    int status;
    /* Seen exited but not yet reaped, so that its pid cannot be reused
     * while a signal may still be passed on to it. */
    siginfo_t si;
    while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    forward_to = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (o.live && !o.untraced)
        run_live_finish(&o.rl);
    if (got == (ssize_t)sizeof(exec_errno)) {
        mvz_error("cannot run %s: %s", o.argv[0], strerror(exec_errno));
        return exec_errno == ENOENT ? 127 : 126;
    }
    int exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    if (o.untraced)
        return exit_code;
    struct stat st;
    if (stat(first, &st) < 0 || st.st_size == 0) {
        explain_no_trace(o.argv[0], first);
        return exit_code;
    }
    struct final_image f;
    if (final_from_page(&o, pid, &f) == 0) {
        append_exit(f.trace, status);
    } else {
        final_image_trace(first, pid, f.trace, sizeof(f.trace));
        append_exit(f.trace, status);
        if (final_from_trace(&f) < 0)
            return exit_code;
    }
    print_summary(first, &f, o.argv[0], status);
    if (o.sample) {
        char a[32];
        fprintf(stderr,
                "memviz: sampled, one allocation every %s on average: these are estimates "
                "(memviz report gives their errors)\n",
                mvz_fmt_bytes(o.sample, a, sizeof(a)));
    }
    print_tree_totals(&o);
    if (o.index && !f.ends_early)
        index_large(f.trace);
    return exit_code;
}
