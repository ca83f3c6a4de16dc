/*
 * callgraph_pg_hooks.S - the -pg hooks' entry points: mcount (called after
 * a function's prologue), __fentry__ (before it, -mfentry; also where the
 * functions callgraph_patch.c patched call in) and mvz_cg_return, where a
 * call whose return address was taken over returns. callgraph_pg.c says
 * what they do; this is the part that has to be assembly.
 *
 * Each entry point tries the commonest case first, in assembly that saves
 * only the registers it uses and reads the structures at the offsets of
 * callgraph_asm.h; anything else goes on to the C paths, the registers
 * saved as they need.
 */
#include "agent/callgraph_asm.h"

#if defined(__x86_64__)

	.text

/* The slot of the function's return address into %rsi, %rbp being the
 * hook's frame: for mcount, 0(%rbp) is the function's frame pointer, the
 * slot right above it; for __fentry__, the function's return address sits
 * right above the hook's own. */
.macro SLOT fentry
.if \fentry
	lea 16(%rbp), %rsi
.else
	mov 0(%rbp), %rsi
	add $8, %rsi
.endif
.endm

/*
 * The common call: what mvz_cg_pg_fast does when the callee is one of the
 * caller's last two or in its child table, called from its first site,
 * the other site it was last called from or one in its site table, in a
 * context past its first exactly timed calls,
 * and the thread is idle, on its own stack, below its top frame or tail
 * called by it (the C path also keeps the replaced frame's return address
 * among the graves: the callee's frame holds it as well). Else it
 * declines: falls through to what follows the macro, every register as it
 * was.
 *   %rcx the thread        %rdi its top frame, then the new one
 *   %rdx the callee's node %rsi the slot    %r8 the return address
 *   %r10 the site's count  %r9 whether the site is foreign, and scratch
 */
.macro PG_FAST fentry
	push %rbp
	mov %rsp, %rbp
	push %rax
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %r8
	push %r9
	push %r10
	cmpl $0, mvz_cg_fast_on(%rip)
	je 10f
	mov mvz_cg_self@gottpoff(%rip), %rax
	mov %fs:(%rax), %rcx
	cmp $1, %rcx			/* no thread state, or CG_DEAD */
	jbe 10f
	cmpl $0, T_BUSY(%rcx)
	jne 10f
	mov T_DEPTH(%rcx), %eax		/* 1 <= depth < SHADOW_MAX */
	sub $1, %eax
	cmp $SHADOW_MAX_LESS_2, %eax
	ja 10f
	SLOT \fentry
	mov (%rsi), %r8
	mov %rsi, %rdi			/* on the thread's own stack */
	sub T_STACK_LO(%rcx), %rdi
	mov T_STACK_HI(%rcx), %r9
	sub T_STACK_LO(%rcx), %r9
	cmp %r9, %rdi
	jae 10f
	imul $F_SIZE, %rax, %rdi	/* the top frame */
	add T_FRAMES(%rcx), %rdi
	lea mvz_cg_return(%rip), %r9
	cmp %r9, %r8
	jne 1f
	/* a tail call from the top frame, whose slot this is (taken over,
	 * not timed, not the only frame): the callee takes its place, with
	 * its real return address, under the frame below */
	test %eax, %eax
	jz 10f
	cmpb $KIND_TAKEN, F_KIND(%rdi)
	jne 10f
	cmp %rsi, F_SP(%rdi)
	jne 10f
	cmpw $0, F_WEIGHT(%rdi)
	jne 10f
	mov F_RET(%rdi), %r8
	sub $F_SIZE, %rdi
1:	cmp %rsi, F_SP(%rdi)		/* the caller's frame, above the slot */
	jbe 10f
	mov F_NP(%rdi), %rax		/* its node, and the callee's */
	test %rax, %rax
	jz 10f
	mov 8(%rbp), %r9		/* the callee: the hook's return address - 1 */
	sub $1, %r9
	mov N_LAST_CHILD(%rax), %rdx
	test %rdx, %rdx
	jz 10f
	cmp %r9, N_FN(%rdx)
	je 2f
	mov N_PREV_CHILD(%rax), %rdx
	test %rdx, %rdx
	jz 1f
	cmp %r9, N_FN(%rdx)
	je 2f
