/*
 * callgraph_asm.h - what the -pg hooks in assembly (callgraph_pg_hooks.S)
 * know of the call graph's structures (callgraph.h): field offsets and
 * constants. Plain numbers, so that the assembler can read them;
 * callgraph_pg.c checks each against the structures at compile time.
 */
#ifndef MVZ_AGENT_CALLGRAPH_ASM_H
#define MVZ_AGENT_CALLGRAPH_ASM_H

/* struct cg_thread */
#define T_BUSY 16
#define T_DEPTH 20
#define T_TAKEN 24
#define T_RNG 28
#define T_FRAMES 32
#define T_STACK_LO 40
#define T_STACK_HI 48

/* struct cg_frame */
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

/* struct cg_node */
#define N_FN 0
#define N_SITE 8
#define N_CALLS 24
#define N_TICKS 32
#define N_PARENT 40
#define N_SELF 44
#define N_LAST_CHILD 48
#define N_LAST_SITE 56
#define N_EXACT_LEFT 88
#define N_PREV_CHILD 96
#define N_KIDS 104
#define N_SITE_TAB 112

/* struct cg_site */
#define S_SITE 0
#define S_CALLS 8
#define S_FOREIGN 20

#define KIND_TAKEN 1                 /* CG_TAKEN */
#define SHADOW_MAX_LESS_2 524286     /* SHADOW_MAX - 2 */
#define HASH_STEP 0xff51afd7ed558ccd /* mvz_hash_step's multiplier */
#define KID_HASH 0x9E3779B97F4A7C15  /* mvz_cg_kid_slot's multiplier */
#define KID_SHIFT 60                 /* and its shift */

#endif
