/*
 * snapshot.c - takes a heap snapshot (snapshot.h).
 *
 * The thread that takes it holds the agent's lock, so no event is recorded
 * meanwhile, and drains every thread's ring: the address table then holds
 * every block whose allocation was recorded before this moment and none
 * released before it. It then makes a copy of the process with a raw
 * clone (not glibc's fork: no atfork handlers run, and fork would take
 * malloc's locks, which another thread may hold), and lets the program run
 * on: the copy is the snapshot, and scans itself (scan.c) while the
 * program goes on. The pause the program sees is the drain and the clone.
 *
 * Other program threads are not stopped yet: the copy holds their memory
 * as it was while the clone was being made, and not their registers, so a
 * snapshot of a program with other running threads says how many ran on
 * (SNAPSHOT's threads_running), and their stacks are scanned whole.
 *
 * Invariant: a copy is reaped by the process that made it (pending[]):
 * clones made without an exit signal are invisible to the program's wait()
 * and waitpid(-1) (they need __WALL), so a program that reaps its children
 * never takes ours, and ours never leave zombies.
 */
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/addrmap.h"
#include "agent/agent.h"
#include "agent/snapshot.h"
#include "trace/runpage.h"

#define MAX_PENDING 64
#define PAUSE_SLOTS 512

/* Under mvz_agent.lock: taken, pause, pause_pid. Under pending_lock:
 * pending, limit_ms, npending, pending_pid. */
static struct {
    uint32_t taken;             /* snapshots taken by this process */
    pid_t pending[MAX_PENDING]; /* copies still scanning, with their deadlines */
    uint64_t limit_ms[MAX_PENDING];
    int npending;
    pid_t pending_pid;        /* the process that made them */
    volatile uint64_t *pause; /* PAUSE_SLOTS words shared with the copies */
    pid_t pause_pid;          /* the process that mapped it */
} s;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static int stop_threads = 1; /* MEMVIZ_SNAPSHOT_STOP=0 lets them run (for comparison) */
static int store_contents;   /* MEMVIZ_SNAPSHOT_CONTENTS=1: the blocks' bytes too */

static int count_task(void *ctx, uint32_t tid)
{
    (void)ctx, (void)tid;
    return 1;
}

/* The threads of this process. */
static uint32_t count_threads(void)
{
    int n = mvz_tasks_each(getpid(), count_task, NULL);
    return n > 0 ? (uint32_t)n : 0;
}

/* The words through which copies learn their pause; a fork child of the
 * program maps its own (the parent's are shared with it). */
