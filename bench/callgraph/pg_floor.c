/*
 * pg_floor.c - the least a -pg call graph hook that sees returns can cost:
 * an mcount that keeps the function's return address on a per-thread
 * stack and puts a trampoline's address in its place, and a trampoline
 * that takes it back and goes there. It counts nothing. bench/callgraph/run
 * preloads it into the -pg builds ("pg-floor"): memviz's -pg hooks do this
 * and the counting, so the difference is what the counting costs.
 *
 * Assembly throughout, saving only the registers it uses (a C function
 * called from the hook, with the argument registers saved around it, made
 * fib's call+return 5 ns dearer). Not for programs deeper than 65,536
 * calls, nor for ones that unwind their stacks (exceptions, backtrace()).
 */
#include <stdint.h>

__thread uintptr_t floor_stack[1 << 16] __attribute__((tls_model("initial-exec")));
__thread uintptr_t *floor_top __attribute__((tls_model("initial-exec")));

/* mcount runs after the function's prologue: %rbp is the function's frame,
 * its return address at 8(%rbp). */
__asm__(".text\n"
        ".globl mcount\n.type mcount, @function\nmcount:\n"
        "    push %rax\n    push %rcx\n    push %rdx\n"
        "    mov floor_top@gottpoff(%rip), %rax\n    mov %fs:(%rax), %rcx\n"
        "    test %rcx, %rcx\n    jnz 1f\n"
        "    mov floor_stack@gottpoff(%rip), %rcx\n    add %fs:0, %rcx\n"
        "1:  mov 8(%rbp), %rdx\n    mov %rdx, (%rcx)\n    add $8, %rcx\n"
        "    mov %rcx, %fs:(%rax)\n"
        "    lea floor_return(%rip), %rdx\n    mov %rdx, 8(%rbp)\n"
        "    pop %rdx\n    pop %rcx\n    pop %rax\n    ret\n"
        ".size mcount, .-mcount\n"
        /* the return value is in rax and rdx: rcx and r11 are free */
        ".hidden floor_return\n.type floor_return, @function\nfloor_return:\n"
        "    mov floor_top@gottpoff(%rip), %r11\n    mov %fs:(%r11), %rcx\n"
        "    sub $8, %rcx\n    mov %rcx, %fs:(%r11)\n"
        "    jmp *(%rcx)\n"
        ".size floor_return, .-floor_return\n");
