/*
 * hooks_process.c - the process events around the heap: how the program
 * ends (return from main, exit, _exit, quick_exit, a fatal signal), fork and
 * exec (each new process or image gets its own trace), and dlopen/dlclose
 * (the module map changes).
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "trace/runpage.h"

/* ---- exit paths ---- */
/* Returning from main also ends in exit(), but inside libc where we cannot
 * hook it; init.c's on_exit handler records that case with its status. */
MVZ_EXPORT void exit(int status)
{
    void (*real_exit)(int) = (void (*)(int))mvz_dlsym_next("exit");
    mvz_record_exit(MVZ_EXIT_EXIT, status, 0);
    mvz_callgraph_exit_called();
    real_exit(status);
    __builtin_unreachable();
}

/* _exit and _Exit: no atexit handlers run after them, and they may be
 * called from a signal handler, so the writer thread ends the trace and the
 * process leaves by the system call itself (no dlsym, which allocates). */
__attribute__((noreturn)) static void exit_now(int status)
{
    mvz_finish_via_writer(MVZ_EXIT__EXIT, status, 0);
    for (;;)
        syscall(SYS_exit_group, status);
}

MVZ_EXPORT void _exit(int status)
{
    exit_now(status);
}

MVZ_EXPORT void _Exit(int status)
{
    exit_now(status);
}

MVZ_EXPORT void quick_exit(int status)
{
    void (*real)(int) = (void (*)(int))mvz_dlsym_next("quick_exit");
    mvz_record_exit(MVZ_EXIT_QUICK, status, 0);
    real(status); /* runs our at_quick_exit handler, which finishes the trace */
    __builtin_unreachable();
}

/* ---- signals that end the program ----
 * Every signal whose default action ends the process gets our handler
 * where the program left that default, so that the trace is complete and
 * says how the program died: crashes, and termination requests too (a
 * SIGTERM from a service manager, a ^C, a SIGPIPE from a closed pipe),
 * which otherwise lose what the agent had not written yet (up to 100 ms
 * of events, all of them in a short program). The program never sees
 * our handler: sigaction and signal report the default action in its
 * place (CPython installs its KeyboardInterrupt handler only where SIGINT
 * is at the default, and still does), and a handler the program installs
 * replaces ours. */
static const int fatal_signals[] = {SIGSEGV, SIGBUS,  SIGILL,  SIGFPE,  SIGABRT, SIGSYS,
                                    SIGTRAP, SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGUSR1,
                                    SIGUSR2, SIGPIPE, SIGALRM, SIGXCPU, SIGXFSZ};

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);
/* Resolved at start: a signal handler must not call dlsym (it allocates). */
static sigaction_fn real_sigaction;
static signal_fn real_signal;

static void on_fatal_signal(int sig)
{
    int saved = errno;
    mvz_tls.internal++;
    mvz_finish_via_writer(MVZ_EXIT_SIGNAL, 0, sig);
    mvz_tls.internal--;
    /* Die of the same signal with its default action: re-raise now for
     * signals sent to us; a faulting instruction faults again on return. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    real_sigaction(sig, &dfl, NULL);
    raise(sig);
    errno = saved;
}

/* Installs our handler only where the program left the default action, so
 * ignored signals stay ignored and the program's own handlers are kept. */
static void install_fatal_handlers(void)
{
    real_sigaction = (sigaction_fn)mvz_dlsym_next("sigaction");
    real_signal = (signal_fn)mvz_dlsym_next("signal");
    if (!real_sigaction || !real_signal)
        return;
    for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(*fatal_signals); i++) {
        struct sigaction old;
        if (real_sigaction(fatal_signals[i], NULL, &old) < 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO))
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_fatal_signal;
        sigfillset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART | SA_ONSTACK;
        real_sigaction(fatal_signals[i], &sa, NULL);
    }
}

/* ---- alternate signal stacks ----
 * A stack overflow faults with no stack left to run a handler on; without an
 * alternate stack the kernel kills the process and the trace cannot say how
 * it died. Each thread that records gets one, unless the program set its
 * own; the handler only hands the end of the trace to the writer thread, so
 * a small stack is enough. */
#define ALTSTACK_SIZE (64 * 1024)
static __thread void *altstack __attribute__((tls_model("initial-exec")));

void mvz_altstack_setup(void)
{
    stack_t cur;
    if (altstack || sigaltstack(NULL, &cur) < 0 || !(cur.ss_flags & SS_DISABLE))
        return;
    void *p = mmap(NULL, ALTSTACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return;
    mvz_owned_map(p, ALTSTACK_SIZE);
    stack_t ss = {.ss_sp = p, .ss_size = ALTSTACK_SIZE, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) < 0) {
        mvz_unmap(p, ALTSTACK_SIZE);
        return;
    }
    altstack = p;
}

