/*
 * live_priv.h - the live state's insides, shared by live.c (the follower)
 * and render.c (what readers get). Fields under "published" are read and
 * written under mu; the follower's own are its alone.
 */
#ifndef MVZ_SERVER_LIVE_PRIV_H
#define MVZ_SERVER_LIVE_PRIV_H

#include <pthread.h>
#include <stdint.h>

#include "analysis/profile.h"
#include "analysis/symbols.h"
#include "server/live.h"
#include "trace/format.h"

#define FRAMES_MAX 256

struct sample {
    uint64_t t_ns, heap_bytes, heap_blocks, rss, allocations, frees, allocated_bytes;
};

struct top_site {
    uint32_t stack;
    uint64_t live_bytes, live_blocks, allocations, allocated_bytes;
    const char *frames; /* JSON array, owned by the frames cache */
};

#define LOG_KEPT 50

struct pub_instrument {
    int kind; /* enum mvz_user_kind */
    char name[64];
    int64_t value;
    uint64_t count, ns; /* a stopwatch's, over its threads; a tag's live blocks, most bytes */
    uint64_t marked;    /* a tag's blocks marked; value: its live bytes */
    char text[MVZ_USER_TEXT_MAX]; /* a string value's */
};

struct pub_text {
    uint64_t ts;
    char text[256];
};

#define THREADS_KEPT 10

struct pub_thread {
    uint32_t tid;
    char name[32];
    uint64_t live_bytes, allocations;
};

struct mvz_live {
    struct mvz_live_options o;
    pthread_t thread;
    int started;
    /* ---- published, under mu ---- */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct sample *ring; /* sample seq lives at ring[seq % cap] */
    size_t cap;
    uint64_t seq;    /* samples taken */
    uint64_t oldest; /* samples below it are gone (the period changed), whatever cap says */
    struct top_site *top;
    size_t ntop;
    int pid;
    char command[512];
    uint64_t start_realtime_ns, peak_bytes, peak_time_ns;
    uint64_t sample_bytes; /* sampled (in part): every number is an estimate; 0: a full trace */
    uint64_t sample_now;   /* the rate in force now (0: every allocation recorded) */
    int ended, program_done;
    uint64_t period_want; /* a client's new period, for the follower (0: none) */
    int pprof_want;
    uint64_t pprof_gen;
    char *pprof;
    size_t pprof_len;
    struct pub_instrument *ins; /* the program's instruments with a value */
    size_t nins, ins_cap;
    struct pub_text log[LOG_KEPT]; /* its last log lines, oldest first */
    size_t nlog;
    struct pub_text *phases;
    size_t nphases, phases_cap;
    struct pub_text snaps[LOG_KEPT]; /* the last snapshots begun */
    size_t nsnaps;
    struct pub_thread threads[THREADS_KEPT]; /* by live bytes */
    size_t nthreads;
    /* ---- the follower's own ---- */
    struct mvz_profile p;
    struct mvz_symbols *sym;
    struct sample now; /* the values after the last event */
    uint64_t next_t;   /* the next grid point */
    char **frames;     /* per stack id: its frames as JSON, once rendered */
    size_t frames_cap;
    struct mvz_frame *fbuf;
    uint64_t since_check; /* events since the last look at pprof_want */
};

#endif
