/*
 * snapshot.h - heap snapshots, inside the agent: snapshot.c takes one (the
 * moment, the copy of the process), scan.c runs in the copy and writes the
 * snapshot's records into the trace. docs/SNAPSHOTS.md says what a snapshot
 * holds and how to read it.
 */
#ifndef MVZ_AGENT_SNAPSHOT_H
#define MVZ_AGENT_SNAPSHOT_H

#include <stdint.h>

#define MVZ_SNAP_NAME_MAX 128
#define MVZ_SNAP_REGS 6 /* the callee-saved registers of the thread that took it */

/* The program's other threads, stopped (stop.c). */
#define MVZ_STOP_MAX 4096
#define MVZ_REGS_WORDS 27 /* x86-64's struct user_regs_struct */
struct mvz_stopped {
    uint32_t tid;
    int ok; /* its registers were read */
    uint64_t regs[MVZ_REGS_WORDS];
};
struct mvz_stop {
    pid_t pid, helper;
    uint32_t self, skip; /* the threads left running: the taker, the writer */
    int go[2], done[2];
    void *stack;
    struct mvz_stopped *t; /* n of them */
    uint32_t n;
};
/* Stops every thread of the program but self and skip; 0, or -1 when they
 * could not be stopped (none is then). */
int mvz_stop_others(struct mvz_stop *s, uint32_t self, uint32_t skip);
/* Calls fn for every thread of process pid (from /proc/PID/task, read with
 * system calls only: no malloc, no lock); returns the sum of what fn
 * returned, or -1 when fn did. */
int mvz_tasks_each(int pid, int (*fn)(void *ctx, uint32_t tid), void *ctx);
/* Maps what stopping needs, once; before the snapshot's locks. */
int mvz_stop_prepare(void);
void mvz_stop_resume(struct mvz_stop *s);

/* What the copy needs to know about the moment it was taken. */
struct mvz_scan_params {
    uint32_t id, trigger;
    uint64_t ts;          /* ns since the agent started */
    uint64_t events;      /* heap events recorded before the snapshot */
    uint32_t tid;         /* the thread that took it */
    int own_stack;        /* that thread's stack is the program's (not the writer's) */
    uintptr_t stack_from; /* its stack, from here up, is a root */
    uintptr_t regs[MVZ_SNAP_REGS];
    uintptr_t tls; /* that thread's thread pointer: its static TLS is around it */
    uintptr_t prog_pc, prog_sp, prog_bp; /* its first frame outside the agent (a return
                                            address and the state there), for naming the
                                            frames of its stack; 0: unknown */
    uint32_t threads_running;            /* other program threads, not stopped (see snapshot.c) */
    const struct mvz_stopped *stopped;   /* the others, stopped, with their registers */
    uint32_t nstopped;
    int contents;                /* write the blocks' bytes (CONTENTS records) */
    int fd;                      /* the trace, O_APPEND */
    volatile uint64_t *pause_ns; /* shared with the process: set once it runs on */
    char name[MVZ_SNAP_NAME_MAX];
};

/* Takes a snapshot now, from the calling thread; regs and stack_from as
 * mvz_scan_params says (stack_from 0: the calling thread is the agent's).
 * For MVZ_SNAP_EXIT, waits until its records are written. Returns 0, or
 * -1 when no snapshot could be taken. */
int mvz_snapshot_take(const char *name, int trigger, uintptr_t stack_from,
                      const uintptr_t regs[MVZ_SNAP_REGS], const uintptr_t caller[3],
                      uint64_t *pause_ns);
/* The state where the function calling this returns to (the agent keeps
 * frame pointers): pc, sp and bp of its caller's frame, for
 * mvz_snapshot_take's caller[]. */
#define MVZ_CALLER_STATE(st)                                                                       \
    do {                                                                                           \
        uintptr_t *fa_ = (uintptr_t *)__builtin_frame_address(0);                                  \
        (st)[0] = (uintptr_t)__builtin_return_address(0);                                          \
        (st)[1] = (uintptr_t)fa_ + 16;                                                             \
        (st)[2] = fa_[0];                                                                          \
    } while (0)

/* Reads memviz run's settings (MEMVIZ_SNAPSHOT_ON, MEMVIZ_SNAPSHOT_EVERY). */
void mvz_snapshot_init(void);
/* The writer thread, outside the agent's lock: takes the snapshots a
 * signal, the period or `memviz snapshot` asked for. */
void mvz_snapshot_poll(void);
/* Reaps the copies that have finished (the writer thread calls it). */
void mvz_snapshot_reap(void);
/* Waits for every copy still scanning, so that their records come before
 * the trace's END. */
void mvz_snapshot_wait_all(void);
/* scan.c: the copy's work; does not return. */
__attribute__((noreturn)) void mvz_scan_run(const struct mvz_scan_params *p);

/* Saves the callee-saved registers into r (an array of MVZ_SNAP_REGS) in the
 * caller's frame: a block the program holds only in one of them across the
 * call must stay reachable. */
#if defined(__x86_64__)
#define MVZ_SAVE_REGS(r)                                                                           \
    __asm__ volatile("mov %%rbx, 0(%0)\n\tmov %%rbp, 8(%0)\n\tmov %%r12, 16(%0)\n\t"               \
                     "mov %%r13, 24(%0)\n\tmov %%r14, 32(%0)\n\tmov %%r15, 40(%0)"                 \
                     :                                                                             \
                     : "r"(r)                                                                      \
                     : "memory")
#else
#define MVZ_SAVE_REGS(r) __builtin_unwind_init()
#endif

#endif
