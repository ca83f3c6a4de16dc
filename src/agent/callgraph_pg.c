/*
 * callgraph_pg.c - the call graph of programs built with -pg (mcount, called
 * after a function's prologue) or -pg -mfentry (__fentry__, before it).
 * Neither says when a call returns, so the entry hook takes the call's
 * return address over: it keeps the real one in the shadow frame and puts
 * the trampoline's address in its place; the call's return lands in the
 * trampoline, which ends the frame and goes on to the real address.
 *
 * A stack walker must not meet a taken-over return address: the C++
 * exception machinery (_Unwind_RaiseException and its kin), backtrace()
 * and pthread_exit's unwinding would find no unwind information for the
 * trampoline. Their entry points give every taken-over address of the
 * thread back first; those frames are then ended by the next call at
 * their depth or above, or by the return of a frame further out. An
 * unwinder that glibc calls from inside (pthread_cancel's) cannot be
 * caught this way.
 *
 * Without the call graph, mcount and __fentry__ go straight to glibc's,
 * for gprof, and so do __monstartup and _mcleanup; with it, those two do
 * nothing, so that gprof's profiling timer and gmon.out stay out of the way.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/callgraph.h"
#include "trace/callgraph.h"

/* Read by the assembly below (hence `used`: link-time optimisation must
 * keep them and their names). */
__attribute__((used)) int mvz_cg_pg_active;
__attribute__((used)) void *mvz_cg_real_mcount, *mvz_cg_real_fentry;
/* the assembly's fast path: on (the call graph on, the time-stamp counter
 * usable); one call in mask + 1 timed, weighted `every` */
__attribute__((used)) uint32_t mvz_cg_fast_on, mvz_cg_fast_mask, mvz_cg_fast_every;
int mvz_cg_partial;

/* The offsets the assembly uses, checked against the structures. */
#define XSTR(x) #x
#define STR(x) XSTR(x)
#define T_BUSY 16
#define T_DEPTH 20
#define T_TAKEN 24
#define T_RNG 28
#define T_FRAMES 32
#define T_STACK_LO 40
#define T_STACK_HI 48
#define F_NODE 0
#define F_KIND 4
#define F_FOREIGN 5
#define F_WEIGHT 6
#define F_NP 8
#define F_SP 16
#define F_T0 24
#define F_RET 32
#define F_SITE 40
#define F_H 48
#define F_SIZE 56
#define N_FN 0
#define N_SITE 8
#define N_CALLS 24
#define N_PARENT 40
#define N_SELF 44
#define N_LAST_CHILD 48
#define N_LAST_SITE 56
#define N_EXACT_LEFT 88
#define S_SITE 0
#define S_CALLS 8
#define S_FOREIGN 20
#define KIND_TAKEN 1
#define SHADOW_MAX_LESS_2 524286
_Static_assert(offsetof(struct cg_thread, busy) == T_BUSY && sizeof(int) == 4, "busy");
_Static_assert(offsetof(struct cg_thread, depth) == T_DEPTH, "depth");
_Static_assert(offsetof(struct cg_thread, taken) == T_TAKEN, "taken");
_Static_assert(offsetof(struct cg_thread, rng) == T_RNG, "rng");
_Static_assert(offsetof(struct cg_thread, frames) == T_FRAMES, "frames");
_Static_assert(offsetof(struct cg_thread, stack_lo) == T_STACK_LO, "stack_lo");
_Static_assert(offsetof(struct cg_thread, stack_hi) == T_STACK_HI, "stack_hi");
_Static_assert(offsetof(struct cg_frame, node) == F_NODE, "node");
_Static_assert(offsetof(struct cg_frame, kind) == F_KIND, "kind");
_Static_assert(offsetof(struct cg_frame, foreign) == F_FOREIGN, "foreign");
_Static_assert(offsetof(struct cg_frame, weight) == F_WEIGHT, "weight");
_Static_assert(offsetof(struct cg_frame, np) == F_NP, "np");
_Static_assert(offsetof(struct cg_frame, sp) == F_SP, "sp");
_Static_assert(offsetof(struct cg_frame, t0) == F_T0, "t0");
_Static_assert(offsetof(struct cg_frame, ret) == F_RET, "ret");
_Static_assert(offsetof(struct cg_frame, site) == F_SITE, "site");
_Static_assert(offsetof(struct cg_frame, h) == F_H, "h");
_Static_assert(sizeof(struct cg_frame) == F_SIZE, "frame size");
_Static_assert(offsetof(struct cg_node, fn) == N_FN, "fn");
_Static_assert(offsetof(struct cg_node, site) == N_SITE, "site");
_Static_assert(offsetof(struct cg_node, calls) == N_CALLS, "calls");
_Static_assert(offsetof(struct cg_node, parent) == N_PARENT, "parent");
_Static_assert(offsetof(struct cg_node, self) == N_SELF, "self");
_Static_assert(offsetof(struct cg_node, last_child) == N_LAST_CHILD, "last_child");
_Static_assert(offsetof(struct cg_node, last_site) == N_LAST_SITE, "last_site");
_Static_assert(offsetof(struct cg_node, exact_left) == N_EXACT_LEFT, "exact_left");
_Static_assert(offsetof(struct cg_site, site) == S_SITE, "site's site");
_Static_assert(offsetof(struct cg_site, calls) == S_CALLS, "site's calls");
_Static_assert(offsetof(struct cg_site, foreign) == S_FOREIGN, "site's foreign");
_Static_assert(CG_TAKEN == KIND_TAKEN && SHADOW_MAX - 2 == SHADOW_MAX_LESS_2, "constants");
_Static_assert(FOREIGN_SITE == 0x80000000u, "the foreign bit is the parent word's top bit");