1:	mov N_KIDS(%rax), %rdx		/* its child table: mvz_cg_kid_slot(fn) */
	test %rdx, %rdx
	jz 10f
	movabs $KID_HASH, %r10
	imul %r9, %r10
	shr $KID_SHIFT, %r10
	mov (%rdx,%r10,8), %rdx
	test %rdx, %rdx
	jz 10f
	cmp %r9, N_FN(%rdx)
	jne 10f
2:	cmpl $0, N_EXACT_LEFT(%rdx)
	jne 10f
	lea N_CALLS(%rdx), %r10		/* the site's count and foreign flag */
	mov N_PARENT(%rdx), %r9d
	shr $31, %r9d
	cmp %r8, N_SITE(%rdx)
	je 3f
	mov N_LAST_SITE(%rdx), %rax	/* its last other site, or its table's */
	test %rax, %rax
	jz 1f
	cmp %r8, S_SITE(%rax)
	je 7f
1:	mov N_SITE_TAB(%rdx), %rax
	test %rax, %rax
	jz 10f
	movabs $KID_HASH, %r10
	imul %r8, %r10
	shr $KID_SHIFT, %r10
	mov (%rax,%r10,8), %rax
	test %rax, %rax
	jz 10f
	cmp %r8, S_SITE(%rax)
	jne 10f
7:	lea S_CALLS(%rax), %r10
	mov S_FOREIGN(%rax), %r9d
3:	movl $1, T_BUSY(%rcx)		/* from here on, no declining */
	addq $1, (%r10)
	mov %r9b, F_SIZE+F_FOREIGN(%rdi)
	mov F_H(%rdi), %r9		/* mvz_hash_step(top's h, site) */
	xor %r8, %r9
	movabs $HASH_STEP, %rax
	imul %rax, %r9
	add $F_SIZE, %rdi
	mov %r9, F_H(%rdi)
	mov T_RNG(%rcx), %eax		/* mvz_cg_time_weight's xorshift */
	mov %eax, %r9d
	shl $13, %r9d
	xor %r9d, %eax
	mov %eax, %r9d
	shr $17, %r9d
	xor %r9d, %eax
	mov %eax, %r9d
	shl $5, %r9d
	xor %r9d, %eax
	mov %eax, T_RNG(%rcx)
	test %eax, mvz_cg_fast_mask(%rip)
	jz 5f
	movw $0, F_WEIGHT(%rdi)		/* not timed */
	movq $0, F_T0(%rdi)
	jmp 4f
5:	mov %rdx, %r9			/* timed, weighted mvz_cg_fast_every */
	rdtsc
	shl $32, %rdx
	or %rdx, %rax
	mov %rax, F_T0(%rdi)
	mov %r9, %rdx
	mov mvz_cg_fast_every(%rip), %eax
	mov %ax, F_WEIGHT(%rdi)
4:	mov N_SELF(%rdx), %eax
	mov %eax, F_NODE(%rdi)
	movb $KIND_TAKEN, F_KIND(%rdi)
	mov %rdx, F_NP(%rdi)
	mov %rsi, F_SP(%rdi)
	mov %r8, F_RET(%rdi)
	mov %r8, F_SITE(%rdi)
	lea mvz_cg_return(%rip), %rax
	cmp %rax, (%rsi)		/* a tail call: the frame replaced */
	je 6f
	addl $1, T_DEPTH(%rcx)
	addl $1, T_TAKEN(%rcx)
	mov %rax, (%rsi)		/* the return taken over */
6:	movl $0, T_BUSY(%rcx)
	pop %r10
	pop %r9
	pop %r8
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rax
	pop %rbp
	ret
10:	pop %r10
	pop %r9
	pop %r8
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rax
	pop %rbp
.endm

/*
 * An entry point: with the call graph off, straight to glibc's (gprof's)
 * hook, if any. Else PG_FAST; else the C path: saves what a function's
 * entry must keep (the argument registers and r10, the static chain),
 * calls mvz_cg_pg_fast (integer registers only) with the return address
 * into the function and the slot, and when that declines too, saves the
 * vector argument registers as well and calls mvz_cg_pg_enter. The stack
 * may be aligned any way at a -pg call.
 */
.macro PG_HOOK name, entry, real, fentry
	.globl \name
	.type \name, @function
\name:
	cmpl $0, mvz_cg_pg_active(%rip)
	je 12f
	.globl \entry
	.hidden \entry