static volatile uint64_t *pause_words(void)
{
    if (s.pause && s.pause_pid == getpid())
        return s.pause;
    void *p = mmap(NULL, PAUSE_SLOTS * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    mvz_owned_range(p, PAUSE_SLOTS * sizeof(uint64_t), 1);
    s.pause = p;
    s.pause_pid = getpid();
    return s.pause;
}

/* How long a copy may take: a copy that hangs (it should not) must not
 * hold the program's exit. The deadline grows with the heap it reads
 * (scans run at about 200 MiB/s; 20 s a GiB). Caller holds mvz_agent.lock. */
static uint64_t copy_limit_ms(void)
{
    struct mvz_addrmap_stats st;
    mvz_addrmap_stats(&st);
    return 30000 + (uint64_t)st.live * 64 / (1u << 30) * 20000; /* ~64 B a block */
}

static void wait_copy(pid_t pid, uint64_t limit_ms)
{
    struct timespec tick = {0, 2 * 1000 * 1000};
    for (uint64_t waited = 0;; waited += 2) {
        pid_t r = waitpid(pid, NULL, WNOHANG | __WALL);
        if (r == pid || (r < 0 && errno != EINTR))
            return;
        if (waited >= limit_ms) {
            kill(pid, SIGKILL);
            while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
                ;
            mvz_say("a heap snapshot's scan took too long and was stopped",
                    "the snapshot is incomplete in the trace");
            return;
        }
        nanosleep(&tick, NULL);
    }
}

/* A fork child of the program did not make its parent's copies. */
static void pending_own_locked(void)
{
    if (s.pending_pid != getpid()) {
        s.pending_pid = getpid();
        s.npending = 0;
    }
}

static void remember(pid_t pid, uint64_t limit_ms)
{
    pthread_mutex_lock(&pending_lock);
    pending_own_locked();
    int kept = s.npending < MAX_PENDING;
    if (kept) {
        s.pending[s.npending] = pid;
        s.limit_ms[s.npending++] = limit_ms;
    }
    pthread_mutex_unlock(&pending_lock);
    if (!kept)
        wait_copy(pid, limit_ms); /* too many at once: this one is waited for */
}

void mvz_snapshot_reap(void)
{
    pthread_mutex_lock(&pending_lock);
    pending_own_locked();
    for (int i = 0; i < s.npending;) {
        pid_t r = waitpid(s.pending[i], NULL, WNOHANG | __WALL);
        if (r == s.pending[i] || (r < 0 && errno == ECHILD)) {
            s.npending--;
            s.pending[i] = s.pending[s.npending];
            s.limit_ms[i] = s.limit_ms[s.npending];
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&pending_lock);
}

void mvz_snapshot_wait_all(void)
{
    pthread_mutex_lock(&pending_lock);
    pending_own_locked();
    int n = s.npending;
    pid_t pids[MAX_PENDING];
    uint64_t limits[MAX_PENDING];
    memcpy(pids, s.pending, sizeof(pids));
    memcpy(limits, s.limit_ms, sizeof(limits));
    s.npending = 0;
    pthread_mutex_unlock(&pending_lock);
    for (int i = 0; i < n; i++)
        wait_copy(pids[i], limits[i]);
}

/* Collects every event recorded before the snapshot's moment into the
 * address table, in order: until the watermark passes the key of the
 * moment, the events of a thread caught between taking its key and
 * publishing its event are not there yet (a drain of everything, as exec
 * does, would put them out of order in the trace). Bounded: a thread
 * stuck mid-event (stopped by a debugger) must not hold the program. The
 * lock is let go between tries, for threads whose rings are full.
 * Returns with mvz_agent.lock held. */
static void drain_to_now(void)
{
    uint64_t k0 = mvz_key_now(), t0 = mvz_now_ns();
    for (;;) {
        pthread_mutex_lock(&mvz_agent.lock);
        if (mvz_rings_watermark() >= k0 || mvz_now_ns() - t0 > 50 * 1000 * 1000) {
            mvz_writer_flush_locked(); /* drains below the watermark just seen, or later */
            return;
        }
        pthread_mutex_unlock(&mvz_agent.lock);
        sched_yield();
    }
}

/* The copy: the calling thread's state, nothing else; its locks are
 * reset because the threads that may hold them are not in it. The caller
 * holds the locks the copy uses (lock_for_copy). */
static pid_t make_copy(const struct mvz_scan_params *p)
{
    pid_t pid = (pid_t)syscall(SYS_clone, 0UL /* no exit signal */, NULL, NULL, NULL, NULL);
    if (pid == 0) {
        mvz_mem_after_fork(1);
        mvz_owned_after_clone();
        mvz_scan_run(p);
    }
    return pid;
}

/* The agent's lock order: mvz_agent.lock (held), api, buffers, owned
 * ranges. Held from before the other threads are stopped until they run
 * again: a thread stopped holding one would hold it for the copy too. */
static void lock_for_copy(void)
{
    mvz_api_lock();
    mvz_mem_before_fork();
    mvz_owned_lock();
}

static void unlock_after_copy(void)
{
    mvz_owned_unlock();
    mvz_mem_after_fork(0);
    mvz_api_unlock();
}

/* "prefix-N" into buf. */
static const char *numbered(char *buf, size_t cap, const char *prefix, uint32_t n)
{
    char digits[12];
    int k = 0;
    for (uint32_t v = n; v || !k; v /= 10)
        digits[k++] = (char)('0' + v % 10);
    size_t len = strlen(prefix);
    if (len + (size_t)k + 1 > cap)
        return prefix;
    memcpy(buf, prefix, len);
    for (int i = 0; i < k; i++)
        buf[len + (size_t)i] = digits[k - 1 - i];
    buf[len + (size_t)k] = 0;
    return buf;
}

/* The snapshot at exit has begun: it is the last (the writer's periodic
 * ones stop, so that none comes after it in the trace). */
static _Atomic int exit_begun;

int mvz_snapshot_take(const char *name, int trigger, uintptr_t stack_from,
                      const uintptr_t regs[MVZ_SNAP_REGS], const uintptr_t caller[3],
                      uint64_t *pause_ns)
{
    if (trigger == MVZ_SNAP_EXIT)
        atomic_store(&exit_begun, 1);
    else if (atomic_load(&exit_begun))
        return -1;
    /* sampled (--sample): the agent knows only the sampled blocks, and a
     * snapshot of them would call every other block's pointee lost */
    if (!mvz_recording() || getpid() != mvz_agent.pid || atomic_load(&mvz_sample_ever))
        return -1;
    mvz_tls.internal++;
    uint64_t t0 = mvz_now_ns();
    drain_to_now();
    /* what the trace has so far goes out first: the stacks and modules the
     * snapshot names come before it in the file */
    mvz_collect_flush(&mvz_agent.writer);
    mvz_writer_write_queued_locked();
    volatile uint64_t *pause = pause_words();
    uint64_t limit_ms = copy_limit_ms();
    struct mvz_scan_params p = {
        .id = ++s.taken,
        .trigger = (uint32_t)trigger,
        .ts = t0 - mvz_agent.start_ns,
        .events = mvz_collect_count(),
        .tid = (uint32_t)syscall(SYS_gettid),
        .own_stack = stack_from != 0,
        .stack_from = stack_from,
        .tls = (uintptr_t)__builtin_thread_pointer(),
        .prog_pc = caller ? caller[0] : 0,
        .prog_sp = caller ? caller[1] : 0,
        .prog_bp = caller ? caller[2] : 0,
        .contents = store_contents,
        .fd = mvz_agent.writer.fd,
        .pause_ns = pause ? &pause[s.taken % PAUSE_SLOTS] : NULL,
    };
    uint32_t threads = count_threads();
    uint32_t ours = 1 + (mvz_writer_is_running() && mvz_writer_tid() != p.tid);
    int can_stop = threads > ours && stop_threads && mvz_stop_prepare() == 0;
    lock_for_copy();
    /* the others, stopped: their registers and stack pointers for the copy */
    struct mvz_stop stop;
    int stopped = can_stop && pause && mvz_stop_others(&stop, p.tid, mvz_writer_tid()) == 0;
    p.stopped = stopped ? stop.t : NULL;
    p.nstopped = stopped ? stop.n : 0;
    p.threads_running = threads > ours + p.nstopped ? threads - ours - p.nstopped : 0;
    if (regs)
        memcpy(p.regs, regs, sizeof(p.regs));
    if (name && *name)
        strncpy(p.name, name, sizeof(p.name) - 1);
    else /* memviz_snapshot(NULL) */
        numbered(p.name, sizeof(p.name), "snapshot-", p.id);
    if (p.pause_ns)
        *p.pause_ns = 0;
    pid_t pid = pause ? make_copy(&p) : -1;
    if (stopped)
        mvz_stop_resume(&stop);
    unlock_after_copy();
    pthread_mutex_unlock(&mvz_agent.lock);
    uint64_t t1 = mvz_now_ns();
    if (pause_ns)
        *pause_ns = t1 - t0;
    if (pid > 0) {
        __atomic_store_n(p.pause_ns, t1 - t0 ? t1 - t0 : 1, __ATOMIC_RELEASE);
        if (trigger == MVZ_SNAP_EXIT)
            wait_copy(pid, limit_ms);
        else
            remember(pid, limit_ms);
    }
    mvz_tls.internal--;
    return pid > 0 ? 0 : -1;
}

/* ---- snapshots the writer thread takes: by signal, periodic, on request ---- */
static _Atomic int signal_pending;
static int snap_signal;
static uint64_t every_ns, every_bytes, next_ns, next_bytes;
static uint32_t n_signal, n_every;

static void on_snapshot_signal(int sig)
{
    (void)sig;
    atomic_store(&signal_pending, 1);
    mvz_writer_wake();
}

/* MEMVIZ_SNAPSHOT_ON=N (a signal number), MEMVIZ_SNAPSHOT_EVERY=ns:N or
 * bytes:N and MEMVIZ_SNAPSHOT_CONTENTS=1, as memviz run sets them. */
void mvz_snapshot_init(void)
{
    const char *st = getenv("MEMVIZ_SNAPSHOT_STOP");
    stop_threads = !(st && !strcmp(st, "0"));
    const char *contents = getenv("MEMVIZ_SNAPSHOT_CONTENTS");
    store_contents = contents && !strcmp(contents, "1");
    const char *on = getenv("MEMVIZ_SNAPSHOT_ON");
    int sig = on ? atoi(on) : 0;
    if (sig > 0 && sig < NSIG && sig != SIGKILL && sig != SIGSTOP) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_snapshot_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sig, &sa, NULL) == 0)
            snap_signal = sig;
    }
    const char *every = getenv("MEMVIZ_SNAPSHOT_EVERY");
    if (every && !strncmp(every, "ns:", 3))
        every_ns = strtoull(every + 3, NULL, 10);
    else if (every && !strncmp(every, "bytes:", 6))
        every_bytes = strtoull(every + 6, NULL, 10);
    next_ns = every_ns;
    next_bytes = every_bytes;
}