/* At thread exit: drop our stack, if it is still the thread's. */
void mvz_altstack_release(void)
{
    stack_t cur;
    if (!altstack)
        return;
    if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == altstack && !(cur.ss_flags & SS_ONSTACK)) {
        stack_t off = {.ss_flags = SS_DISABLE};
        if (sigaltstack(&off, NULL) == 0)
            mvz_unmap(altstack, ALTSTACK_SIZE);
    }
    altstack = NULL;
}

static int is_ours(void (*handler)(int))
{
    return handler == on_fatal_signal;
}

MVZ_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!real_sigaction)
        real_sigaction = (sigaction_fn)mvz_dlsym_next("sigaction");
    struct sigaction wrapped;
    int rc = real_sigaction(sig, mvz_callgraph_wrap(sig, act, &wrapped) ? &wrapped : act, old);
    if (rc == 0 && old && !(old->sa_flags & SA_SIGINFO) && is_ours(old->sa_handler)) {
        memset(old, 0, sizeof(*old));
        old->sa_handler = SIG_DFL;
    }
    if (rc == 0)
        mvz_callgraph_unwrap(sig, old);
    return rc;
}

MVZ_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    if (!real_signal)
        real_signal = (signal_fn)mvz_dlsym_next("signal");
    if (mvz_cg_on && handler != SIG_ERR) {
        /* through sigaction, to be wrapped (glibc's signal: BSD semantics) */
        struct sigaction act, old;
        memset(&act, 0, sizeof(act));
        act.sa_handler = handler;
        act.sa_flags = SA_RESTART;
        sigemptyset(&act.sa_mask);
        sigaddset(&act.sa_mask, sig);
        if (sigaction(sig, &act, &old) < 0)
            return SIG_ERR;
        union {
            sighandler_t h;
            void (*a)(int, siginfo_t *, void *);
        } u;
        if (old.sa_flags & SA_SIGINFO)
            u.a = old.sa_sigaction;
        else
            u.h = old.sa_handler;
        return u.h;
    }
    sighandler_t old = real_signal(sig, handler);
    return is_ours(old) ? SIG_DFL : old;
}

/* ---- fork ---- */
static void before_fork(void)
{
    mvz_tls.internal++;
    pthread_mutex_lock(&mvz_agent.lock);
    pthread_mutex_lock(&mvz_agent.meta_lock);
    pthread_mutex_lock(&mvz_agent.write_lock);
    mvz_mem_before_fork();
}

static void after_fork_parent(void)
{
    mvz_mem_after_fork(0);
    pthread_mutex_unlock(&mvz_agent.write_lock);
    pthread_mutex_unlock(&mvz_agent.meta_lock);
    pthread_mutex_unlock(&mvz_agent.lock);
    mvz_tls.internal--;
}

/* In the child only the forking thread survives; its copy of our state
 * describes the parent. Start a new trace that names the parent's. */
static void after_fork_child(void)
{
    mvz_mem_after_fork(1);
    pthread_mutex_init(&mvz_agent.lock, NULL);
    pthread_mutex_init(&mvz_agent.meta_lock, NULL);
    pthread_mutex_init(&mvz_agent.write_lock, NULL);
    if (atomic_load(&mvz_agent.state) != MVZ_RECORDING || !mvz_agent.follow) {
        atomic_store(&mvz_agent.state, MVZ_FINISHED);
        mvz_tls.internal--;
        return;
    }
    mvz_cw_destroy(&mvz_agent.writer);
    mvz_trace_fd_release();
    mvz_agent.writer_ok = 0;
    mvz_agent.pid = getpid();
    mvz_clock_init();
    atomic_store(&mvz_agent.seq, 1);
    mvz_agent.lost_events = 0;
    memcpy(mvz_agent.parent_path, mvz_agent.path, sizeof(mvz_agent.path));
    mvz_agent.child_how = MVZ_CHILD_FORK;
    int fd = mvz_open_descendant_trace();
    if (fd >= 0)
        fd = mvz_trace_fd_adopt(fd);
    if (fd < 0 || mvz_cw_init(&mvz_agent.writer, fd) < 0 ||
        mvz_cw_write_header(&mvz_agent.writer) < 0) {
        atomic_store(&mvz_agent.state, MVZ_FINISHED);
        mvz_tls.internal--;
        return;
    }
    mvz_agent.writer_ok = 1;
    mvz_setenv("MEMVIZ_PARENT_TRACE", mvz_agent.path);
    mvz_runpage_after_fork_child();
    mvz_sample_after_fork_child();
    mvz_user_after_fork_child();
    mvz_stopwatch_after_fork_child();
    mvz_stacks_after_fork_child();
    mvz_callgraph_after_fork_child();
    mvz_rings_after_fork_child();
    mvz_write_process_record();
    mvz_sample_write_record(); /* after mvz_rings_after_fork_child reset the collector */
    mvz_modules_after_fork_child();
    mvz_check_allocator();
    mvz_announce_to_parent();
    mvz_tls.internal--;
    mvz_writer_start();
}