\entry:
	PG_FAST \fentry
	push %rbp
	mov %rsp, %rbp
	and $-16, %rsp
	sub $192, %rsp
	mov %rdi, 0(%rsp)
	mov %rsi, 8(%rsp)
	mov %rdx, 16(%rsp)
	mov %rcx, 24(%rsp)
	mov %r8, 32(%rsp)
	mov %r9, 40(%rsp)
	mov %rax, 48(%rsp)
	mov %r10, 56(%rsp)
	mov 8(%rbp), %rdi
	SLOT \fentry
	call mvz_cg_pg_fast
	test %eax, %eax
	jz 11f
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
	movaps %xmm\n, 64+16*\n(%rsp)
.endr
	mov 8(%rbp), %rdi
	SLOT \fentry
	call mvz_cg_pg_enter
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
	movaps 64+16*\n(%rsp), %xmm\n
.endr
11:	mov 0(%rsp), %rdi
	mov 8(%rsp), %rsi
	mov 16(%rsp), %rdx
	mov 24(%rsp), %rcx
	mov 32(%rsp), %r8
	mov 40(%rsp), %r9
	mov 48(%rsp), %rax
	mov 56(%rsp), %r10
	mov %rbp, %rsp
	pop %rbp
	ret
12:	mov \real(%rip), %r11
	test %r11, %r11
	jz 13f
	jmp *%r11
13:	ret
	.size \name, .-\name
.endm

	PG_HOOK mcount, mvz_cg_mcount_entry, mvz_cg_real_mcount, 0
	PG_HOOK __fentry__, mvz_cg_fentry_entry, mvz_cg_real_fentry, 1

/*
 * Where a taken-over call returns. The common case, the top frame's, in
 * registers a return leaves free (the return value is in rax, rdx, xmm0
 * and xmm1; rax and rdx saved around the counter's read when the call was
 * timed): ends the frame (its time to its node when timed), goes to its
 * real return address. Else keeps the return value registers, asks the C half
 * (mvz_cg_pg_return_fast, integer registers only, then mvz_cg_pg_return)
 * for the real return address, goes there.
 */
	.globl mvz_cg_return
	.hidden mvz_cg_return
	.type mvz_cg_return, @function
mvz_cg_return:
	cmpl $0, mvz_cg_fast_on(%rip)
	je 10f
	mov mvz_cg_self@gottpoff(%rip), %rcx
	mov %fs:(%rcx), %rcx
	cmp $1, %rcx
	jbe 10f
	cmpl $0, T_BUSY(%rcx)
	jne 10f
	mov T_DEPTH(%rcx), %esi
	sub $1, %esi
	jb 10f
	imul $F_SIZE, %rsi, %rdi	/* the top frame: taken over, this slot's */
	add T_FRAMES(%rcx), %rdi
	cmpb $KIND_TAKEN, F_KIND(%rdi)
	jne 10f
	lea -8(%rsp), %r8
	cmp %r8, F_SP(%rdi)
	jne 10f
	movzwl F_WEIGHT(%rdi), %r8d	/* timed: its time, weighted, to its node */
	test %r8d, %r8d
	jz 1f
	mov F_NP(%rdi), %r9
	test %r9, %r9
	jz 1f
	push %rax
	push %rdx
	rdtsc
	shl $32, %rdx
	or %rdx, %rax
	sub F_T0(%rdi), %rax
	jbe 2f
	imul %r8, %rax
	add %rax, N_TICKS(%r9)
2:	pop %rdx
	pop %rax
1:	mov F_RET(%rdi), %r11
	/* the frame off the stack before the count: a signal handler
	 * between the two sees one taken-over frame too many, which only
	 * bounds its search */
	mov %esi, T_DEPTH(%rcx)
	subl $1, T_TAKEN(%rcx)
	jmp *%r11
10:	push %rbp
	mov %rsp, %rbp
	and $-16, %rsp
	sub $64, %rsp
	mov %rax, 0(%rsp)
	mov %rdx, 8(%rsp)
	mov %rbp, %rdi
	call mvz_cg_pg_return_fast
	test %rax, %rax
	jnz 11f
	movaps %xmm0, 16(%rsp)
	movaps %xmm1, 32(%rsp)
	mov %rbp, %rdi
	call mvz_cg_pg_return
	movaps 16(%rsp), %xmm0
	movaps 32(%rsp), %xmm1
11:	mov %rax, %r11
	mov 0(%rsp), %rax
	mov 8(%rsp), %rdx
	mov %rbp, %rsp
	pop %rbp
	jmp *%r11
	.size mvz_cg_return, .-mvz_cg_return

#endif

	.section .note.GNU-stack, "", @progbits