void mvz_snapshot_poll(void)
{
    char name[MVZ_SNAP_NAME_MAX];
    uint32_t req;
    uint64_t pause = 0;
    if (atomic_load(&exit_begun))
        return;
    if (snap_signal && atomic_exchange(&signal_pending, 0))
        mvz_snapshot_take(numbered(name, sizeof(name), "signal-", ++n_signal), MVZ_SNAP_SIGNAL, 0,
                          NULL, NULL, NULL);
    uint64_t now = mvz_now_ns() - mvz_agent.start_ns;
    if (every_ns && now >= next_ns) {
        mvz_snapshot_take(numbered(name, sizeof(name), "every-", ++n_every), MVZ_SNAP_EVERY, 0,
                          NULL, NULL, NULL);
        next_ns = now + every_ns;
    }
    uint64_t allocated = 0;
    if (every_bytes) { /* the counts are the writer's, under the lock */
        pthread_mutex_lock(&mvz_agent.lock);
        allocated = mvz_runpage_counts()->allocated_bytes;
        pthread_mutex_unlock(&mvz_agent.lock);
    }
    if (every_bytes && allocated >= next_bytes) {
        mvz_snapshot_take(numbered(name, sizeof(name), "every-", ++n_every), MVZ_SNAP_EVERY, 0,
                          NULL, NULL, NULL);
        next_bytes = allocated + every_bytes;
    }
    if (mvz_runpage_snapshot_request(name, sizeof(name), &req)) {
        mvz_snapshot_take(name, MVZ_SNAP_COMMAND, 0, NULL, NULL, &pause);
        mvz_runpage_snapshot_done(req, pause ? pause : 1);
    }
}