/* The common call in assembly: what mvz_cg_pg_fast does when the callee
 * is the caller's last, from its first site or the other one it was last
 * called from, in a context past its first exactly timed calls (and the
 * thread idle, on its own stack, below its top frame): it saves only the
 * registers it uses. Else it declines (8:) to the C path below. %rcx:
 * the thread; %rdi: its top frame, then the new one; %rdx: the callee's
 * node; %rsi: the slot; %r8: the return address; %r10: the site's count;
 * %r9: whether the site is foreign, then scratch. */
#define PG_FAST(slot_from_rbp)                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                    \
    "    push %rbp\n    mov %rsp, %rbp\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                         \
    "    push %rax\n    push %rcx\n    push %rdx\n    push %rsi\n    push %rdi\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 \
    "    push %r8\n    push %r9\n    push %r10\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 \
    "    cmpl $0, mvz_cg_fast_on(%rip)\n    je 8f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                              \
    "    mov mvz_cg_self@gottpoff(%rip), %rax\n    mov %fs:(%rax), %rcx\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                        \
    "    cmp $1, %rcx\n    jbe 8f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                              \
    "    cmpl $0, " STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                          \
        T_BUSY) "(%rcx)\n    jne 8f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                            \
                "    mov " STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   \
                    T_DEPTH) "(%rcx), %eax\n    sub $1, %eax\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   \
                             "    cmp $" STR(SHADOW_MAX_LESS_2) ", %eax\n    ja "                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 \
                                                                "8f\n" slot_from_rbp                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                              \
                                                                "    mov (%rsi), %r8\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                           \
                                                                "    lea mvz_cg_return(%rip), "                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   \
                                                                "%rdi\n    cmp %rdi, %r8\n    je "                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                \
                                                                "8f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                            \
                                                                "    mov %rsi, %rdi\n    "                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                        \
                                                                "sub " STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                       \
                                                                    T_STACK_LO) "(%rcx), %rdi\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                  \
                                                                                "    mov " STR(T_STACK_HI) "(%rcx), %r9\n    sub " STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                           \
                                                                                    T_STACK_LO) "(%rcx), %r9\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   \
                                                                                                "    cmp %r9, %rdi\n    jae 8f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 \
                                                                                                "    imul $" STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 \
                                                                                                    F_SIZE) ", %rax, %rdi\n    add " STR(T_FRAMES) "(%rcx), %rdi\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                               \
                                                                                                                                                   "    cmp %rsi, " STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                          \
                                                                                                                                                       F_SP) "(%rdi)\n    jbe 8f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                               \
                                                                                                                                                             "    mov " STR(F_NP) "(%rdi), %rax\n    test %rax, %rax\n    jz 8f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                \
                                                                                                                                                                                  "    mov " STR(N_LAST_CHILD) "(%rax), %rdx\n    test %rdx, %rdx\n    jz 8f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   \
                                                                                                                                                                                                               "    mov 8(%rbp), %r9\n    sub $1, %r9\n    cmp %r9, " STR(N_FN) "(%rdx)\n    jne 8f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                            \
                                                                                                                                                                                                                                                                                "    cmpl $0, " STR(N_EXACT_LEFT) "(%rdx)\n    jne 8f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                          \
                                                                                                                                                                                                                                                                                                                  "    lea " STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 \
                                                                                                                                                                                                                                                                                                                      N_CALLS) "(%rdx), %r10\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   \
                                                                                                                                                                                                                                                                                                                               "    mov " STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                    \
                                                                                                                                                                                                                                                                                                                                   N_PARENT) "(%rdx), %r9d\n    shr $31, %r9d\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                  \
                                                                                                                                                                                                                                                                                                                                             "    cmp %r8, " STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 \
                                                                                                                                                                                                                                                                                                                                                 N_SITE) "(%rdx)\n    je 3f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                    \
                                                                                                                                                                                                                                                                                                                                                         "    mov " STR(N_LAST_SITE) "(%rdx), %rax\n    test %rax, %rax\n    jz 8f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             \
                                                                                                                                                                                                                                                                                                                                                                                     "    cmp %r8, " STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                         \
                                                                                                                                                                                                                                                                                                                                                                                         S_SITE) "(%rax)\n    jne 8f\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                           \
                                                                                                                                                                                                                                                                                                                                                                                                 "    lea " STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                  \
                                                                                                                                                                                                                                                                                                                                                                                                     S_CALLS) "(%rax), %r10\n    mov " STR(S_FOREIGN) "(%rax), %r9d\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                            \
                                                                                                                                                                                                                                                                                                                                                                                                                                                      "3:  movl $1, " STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                        \
                                                                                                                                                                                                                                                                                                                                                                                                                                                          T_BUSY) "(%rcx)\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                      \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                  "    addq $1, (%r10)\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                         \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                  "    mov %r9b, " STR(F_FOREIGN) "+" STR(F_SIZE) "(%rdi)\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                      \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                  "    mov " STR(F_H) "(%rdi), %r9\n    xor %r8, %r9\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                                           \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                      "    movabs $0xff51afd7ed558ccd, %rax\n    imul %rax, %r9\n" /* mvz_hash_step */                                                                                                                                                                                                                                                                                                                                                                                                                            \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                      "    add $" STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                                                            \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                          F_SIZE) ", %rdi\n    mov %r9, " STR(F_H) "(%rdi)\n"                                                                                                                                                                                                                                                                                                                                                                                                                                                     \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   "    mov " STR(                                                                                                                                                                                                                                                                                                                                                                                                                                                \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                       T_RNG) "(%rcx), %eax\n" /* mvz_cg_time_weight's xorshift */                                                                                                                                                                                                                                                                                                                                                                                                \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                              "    mov %eax, %r9d\n    shl $13, %r9d\n    xor %r9d, %eax\n"                                                                                                                                                                                                                                                                                                                                                                                       \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                              "    mov %eax, %r9d\n    shr $17, %r9d\n    xor %r9d, %eax\n"                                                                                                                                                                                                                                                                                                                                                                                       \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                              "    mov %eax, %r9d\n    shl $5, %r9d\n    xor %r9d, %eax\n"                                                                                                                                                                                                                                                                                                                                                                                        \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                              "    mov %eax, " STR(T_RNG) "(%rcx)\n"                                                                                                                                                                                                                                                                                                                                                                                                              \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                          "    test %eax, mvz_cg_fast_mask(%rip)\n    jz 5f\n"                                                                                                                                                                                                                                                                                                                                                                    \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                          "    movw $0, " STR(                                                                                                                                                                                                                                                                                                                                                                                                    \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                              F_WEIGHT) "(%rdi)\n    movq $0, " STR(F_T0) "(%rdi)\n    jmp 4f\n"                                                                                                                                                                                                                                                                                                                                                  \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                          "5:  mov %rdx, %r9\n    rdtsc\n    shl $32, %rdx\n    or %rdx, %rax\n"                                                                                                                                                                                                                                                                                                  \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                          "    mov %rax, " STR(                                                                                                                                                                                                                                                                                                                                                   \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                              F_T0) "(%rdi)\n    mov %r9, %rdx\n"                                                                                                                                                                                                                                                                                                                                 \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                    "    mov mvz_cg_fast_every(%rip), %eax\n    mov %ax, " STR(F_WEIGHT) "(%rdi)\n"                                                                                                                                                                                                                                                                               \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                         "4:  mov " STR(                                                                                                                                                                                                                                                                          \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             N_SELF) "(%rdx), %eax\n    mov %eax, " STR(F_NODE) "(%rdi)\n"                                                                                                                                                                                                                        \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                "    movb $" STR(KIND_TAKEN) ", " STR(                                                                                                                                                                                            \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                    F_KIND) "(%rdi)\n"                                                                                                                                                                                                            \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                            "    mov %rdx, " STR(                                                                                                                                                                                                 \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                F_NP) "(%rdi)\n"                                                                                                                                                                                                  \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                      "    mov %rsi, " STR(                                                                                                                                                                                       \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                          F_SP) "(%rdi)\n    mov %r8, " STR(F_RET) "(%rdi)\n"                                                                                                                                                     \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   "    mov %r8, " STR(                                                                                                                                           \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                       F_SITE) "(%rdi)\n"                                                                                                                                         \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                               "    addl $1, " STR(                                                                                                                               \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   T_DEPTH) "(%rcx)\n    addl $1, " STR(T_TAKEN) "(%rcx)\n"                                                                                       \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 "    lea mvz_cg_return(%rip), %rax\n    mov %rax, (%rsi)\n"                                      \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 "    movl $0, " STR(                                                                             \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                     T_BUSY) "(%rcx)\n"                                                                           \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             "    pop %r10\n    pop %r9\n    pop %r8\n    pop %rdi\n    pop %rsi\n    pop %rdx\n" \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             "    pop %rcx\n"                                                                     \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             "    pop %rax\n    pop %rbp\n    ret\n"                                              \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             "8:  pop %r10\n    pop %r9\n    pop %r8\n    pop %rdi\n    pop %rsi\n    pop %rdx\n" \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             "    pop %rcx\n"                                                                     \
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             "    pop %rax\n    pop %rbp\n"

