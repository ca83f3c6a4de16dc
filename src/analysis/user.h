/*
 * user.h - what a program recorded through the instrumentation API
 * (include/memviz.h; USER records, docs/FORMAT.md): its counters and
 * values (the latest of each), its log and its phases, gathered by the
 * replay into struct mvz_trace.
 */
#ifndef MVZ_ANALYSIS_USER_H
#define MVZ_ANALYSIS_USER_H

#include <stddef.h>
#include <stdint.h>

#include "trace/buf.h"

/* A stopwatch's sections and time in one thread. */
struct mvz_user_sw_thread {
    uint32_t tid;
    uint64_t count, ns;
};

struct mvz_user_instrument {
    int kind; /* enum mvz_user_kind; 0: an id never defined */
    char *name;
    int64_t value;                      /* a double's bits for MVZ_USER_VALUE_DOUBLE */
    char *text;                         /* MVZ_USER_VALUE_TEXT's latest */
    int have;                           /* a value was recorded */
    struct mvz_user_sw_thread *threads; /* a stopwatch's, by thread */
    size_t nthreads;
};

struct mvz_user_text {
    uint64_t ts;
    uint32_t tid;
    char *text;
};

/* A block marked with a tag (memviz_tag_mark). */
struct mvz_user_mark {
    uint64_t name; /* the block's name (HEAP records') */
    uint32_t tag;  /* the tag's instrument id */
};

struct mvz_user {
    struct mvz_user_instrument *ins; /* by id */
    size_t nins;
    struct mvz_user_mark *marks; /* in the order they came */
    size_t nmarks, marks_cap;
    struct mvz_user_text *logs, *phases; /* in time order */
    size_t nlogs, nphases, logs_cap, phases_cap;
    struct mvz_user_text *snapshots; /* the heap snapshots begun: name, time */
    size_t nsnapshots, snapshots_cap;
};

/* A heap snapshot begun (a SNAPSHOT record), into u: for the views that
 * mark moments. */
void mvz_user_add_snapshot(struct mvz_user *u, uint64_t ts, const char *name);
/* A block marked (a USER TAG record), into u. */
void mvz_user_add_mark(struct mvz_user *u, uint64_t name, uint32_t tag);
/* A USER record's payload, into u. */
void mvz_user_decode(struct mvz_user *u, struct mvz_cursor *c);
void mvz_user_free(struct mvz_user *u);
/* The span of the last phase named name: from its start to the next
 * phase's (to UINT64_MAX: the end of the run). 0, or -1 when there is no
 * such phase. */
int mvz_user_phase_window(const struct mvz_user *u, const char *name, uint64_t *from, uint64_t *to);
/* An instrument's value as text ("1234", "0.25", a string's text). */
void mvz_user_format(const struct mvz_user_instrument *in, char *buf, size_t cap);
/* Only the USER records of the trace at path, in one pass (for --phase,
 * before the replay). 0, or -1 with a reason. */
int mvz_user_read(const char *path, struct mvz_user *u, char *err, size_t errlen);
/* A stopwatch's sections and ns summed over its threads. */
void mvz_user_sw_total(const struct mvz_user_instrument *in, uint64_t *count, uint64_t *ns);
/* "counter", "value", "stopwatch", "tag". */
const char *mvz_user_kind_name(int kind);

#endif
