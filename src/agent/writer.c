/*
 * writer.c - the agent's writer thread. Every MVZ_FLUSH_INTERVAL_MS it moves
 * queued metadata and every thread's buffered events into one chunk and
 * writes it, so a process killed without warning (SIGKILL) loses at most the
 * last interval. It also samples the resident set size.
 *
 * Producers wake it early when a ring is half full (mvz_writer_wake), so
 * that encoding and compression run on another core rather than in the
 * program's thread. The thread is invisible to the program: it blocks every signal and runs
 * with tls.internal set, so its own allocations are never recorded.
 */
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/snapshot.h"
#include "trace/runpage.h"

#define RSS_INTERVAL_NS (10u * 1000 * 1000)

static uint64_t last_rss_ns;
static long page_size;

static void sample_rss(void)
{
    uint64_t now = mvz_now_ns();
    if (now - last_rss_ns < RSS_INTERVAL_NS)
        return;
    last_rss_ns = now;
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = 0;
    unsigned long size, resident;
    if (sscanf(buf, "%lu %lu", &size, &resident) != 2)
        return;
    if (!page_size)
        page_size = sysconf(_SC_PAGESIZE);
    struct mvz_buf b = {0};
    uint64_t rss = (uint64_t)resident * (uint64_t)page_size;
    struct mvz_run_counts *c = mvz_runpage_counts();
    uint64_t agent = mvz_mapped_now() + mvz_rings_touched();
    agent = agent < rss ? agent : rss;
    if (rss > c->peak_rss) {
        c->peak_rss = rss;
        c->agent_rss = agent;
    }
    mvz_put_uvarint(&b, now - mvz_agent.start_ns);
    mvz_put_uvarint(&b, rss);
    mvz_put_uvarint(&b, agent);
    mvz_cw_record(&mvz_agent.writer, MVZ_REC_RSS, &b);
    mvz_buf_free(&b);
}

/* Whether the records queued so far should be compressed and written now.
 * Compressing at every drain made chunks of a few KiB, and each chunk starts
 * zstd's history afresh: 1 MiB chunks make traces 40% smaller on
 * single-threaded programs (docs/DESIGN.md). The time bound keeps what a
 * SIGKILL can take away to MVZ_WRITE_INTERVAL_MS. */
static int compress_due(const struct mvz_chunk_writer *w)
{
    static uint64_t last_ns;
    uint64_t now = mvz_now_ns();
    if (w->queued.raw.len + mvz_collect_pending() < MVZ_CW_COMPRESS_AT &&
        now - last_ns < MVZ_WRITE_INTERVAL_MS * 1000000ull)
        return 0;
    last_ns = now;
    return 1;
}

/* Caller holds mvz_agent.lock. Metadata goes first so that a reader meets a
 * stack's definition no later than the chunk of its first use. */
static void flush_locked(enum mvz_flush how)
{
    mvz_tls.internal++;
    mvz_clock_refresh();
    mvz_trace_fd_check();
    mvz_meta_drain(&mvz_agent.writer);
    mvz_rings_drain(&mvz_agent.writer, how);
    mvz_user_drain_locked();
    mvz_meta_drain(&mvz_agent.writer);
    if (how != MVZ_FLUSH_NORMAL) {
        mvz_collect_flush(&mvz_agent.writer);
        mvz_writer_write_queued_locked();
    }
    mvz_tls.internal--;
}

/* Set while this thread compresses a detached batch, holding write_lock
 * (the writer thread, draining between pieces): the queue then waits for
 * the next chunk, however long it is. */
static __thread int compressing __attribute__((tls_model("initial-exec")));

void mvz_writer_write_queued_locked(void)
{
    if (compressing)
        return;
    pthread_mutex_lock(&mvz_agent.write_lock);
    mvz_cw_flush(&mvz_agent.writer);
    mvz_writer_check_error();
    pthread_mutex_unlock(&mvz_agent.write_lock);
}

/* The writer thread's periodic write: the queued records are detached
 * under `lock`, which is then released, and compressed under write_lock
 * alone. Taking write_lock before releasing `lock` keeps chunks in order. */
static struct mvz_cw_batch detached;

static void write_detached_begin_locked(void)
{
    mvz_collect_flush(&mvz_agent.writer);
    mvz_cw_detach(&mvz_agent.writer, &detached);
    pthread_mutex_lock(&mvz_agent.write_lock);
}

/* Set by a producer whose ring is half full; the writer sleeps on it, and
 * looks at it between pieces of a compression (drain_between). */
static _Atomic int wake_word;