/* After PG_FAST: saves what a function's entry must keep (the argument
 * registers and r10, the static chain), calls the C hook with the return
 * address into the function and the slot of its own return address,
 * restores. The next common case is mvz_cg_pg_fast's, which touches no
 * vector register; when it declines, the vector argument registers are
 * saved too and mvz_cg_pg_enter does the rest. The stack may be aligned
 * any way at a -pg call. slot_from_rbp: the slot into %rsi, %rbp the
 * hook's frame. */
#define PG_HOOK(name, entry, real, slot_from_rbp)                                                  \
    ".globl " name "\n.type " name ", @function\n" name ":\n"                                      \
    "    cmpl $0, mvz_cg_pg_active(%rip)\n"                                                        \
    "    je 9f\n"                                                                                  \
    ".globl " entry "\n.hidden " entry "\n" entry ":\n" PG_FAST(                                   \
        slot_from_rbp) "    push %rbp\n    mov %rsp, %rbp\n    and $-16, %rsp\n    sub $192, "     \
                       "%rsp\n"                                                                    \
                       "    mov %rdi, 0(%rsp)\n    mov %rsi, 8(%rsp)\n    mov %rdx, 16(%rsp)\n"    \
                       "    mov %rcx, 24(%rsp)\n    mov %r8, 32(%rsp)\n    mov %r9, 40(%rsp)\n"    \
                       "    mov %rax, 48(%rsp)\n    mov %r10, 56(%rsp)\n"                          \
                       "    mov 8(%rbp), %rdi\n" slot_from_rbp "    call mvz_cg_pg_fast\n"         \
                       "    test %eax, %eax\n    jz 7f\n"                                          \
                       "    movaps %xmm0, 64(%rsp)\n    movaps %xmm1, 80(%rsp)\n    movaps "       \
                       "%xmm2, 96(%rsp)\n"                                                         \
                       "    movaps %xmm3, 112(%rsp)\n    movaps %xmm4, 128(%rsp)\n    movaps "     \
                       "%xmm5, 144(%rsp)\n"                                                        \
                       "    movaps %xmm6, 160(%rsp)\n    movaps %xmm7, 176(%rsp)\n"                \
                       "    mov 8(%rbp), %rdi\n" slot_from_rbp "    call mvz_cg_pg_enter\n"        \
                       "    movaps 64(%rsp), %xmm0\n    movaps 80(%rsp), %xmm1\n    movaps "       \
                       "96(%rsp), %xmm2\n"                                                         \
                       "    movaps 112(%rsp), %xmm3\n    movaps 128(%rsp), %xmm4\n    movaps "     \
                       "144(%rsp), %xmm5\n"                                                        \
                       "    movaps 160(%rsp), %xmm6\n    movaps 176(%rsp), %xmm7\n"                \
                       "7:  mov 0(%rsp), %rdi\n    mov 8(%rsp), %rsi\n    mov 16(%rsp), %rdx\n"    \
                       "    mov 24(%rsp), %rcx\n    mov 32(%rsp), %r8\n    mov 40(%rsp), %r9\n"    \
                       "    mov 48(%rsp), %rax\n    mov 56(%rsp), %r10\n"                          \
                       "    mov %rbp, %rsp\n    pop %rbp\n    ret\n"                               \
                       "9:  mov " real                                                             \
                       "(%rip), %r11\n    test %r11, %r11\n    jz 8f\n    jmp *%r11\n8:  ret\n"    \
                       ".size " name ", .-" name "\n"

