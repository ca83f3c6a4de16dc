/*
 * run_live.h - memviz run's live server (run_live.c): parse --live, bind
 * before the program starts, serve while it runs, stop after it.
 */
#ifndef MVZ_CMD_RUN_LIVE_H
#define MVZ_CMD_RUN_LIVE_H

#include <stdint.h>

#include "server/http.h"
#include "server/live.h"

struct mvz_run_page;

struct run_live {
    char host[64];
    int port, loopback, fd;
    uint64_t window_ns;
    char token_file[4096];
    char token[128];
    struct mvz_live_procs *procs;
    struct mvz_http *http;
    struct mvz_run_page *page;
    int pid;
};

/* [HOST:]PORT (HOST an IPv4 address or localhost; default 127.0.0.1):
 * 0, or -1 when malformed. */
int run_live_parse(struct run_live *rl, const char *spec);
/* The token: read from rl->token_file, or made and written there (mode
 * 0600). 0, or -1 after printing why. */
int run_live_make_token(struct run_live *rl);
/* Reads or makes the token (rl->token_file), binds and listens: 0, or -1
 * after printing why. */
int run_live_bind(struct run_live *rl);
/* After the fork: follows trace, serves, prints where. 0, or -1 after
 * printing why (the program runs on). */
int run_live_start(struct run_live *rl, const char *trace, struct mvz_run_page *page, int pid);
/* The program ended: the follower reads its trace to the end; stop. */
void run_live_finish(struct run_live *rl);

#endif
