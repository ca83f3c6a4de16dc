/*
 * client.h - a client of the live server's stream (docs/LIVE.md): a thread
 * reads /api/v1/stream and keeps every sample of the window by its number,
 * with the top sites of the samples that came with them, so that a view
 * can show any moment of the window: the time-indexed store behind pause,
 * resume and the cursor of `memviz live`. It reconnects when the
 * connection drops while the program runs.
 */
#ifndef MVZ_TUI_CLIENT_H
#define MVZ_TUI_CLIENT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct live_sample {
    uint64_t t_ns, heap_bytes, heap_blocks, rss, allocations, frees, allocated_bytes;
};

struct live_site {
    uint64_t live_bytes, live_blocks;
    char where[256]; /* "function (file:line)" of its innermost frame */
};

#define LIVE_TOP 20

#define LIVE_INS 16
#define LIVE_LOG 8

/* What a sample's line carried of the sites, the program's instruments
 * and its last log lines (not every line has them). */
struct live_sites {
    size_t n;
    struct live_site v[LIVE_TOP];
    size_t nins;
    char ins[LIVE_INS][96]; /* "requests  1234" */
    size_t nlog;
    char log[LIVE_LOG][160];
    size_t nthreads;
    char threads[4][96]; /* "12345 name  1.2 MiB live" */
    size_t nsnaps;
    char snaps[3][96]; /* the last snapshots: "exit at 1.234 s" */
};

#define LIVE_PROCS 32

struct live_proc {
    int pid, ended;
    char name[64];
};

struct live_client {
    char host[64];
    int port;
    char token[128]; /* "" for none */
    int want_pid;    /* the process to follow; 0: the first (live_client_follow) */
    pthread_t thread;
    int started;
    /* under mu */
    pthread_mutex_t mu;
    int connected, ended, stop;
    int fd; /* the connection, -1 between them */
    char error[256];
    int pid;
    char command[256];
    uint64_t period_ns, peak_bytes, peak_time_ns;
    uint64_t sample_bytes; /* the run is sampled: estimates */
    uint64_t first, next;  /* samples first .. next-1 are kept */
    size_t cap;
    struct live_sample *ring;  /* sample seq at ring[seq % cap] */
    struct live_sites **sites; /* the same; NULL when its line had none */
};

/* Starts reading from host:port; 0, or -1 when out of memory. */
int live_client_start(struct live_client *c);
void live_client_stop(struct live_client *c);
/* GET /api/v1/processes into out (at most LIVE_PROCS); how many, or -1. */
int live_client_processes(struct live_client *c, struct live_proc *out);
/* Follows process pid from now on: forgets the samples kept, reconnects. */
void live_client_follow(struct live_client *c, int pid);
/* POST /api/v1/snapshot (with the token); the server's line in msg. 0, or -1. */
int live_client_snapshot(struct live_client *c, char *msg, size_t cap);
/* Under c->mu: the sites of sample seq, or of the nearest one before it
 * that had them; NULL when none. */
const struct live_sites *live_client_sites_at(const struct live_client *c, uint64_t seq);

#endif