#if defined(__x86_64__)
__asm__(
    ".text\n"
    /* mcount: 0(%rbp) is the function's frame pointer, whose slot
     * above holds the function's return address */
    PG_HOOK("mcount", "mvz_cg_mcount_entry", "mvz_cg_real_mcount",
            "    mov 0(%rbp), %rsi\n    add $8, %rsi\n")
    /* __fentry__: called before the prologue, its own return address
     * sits right on top of the function's (mvz_cg_fentry_entry: the
     * same past the check, for the functions callgraph_patch.c
     * patched) */
    PG_HOOK("__fentry__", "mvz_cg_fentry_entry", "mvz_cg_real_fentry", "    lea 16(%rbp), %rsi\n")
    /* Where a taken-over call returns. The common case, the top
     * frame's and not timed, in registers a return leaves free (the
     * return value is in rax, rdx, xmm0, xmm1): pops it, goes to its
     * real return address. Else it keeps the return value registers,
     * asks the C half for the real return address, goes there. */
    ".globl mvz_cg_return\n.hidden mvz_cg_return\n.type mvz_cg_return, @function\n"
    "mvz_cg_return:\n"
    "    cmpl $0, mvz_cg_fast_on(%rip)\n    je 8f\n"
    "    mov mvz_cg_self@gottpoff(%rip), %rcx\n    mov %fs:(%rcx), %rcx\n"
    "    cmp $1, %rcx\n    jbe 8f\n"
    "    cmpl $0, " STR(
        T_BUSY) "(%rcx)\n    jne 8f\n"
                "    mov " STR(
                    T_DEPTH) "(%rcx), %esi\n    sub $1, %esi\n    jb 8f\n"
                             "    imul $" STR(F_SIZE) ", %rsi, %rdi\n    add " STR(
                                 T_FRAMES) "(%rcx), %rdi\n"
                                           "    cmpb $" STR(KIND_TAKEN) ", " STR(
                                               F_KIND) "(%rdi)\n    jne 8f\n"
                                                       "    lea -8(%rsp), %r8\n    cmp %r8, " STR(
                                                           F_SP) "(%rdi)\n    jne 8f\n"
                                                                 "    cmpw $0, " STR(
                                                                     F_WEIGHT) "(%rdi)\n    jne "
                                                                               "8f\n"
                                                                               "    mov " STR(
                                                                                   F_RET) "(%rdi), "
                                                                                          "%r11\n"
                                                                                          /* the
                                                                                           * frame
                                                                                           * off the
                                                                                           * stack
                                                                                           * before
                                                                                           * the
                                                                                           * count:
                                                                                           * a
                                                                                           * signal
                                                                                           * handler
                                                                                           * between
                                                                                           * the two
                                                                                           * sees
                                                                                           * one
                                                                                           * taken-over
                                                                                           * frame
                                                                                           * too
                                                                                           * many,
                                                                                           * which
                                                                                           * only
                                                                                           * bounds
                                                                                           * its
                                                                                           * search
                                                                                           */
                                                                                          "    mov "
                                                                                          "%esi,"
                                                                                          " " STR(T_DEPTH) "(%rcx)\n    subl $1, " STR(
                                                                                              T_TAKEN) "(%rcx)\n"
                                                                                                       "    jmp *%r11\n"
                                                                                                       "8:  push %rbp\n    mov %rsp, %rbp\n    and $-16, %rsp\n    sub $64, %rsp\n"
                                                                                                       "    mov %rax, 0(%rsp)\n    mov %rdx, 8(%rsp)\n"
                                                                                                       "    mov %rbp, %rdi\n    call mvz_cg_pg_return_fast\n"
                                                                                                       "    test %rax, %rax\n    jnz 1f\n"
                                                                                                       "    movaps %xmm0, 16(%rsp)\n    movaps %xmm1, 32(%rsp)\n"
                                                                                                       "    mov %rbp, %rdi\n    call mvz_cg_pg_return\n"
                                                                                                       "    movaps 16(%rsp), %xmm0\n    movaps 32(%rsp), %xmm1\n"
                                                                                                       "1:  mov %rax, %r11\n"
                                                                                                       "    mov 0(%rsp), %rax\n    mov 8(%rsp), %rdx\n"
                                                                                                       "    mov %rbp, %rsp\n    pop %rbp\n    jmp *%r11\n"
                                                                                                       ".size mvz_cg_return, .-mvz_cg_return\n");