/* Between pieces of a chunk's compression (1 MiB takes 2-3 ms): a thread
 * whose ring filled to half meanwhile has woken us, and its ring is
 * drained now. Left until the compression ended, the ring filled up on
 * CPython's bench run 13-30 times, and each time the program's thread
 * drained it itself, about a millisecond each. lock is taken before
 * write_lock everywhere else, hence trylock: if another thread holds it,
 * that thread is flushing, forking or finishing and the drain can wait. */
static void drain_between(void)
{
    if (!atomic_load_explicit(&wake_word, memory_order_relaxed) ||
        pthread_mutex_trylock(&mvz_agent.lock) != 0)
        return;
    atomic_store_explicit(&wake_word, 0, memory_order_relaxed);
    if (mvz_recording())
        mvz_writer_flush_locked();
    pthread_mutex_unlock(&mvz_agent.lock);
}

static void write_detached_end(void)
{
    compressing = 1;
    mvz_cw_write_detached(&mvz_agent.writer, &detached, drain_between);
    compressing = 0;
    mvz_writer_check_error();
    pthread_mutex_unlock(&mvz_agent.write_lock);
}

/* A full disk, a file size limit or a broken file system must not stop the
 * program: the agent keeps running, drops what it cannot write, and says
 * so once. Readers see a trace that ends early (no END record). Caller
 * holds write_lock. */
void mvz_writer_check_error(void)
{
    static int said;
    struct mvz_chunk_writer *w = &mvz_agent.writer;
    if (!w->error || said)
        return;
    said = 1;
    char why[4400];
    snprintf(why, sizeof(why),
             "%s after %llu bytes (%s); the rest of this run is not recorded, "
             "the program goes on",
             mvz_agent.path, (unsigned long long)w->bytes_written, strerror(w->error));
    mvz_say("cannot write the trace", why);
}

void mvz_writer_flush_locked(void)
{
    flush_locked(MVZ_FLUSH_NORMAL);
}

void mvz_writer_flush_all_locked(void)
{
    flush_locked(MVZ_FLUSH_ALL);
}

void mvz_writer_flush_final_locked(void)
{
    flush_locked(MVZ_FLUSH_FINAL);
}

void mvz_writer_flush(void)
{
    pthread_mutex_lock(&mvz_agent.lock);
    /* Once mvz_finish has written END nothing may follow it: a thread that
     * entered a hook before the end must not write out its ring. */
    if (mvz_recording())
        mvz_writer_flush_locked();
    pthread_mutex_unlock(&mvz_agent.lock);
}

void mvz_write_record(uint8_t kind, const struct mvz_buf *payload)
{
    mvz_tls.internal++;
    pthread_mutex_lock(&mvz_agent.lock);
    mvz_meta_drain(&mvz_agent.writer);
    mvz_cw_record(&mvz_agent.writer, kind, payload);
    pthread_mutex_unlock(&mvz_agent.lock);
    mvz_tls.internal--;
}

/* Called by producers: get the writer to drain now, on its own core,
 * rather than let the ring fill and drain it on the program's time. One
 * wake-up a half ring at most. */
