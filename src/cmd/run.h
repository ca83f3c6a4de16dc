/*
 * run.h - `memviz run`'s options (run_opts.c parses them; run.c runs).
 */
#ifndef MVZ_CMD_RUN_H
#define MVZ_CMD_RUN_H

#include <stdint.h>

#include "cmd/run_live.h"

struct run_opts {
    const char *output;
    long depth;
    int follow;
    int leak_scan;                /* the snapshot at exit (default on) */
    int snapshot_signal;          /* --snapshot-on, 0: none */
    char snapshot_every[40];      /* MEMVIZ_SNAPSHOT_EVERY's value, "" for none */
    int snapshot_contents;        /* snapshots store the blocks' bytes */
    int addresses;                /* ADDRS records: where every block is */
    int callgraph;                /* CALLGRAPH records: every call (MEMVIZ_CALLGRAPH) */
    const char *callgraph_filter; /* the functions patched in (MEMVIZ_CALLGRAPH_FILTER) */
    int index;                    /* index a large trace at the end (default on) */
    uint64_t sample;              /* --sample BYTES: the production mode; 0: every allocation */
    int live;                     /* --live: serve the live state (run_live.c) */
    const char *live_token;       /* --live-token FILE, or NULL */
    struct run_live rl;
    int untraced; /* the trace cannot be written: run the program as is */
    char **argv;  /* the program and its arguments */
    int page_fd;  /* the page shared with the agents (src/trace/runpage.h), or -1 */
    struct mvz_run_page *page;
};

/* Parses memviz run's options into o (argv: "run" first). 0, or the exit
 * status of a usage error (--help: prints it and exits 0). */
int run_parse_options(int argc, char **argv, struct run_opts *o);

#endif