#endif

static void resolve_walkers(void);

void mvz_cg_pg_init(void)
{
    mvz_cg_real_mcount = mvz_dlsym_next("mcount");
    mvz_cg_real_fentry = mvz_dlsym_next("__fentry__");
    mvz_cg_pg_active = mvz_cg_on;
    /* memviz run refuses a bad value; set by hand, it means the default */
    uint32_t every = mvz_cg_time_every_parse(getenv("MEMVIZ_CALLGRAPH_TIME"));
    mvz_cg_time_every = every ? every : MVZ_CG_TIME_EVERY_DEFAULT;
    mvz_cg_fast_every = mvz_cg_time_every;
    mvz_cg_fast_mask = mvz_cg_time_every - 1;
    mvz_cg_fast_on = mvz_cg_on && mvz_tsc_ok;
    resolve_walkers();
    const char *filter = getenv("MEMVIZ_CALLGRAPH_FILTER");
    mvz_cg_partial = mvz_cg_on && filter && *filter;
}

/* The real return address a taken-over frame at slot kept, from a frame
 * ended as dead; 0 when none did. */
static uintptr_t grave_ret(struct cg_thread *t, uintptr_t slot)
{
    for (uint32_t i = 1; i <= GRAVES; i++) { /* the newest first */
        const struct cg_grave *g = &t->graves[(t->grave_next - i) % GRAVES];
        if (g->slot == slot)
            return g->ret;
    }
    return 0;
}