void mvz_process_hooks_init(void)
{
    install_fatal_handlers();
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* ---- exec: the image is replaced, this trace ends here ---- */
static void before_exec(const char *path)
{
    if (atomic_load(&mvz_agent.state) != MVZ_RECORDING || getpid() != mvz_agent.pid)
        return;
    mvz_tls.internal++;
    mvz_callgraph_write_all(); /* superseded by the end's, if exec fails */
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, mvz_now_ns() - mvz_agent.start_ns);
    mvz_put_str(&b, path);
    mvz_write_record(MVZ_REC_EXEC, &b);
    mvz_buf_free(&b);
    pthread_mutex_lock(&mvz_agent.lock);
    mvz_writer_flush_all_locked(); /* the image may vanish; or exec fails */
    mvz_runpage_publish(mvz_collect_exact() ? MVZ_RUN_EXECED : MVZ_RUN_INEXACT);
    pthread_mutex_unlock(&mvz_agent.lock);
    mvz_tls.internal--;
}

#define EXEC_REAL(name, type) ((type)mvz_dlsym_next(name))

MVZ_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    typedef int (*fn)(const char *, char *const[], char *const[]);
    before_exec(path);
    return EXEC_REAL("execve", fn)(path, argv, envp);
}

MVZ_EXPORT int execv(const char *path, char *const argv[])
{
    typedef int (*fn)(const char *, char *const[]);
    before_exec(path);
    return EXEC_REAL("execv", fn)(path, argv);
}

MVZ_EXPORT int execvp(const char *file, char *const argv[])
{
    typedef int (*fn)(const char *, char *const[]);
    before_exec(file);
    return EXEC_REAL("execvp", fn)(file, argv);
}

MVZ_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    typedef int (*fn)(const char *, char *const[], char *const[]);
    before_exec(file);
    return EXEC_REAL("execvpe", fn)(file, argv, envp);
}

MVZ_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    typedef int (*fn)(int, char *const[], char *const[]);
    before_exec("(fexecve)");
    return EXEC_REAL("fexecve", fn)(fd, argv, envp);
}

/* execl, execlp, execle: collect the variadic arguments into an array on
 * the stack (no allocation) and go through the array forms. */
#define COLLECT_ARGS(first, ap, argv)                                                              \
    size_t argc_ = 1;                                                                              \
    va_start(ap, first);                                                                           \
    while (va_arg(ap, char *))                                                                     \
        argc_++;                                                                                   \
    va_end(ap);                                                                                    \
    char **argv = __builtin_alloca((argc_ + 1) * sizeof(char *));                                  \
    va_start(ap, first);                                                                           \
    argv[0] = (char *)first;                                                                       \
    for (size_t i_ = 1; i_ <= argc_; i_++)                                                         \
        argv[i_] = va_arg(ap, char *);

MVZ_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    COLLECT_ARGS(arg, ap, argv);
    va_end(ap);
    return execv(path, argv);
}

MVZ_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    COLLECT_ARGS(arg, ap, argv);
    va_end(ap);
    return execvp(file, argv);
}

MVZ_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    COLLECT_ARGS(arg, ap, argv);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}

/* ---- dlopen / dlclose ---- */
static void rescan_modules(void)
{
    if (!mvz_recording())
        return;
    mvz_modules_scan();
}

MVZ_EXPORT void *dlopen(const char *file, int mode)
{
    typedef void *(*fn)(const char *, int);
    static fn real;
    if (!real)
        real = (fn)dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.34");
    if (!real)
        real = (fn)mvz_dlsym_next("dlopen");
    void *h = real(file, mode);
    if (h) {
        rescan_modules();
        mvz_callgraph_patch();
    }
    return h;
}

MVZ_EXPORT int dlclose(void *handle)
{
    typedef int (*fn)(void *);
    static fn real;
    if (!real)
        real = (fn)dlvsym(RTLD_NEXT, "dlclose", "GLIBC_2.34");
    if (!real)
        real = (fn)mvz_dlsym_next("dlclose");
    int rc = real(handle);
    rescan_modules();
    return rc;
}
