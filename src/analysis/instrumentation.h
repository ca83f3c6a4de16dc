/*
 * instrumentation.h - which call instrumentation an ELF program was built
 * with: what memviz run --callgraph checks before it starts the program.
 */
#ifndef MVZ_ANALYSIS_INSTRUMENTATION_H
#define MVZ_ANALYSIS_INSTRUMENTATION_H

enum {
    MVZ_INSTR_CYG = 1,       /* -finstrument-functions: __cyg_profile_func_enter/exit */
    MVZ_INSTR_MCOUNT = 2,    /* -pg: mcount */
    MVZ_INSTR_FENTRY = 4,    /* -pg -mfentry: __fentry__ */
    MVZ_INSTR_PATCHABLE = 8, /* -fpatchable-function-entry: __patchable_function_entries */
};

/* The MVZ_INSTR_* bits of the ELF file at path (0: none), or -1 when it
 * cannot be read as ELF. */
int mvz_instrumentation(const char *path);
/* The same for a program: its own bits, or when it has none, those of the
 * shared libraries it needs (the hooks they call out to, not ones they
 * define: libc's mcount). */
int mvz_program_instrumentation(const char *path);

#endif