/* The real return address kept for slot: by the taken-over frame that
 * holds it (the one a tail call leaves), else by the newest frame ended
 * with it. */
static uintptr_t kept_ret(struct cg_thread *t, uintptr_t slot)
{
    for (uint32_t d = t->depth; d-- > 0;)
        if (t->frames[d].kind == CG_TAKEN && t->frames[d].sp == slot)
            return t->frames[d].ret;
    return grave_ret(t, slot);
}

/* Ends taken-over frame f's time (mvz_cg_frame_close's, in integer
 * registers only): now is 0 until the counter is read. */
static inline MVZ_CG_REGS void close_fast(const struct cg_frame *f, uint64_t *now)
{
    if (!f->weight || !f->np)
        return;
    if (!*now)
        *now = __builtin_ia32_rdtsc();
    if (*now > f->t0)
        __atomic_store_n(&f->np->ticks, f->np->ticks + (*now - f->t0) * f->weight,
                         __ATOMIC_RELAXED);
}

/* The common call, in integer registers only (the hook has not saved the
 * vector ones): the thread known and idle, on its own stack, below the
 * top frame (or a tail call from the top frame), the callee in a context
 * and from a site seen before. 1: not that case (mvz_cg_pg_enter's). */
/* (Not instrumented by ThreadSanitizer either: its runtime's calls would be
 * free to use the vector registers.) */
__attribute__((used)) MVZ_CG_REGS_CODE int mvz_cg_pg_fast(uintptr_t self_ra, uintptr_t *slot)
{
    struct cg_thread *t = mvz_cg_self;
    uintptr_t sp = (uintptr_t)slot, fn = self_ra - 1, ret = *slot;
    if (t == NULL || t == CG_DEAD || t->busy || t->depth == 0 || t->depth >= SHADOW_MAX ||
        !mvz_tsc_ok || sp - t->stack_lo >= t->stack_hi - t->stack_lo)
        return 1;
    struct cg_frame *up = &t->frames[t->depth - 1], *tail = NULL;
    if (ret == (uintptr_t)mvz_cg_return) {
        /* a tail call from the top frame, whose slot this is: that frame
         * ends (as the general hook ends it, dead) and the callee takes
         * its place, with its real return address */
        if (up->kind != CG_TAKEN || up->sp != sp || t->depth < 2)
            return 1;
        tail = up;
        ret = tail->ret;
        up--;
    }
    struct cg_node *p = up->np;
    if (up->sp <= sp || p == NULL)
        return 1;
    struct cg_node *x = p->last_child;
    if (x == NULL || x->fn != fn) { /* another callee: by the index, as child_of does */
        uint32_t c = mvz_cg_find_child(t, up->node, fn);
        if (c == UNTRACKED)
            return 1; /* a new context */
        p->last_child = x = mvz_cg_node(t, c);
    }
    uint64_t *calls = &x->calls; /* the site's count: the node's first, or another seen before */
    int foreign = (x->parent & FOREIGN_SITE) != 0;
    if (x->site != ret) {
        struct cg_site *e = mvz_cg_find_site(t, x, ret);
        if (!e)
            return 1;
        calls = &e->calls;
        foreign = (int)e->foreign;
    }
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t now = 0;
    if (tail) { /* mvz_cg_pop's */
        close_fast(tail, &now);
        t->graves[t->grave_next++ % GRAVES] = (struct cg_grave){tail->sp, tail->ret};
        t->taken--;
        t->depth--;
    }
    __atomic_store_n(calls, *calls + 1, __ATOMIC_RELAXED);
    uint16_t weight = mvz_cg_time_weight(t, x);
    struct cg_frame *f = &t->frames[t->depth];
    f->node = x->self;
    f->np = x;
    f->kind = CG_TAKEN;
    f->foreign = (uint8_t)foreign;
    f->weight = weight;
    f->sp = sp;
    f->t0 = weight ? (now ? now : __builtin_ia32_rdtsc()) : 0;
    f->ret = ret;
    f->site = ret;
    f->h = (up->h ^ ret) * 0xff51afd7ed558ccdull; /* mvz_hash_step */
    t->depth++;
    t->taken++;
    *slot = (uintptr_t)mvz_cg_return;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    return 0;
}