void mvz_writer_wake(void)
{
    /* Read first: while the writer is busy, every event of a half-full ring
     * comes here, and an exchange would pull the line from the writer's
     * core each time. */
    if (!atomic_load_explicit(&wake_word, memory_order_relaxed) &&
        !atomic_exchange_explicit(&wake_word, 1, memory_order_relaxed))
        syscall(SYS_futex, &wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void wait_for_work(void)
{
    struct timespec interval = {0, MVZ_FLUSH_INTERVAL_MS * 1000000L};
    syscall(SYS_futex, &wake_word, FUTEX_WAIT_PRIVATE, 0, &interval, NULL, 0);
    atomic_store_explicit(&wake_word, 0, memory_order_relaxed);
}

/* ---- finishing on behalf of a thread that must not lock or allocate ----
 * A fatal signal may arrive while its thread holds one of our locks or the
 * allocator's (glibc aborts a double free with its arena locked), and _exit
 * may be called from a signal handler. Such threads hand the end of the
 * trace to the writer thread and wait a bounded time: if the writer cannot
 * finish (it needs a lock the dying thread holds), the process dies without
 * it, and `memviz run` still records how. */
static _Atomic int writer_running, final_claimed, final_requested, final_done;
static _Atomic int pause_requested; /* the writer thread is to end (mvz_writer_pause) */
static _Atomic int writer_ended;    /* ... and it has */
static int final_how, final_status, final_sig;

void mvz_finish_via_writer(int how, int status, int sig)
{
    if (!atomic_load(&writer_running) || getpid() != mvz_agent.pid ||
        atomic_load(&mvz_agent.state) != MVZ_RECORDING || atomic_exchange(&final_claimed, 1))
        return;
    final_how = how;
    final_status = status;
    final_sig = sig;
    /* Published after the fields: the writer may wake on its own (the
     * 20 ms timeout) at any moment and read them. */
    atomic_store(&final_requested, 1);
    atomic_store(&wake_word, 1);
    syscall(SYS_futex, &wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 300 && !atomic_load(&final_done); i++)
        nanosleep(&ms, NULL);
}

static _Atomic uint32_t writer_tid;

uint32_t mvz_writer_tid(void)
{
    return atomic_load(&writer_tid);
}

int mvz_writer_is_running(void)
{
    return atomic_load(&writer_running);
}

static void *writer_main(void *arg)
{
    (void)arg;
    mvz_tls.internal = 1;
    atomic_store(&writer_tid, (uint32_t)syscall(SYS_gettid));
    while (atomic_load(&mvz_agent.state) == MVZ_RECORDING && !atomic_load(&pause_requested)) {
        wait_for_work();
        if (atomic_load(&final_requested)) {
            mvz_record_exit(final_how, final_status, final_sig);
            mvz_finish();
            atomic_store(&final_done, 1);
            break;
        }
        mvz_snapshot_reap();
        mvz_snapshot_poll();
        mvz_user_poll(0);
        pthread_mutex_lock(&mvz_agent.lock);
        int write = 0;
        if (atomic_load(&mvz_agent.state) == MVZ_RECORDING) {
            mvz_modules_scan_if_changed();
            sample_rss();
            mvz_writer_flush_locked();
            mvz_sample_poll_locked();
            mvz_runpage_publish(MVZ_RUN_TRACING);
            if ((write = compress_due(&mvz_agent.writer)))
                write_detached_begin_locked();
        }
        pthread_mutex_unlock(&mvz_agent.lock);
        if (write)
            write_detached_end();
    }
    /* mvz_writer_pause, if it took writer_running first, waits for this */
    if (!atomic_exchange(&writer_running, 0)) {
        atomic_store(&writer_ended, 1);
        syscall(SYS_futex, &writer_ended, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
    return NULL;
}

/* The writer thread runs on a stack of ours, noted as the agent's: its
 * frames hold the addresses of the blocks it has just recorded, which a
 * heap snapshot must not take for the program's pointers. A fork child's
 * new writer takes a new one: the parent's writer may still be running on
 * the old one in the parent, and the child has a copy. */
#define WRITER_STACK (2u << 20)
static void *writer_stack(void)
{
    char *s = mmap(NULL, WRITER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED)
        return NULL;
    mprotect(s, 4096, PROT_NONE); /* a guard page, as pthread_create would make */
    mvz_owned_range(s, WRITER_STACK, 1);
    return s;
}

void mvz_writer_start(void)
{
    mvz_tls.internal++;
    mvz_collect_prepare((uint32_t)syscall(SYS_gettid));
    atomic_store(&writer_running, 0);
    atomic_store(&final_claimed, 0);
    atomic_store(&final_requested, 0);
    atomic_store(&final_done, 0);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    void *stack = writer_stack();
    if (stack)
        pthread_attr_setstack(&attr, stack, WRITER_STACK);
    pthread_t t;
    if (pthread_create(&t, &attr, writer_main, NULL) == 0)
        atomic_store(&writer_running, 1); /* from now on it will answer */
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    mvz_tls.internal--;
}

/* Ends the writer thread and waits until it has returned (hooks_ns.c:
 * calls that need a single-threaded caller; the kernel may count it a
 * moment longer). Returns 1 when it was running. Events wait in the rings
 * meanwhile; a ring that fills drains on its own thread. The thread is
 * detached, not joined: a fork child's new writer would otherwise reuse
 * the id of a thread the child never had but its copy of libc's (and
 * ThreadSanitizer's) state still counts. */
int mvz_writer_pause(void)
{
    if (getpid() != mvz_agent.pid || !atomic_exchange(&writer_running, 0))
        return 0; /* none, or it is ending on its own */
    mvz_tls.internal++;
    atomic_store(&pause_requested, 1);
    atomic_store(&wake_word, 1);
    syscall(SYS_futex, &wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    while (!atomic_load(&writer_ended))
        syscall(SYS_futex, &writer_ended, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    atomic_store(&writer_ended, 0);
    atomic_store(&pause_requested, 0);
    mvz_tls.internal--;
    return 1;
}

/* Starts a new writer thread after mvz_writer_pause. */
void mvz_writer_resume(void)
{
    if (atomic_load(&mvz_agent.state) == MVZ_RECORDING)
        mvz_writer_start();
}