/* A call of the function holding self_ra, whose return address is at slot. */
__attribute__((used)) void mvz_cg_pg_enter(uintptr_t self_ra, uintptr_t *slot)
{
    struct cg_thread *t = mvz_cg_hook_begin();
    if (!t)
        return;
    uint64_t now = 0;
    uintptr_t ret = *slot;
    /* a tail call from a taken-over frame: the slot is already ours, and
     * the real address is that frame's (which the entry ends, as dead) */
    if (ret == (uintptr_t)mvz_cg_return)
        ret = kept_ret(t, (uintptr_t)slot);
    struct cg_frame *f = mvz_cg_enter(t, self_ra - 1, ret, (uintptr_t)slot, &now);
    /* only on the thread's own stack: a frame on another (a coroutine's,
     * a signal's) may return after the thread switched stacks, past
     * frames of ours it never returned through */
    if (f && ret && !mvz_cg_on_own_stack(t, (uintptr_t)slot))
        f->kind = CG_GIVEN_UP;
    else if (f && ret) {
        f->kind = CG_TAKEN;
        f->ret = ret;
        t->taken++;
        *slot = (uintptr_t)mvz_cg_return;
    }
    mvz_cg_hook_end(t);
}

static __attribute__((noreturn)) void lost_return(uintptr_t slot)
{
    static const char msg[] = "memviz: the call graph lost a return address; aborting\n";
    (void)slot;
    (void)!write(2, msg, sizeof(msg) - 1);
    abort();
}

/* The common return, in integer registers only (the trampoline has not
 * saved the vector ones, which may hold the return value): the thread
 * idle, the returning call its top frame. Its real return address; 0: not
 * that case (mvz_cg_pg_return's). */
__attribute__((used)) MVZ_CG_REGS_CODE uintptr_t mvz_cg_pg_return_fast(uintptr_t slot)
{
    struct cg_thread *t = mvz_cg_self;
    if (t == NULL || t == CG_DEAD || t->busy || t->depth == 0 || !mvz_tsc_ok)
        return 0;
    struct cg_frame *f = &t->frames[t->depth - 1];
    if (f->kind != CG_TAKEN || f->sp != slot)
        return 0;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t now = 0;
    close_fast(f, &now);
    uintptr_t ret = f->ret;
    t->taken--;
    t->depth--;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    return ret;
}

/* The taken-over call whose return address was at slot returned: ends its
 * frame (and the dead ones above it); its real return address. */
__attribute__((used)) uintptr_t mvz_cg_pg_return(uintptr_t slot)
{
    struct cg_thread *t = mvz_cg_self;
    if (!t || t == CG_DEAD)
        lost_return(slot);
    int busy = t->busy;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t now = 0;
    uintptr_t ret = 0;
    for (uint32_t d = t->depth; d-- > 0;) {
        struct cg_frame *f = &t->frames[d];
        if (f->kind != CG_TAKEN || f->sp != slot)
            continue;
        ret = f->ret;
        while (t->depth > d + 1)
            mvz_cg_pop(t, &now);
        mvz_cg_frame_close(t, f, &now);
        t->taken--;
        t->depth--;
        break;
    }
    if (!ret && !(ret = grave_ret(t, slot)))
        lost_return(slot);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = busy;
    return ret;
}

void mvz_cg_give_back(struct cg_thread *t)
{
    for (uint32_t d = 0; t->taken && d < t->depth; d++) {
        struct cg_frame *f = &t->frames[d];
        if (f->kind != CG_TAKEN)
            continue;
        uintptr_t *slot = (uintptr_t *)f->sp;
        if (*slot == (uintptr_t)mvz_cg_return)
            *slot = f->ret;
        f->kind = CG_GIVEN_UP;
        t->taken--;
    }
}

/* Before a stack walk of the calling thread. */
static void give_back_self(void)
{
    struct cg_thread *t = mvz_cg_self;
    if (!t || t == CG_DEAD || !t->taken)
        return;
    int busy = t->busy;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    mvz_cg_give_back(t);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = busy;
}

#define REAL(type, name) ((type)real_fn(&real_##name, #name))
static void *real_fn(void *_Atomic *cache, const char *name)
{
    void *f = atomic_load_explicit(cache, memory_order_acquire);
    if (!f) {
        f = mvz_dlsym_next(name);
        atomic_store_explicit(cache, f, memory_order_release);
    }
    return f;
}

/* The stack walkers' entry points: assembly that gives the addresses back
 * (mvz_cg_before_walk) and jumps on to the real function, leaving no frame
 * of its own: the unwinder goes on from the caller's, and no landing pad
 * of ours (a sanitizer's build has them) can call back into it. */
__attribute__((used)) void *mvz_cg_before_walk(void *_Atomic *real, const char *name)
{
    give_back_self();
    void *f = real_fn(real, name);
    if (!f)
        abort(); /* a stack walker the process does not have */
    return f;
}

#define WALK_STUB(name)                                                                            \
    ".globl " name "\n.type " name ", @function\n" name ":\n"                                      \
    "    push %rdi\n    push %rsi\n    push %rdx\n    push %rcx\n    sub $8, %rsp\n"               \
    "    lea mvz_cg_real_" name "(%rip), %rdi\n    lea mvz_cg_name_" name "(%rip), %rsi\n"         \
    "    call mvz_cg_before_walk\n"                                                                \
    "    add $8, %rsp\n    pop %rcx\n    pop %rdx\n    pop %rsi\n    pop %rdi\n"                   \
    "    jmp *%rax\n.size " name ", .-" name "\n"

#define WALKER(name)                                                                               \
    __attribute__((used)) void *_Atomic mvz_cg_real_##name;                                        \
    __attribute__((used)) const char mvz_cg_name_##name[] = #name;
WALKER(_Unwind_RaiseException)
WALKER(_Unwind_Resume)
WALKER(_Unwind_Resume_or_Rethrow)
WALKER(_Unwind_ForcedUnwind)
WALKER(_Unwind_Backtrace)
WALKER(backtrace)
WALKER(pthread_exit)

/* The stack walkers, at start rather than at their first call (which may
 * be in a signal handler, where dlsym must not run); those of libraries
 * not loaded yet are looked up when first needed. */
static void resolve_walkers(void)
{
    real_fn(&mvz_cg_real__Unwind_RaiseException, mvz_cg_name__Unwind_RaiseException);
    real_fn(&mvz_cg_real__Unwind_Resume, mvz_cg_name__Unwind_Resume);
    real_fn(&mvz_cg_real__Unwind_Resume_or_Rethrow, mvz_cg_name__Unwind_Resume_or_Rethrow);
    real_fn(&mvz_cg_real__Unwind_ForcedUnwind, mvz_cg_name__Unwind_ForcedUnwind);
    real_fn(&mvz_cg_real__Unwind_Backtrace, mvz_cg_name__Unwind_Backtrace);
    real_fn(&mvz_cg_real_backtrace, mvz_cg_name_backtrace);
    real_fn(&mvz_cg_real_pthread_exit, mvz_cg_name_pthread_exit);
}

#if defined(__x86_64__)
__asm__(".text\n" WALK_STUB("_Unwind_RaiseException") WALK_STUB("_Unwind_Resume")
            WALK_STUB("_Unwind_Resume_or_Rethrow") WALK_STUB("_Unwind_ForcedUnwind")
                WALK_STUB("_Unwind_Backtrace") WALK_STUB("backtrace") WALK_STUB("pthread_exit"));
#endif

static void *_Atomic real___monstartup, *_Atomic real__mcleanup;

MVZ_EXPORT void __monstartup(unsigned long low, unsigned long high)
{
    if (mvz_cg_pg_active)
        return;
    void (*real)(unsigned long, unsigned long) =
        REAL(void (*)(unsigned long, unsigned long), __monstartup);
    if (real)
        real(low, high);
}

MVZ_EXPORT void _mcleanup(void)
{
    if (mvz_cg_pg_active)
        return;
    void (*real)(void) = REAL(void (*)(void), _mcleanup);
    if (real)
        real();
}
