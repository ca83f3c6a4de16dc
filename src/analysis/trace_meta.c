/*
 * trace_meta.c - a trace's metadata records (process, modules, stacks,
 * threads, children, notices, exit; docs/FORMAT.md) into struct
 * mvz_trace, for the replay (replay.c), and what struct mvz_trace answers
 * (replay.h).
 */
#include "analysis/trace_meta.h"
#include "trace/callgraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/callgraph.h"
#include "analysis/symbols.h"
#include "trace/format.h"

static char **read_strings(struct mvz_cursor *c, size_t *count)
{
    uint64_t n = mvz_get_uvarint(c);
    if (c->bad || n > mvz_cursor_left(c))
        return NULL;
    char **v = calloc((size_t)n + 1, sizeof(*v));
    if (!v)
        return NULL;
    for (uint64_t i = 0; i < n; i++) {
        v[i] = mvz_get_str(c);
        if (!v[i]) {
            *count = (size_t)i;
            return v;
        }
    }
    *count = (size_t)n;
    return v;
}

void mvz_meta_process(struct mvz_trace *t, struct mvz_cursor *c)
{
    if (t->have_process)
        return;
    /* an earlier, damaged process record may have left its strings */
    free(t->parent_trace);
    free(t->exe);
    free(t->cwd);
    for (size_t i = 0; t->argv && i < t->argc; i++)
        free(t->argv[i]);
    free(t->argv);
    t->argv = NULL;
    t->argc = 0;
    t->pid = (int)mvz_get_uvarint(c);
    t->ppid = (int)mvz_get_uvarint(c);
    t->start_realtime_ns = mvz_get_uvarint(c);
    mvz_get_uvarint(c); /* monotonic start: events are already relative to it */
    t->page_size = mvz_get_uvarint(c);
    t->depth = (int)mvz_get_uvarint(c);
    t->child_how = (int)mvz_get_uvarint(c);
    t->parent_trace = mvz_get_str(c);
    t->exe = mvz_get_str(c);
    t->cwd = mvz_get_str(c);
    t->argv = read_strings(c, &t->argc);
    /* 5.1: the number of arguments in all; the agent keeps only the first */
    t->argc_total = c->p < c->end ? mvz_get_uvarint(c) : t->argc;
    if (t->argc_total < t->argc)
        t->argc_total = t->argc;
    t->have_process = !c->bad;
}

void mvz_meta_module_load(struct mvz_trace *t, struct mvz_cursor *c)
{
    struct mvz_module m = {0};
    m.id = (uint32_t)mvz_get_uvarint(c);
    m.gen_loaded = (uint32_t)mvz_get_uvarint(c);
    m.bias = mvz_get_uvarint(c);
    m.lo = mvz_get_uvarint(c);
    m.hi = mvz_get_uvarint(c);
    m.path = mvz_get_str(c);
    uint64_t bl = mvz_get_uvarint(c);
    const uint8_t *bid = bl <= sizeof(m.build_id) ? mvz_get_bytes(c, (size_t)bl) : NULL;
    if (c->bad || !m.path) {
        free(m.path);
        return;
    }
    if (bid) {
        memcpy(m.build_id, bid, (size_t)bl);
        m.build_id_len = (size_t)bl;
    }
    if (t->nmodules == t->modules_cap) { /* doubling: a dlopen loop loads thousands */
        size_t cap = t->modules_cap ? 2 * t->modules_cap : 16;
        struct mvz_module *v = realloc(t->modules, cap * sizeof(*v));
        if (!v) {
            free(m.path);
            return;
        }
        t->modules = v;
        t->modules_cap = cap;
    }
    t->modules[t->nmodules++] = m;
}

void mvz_meta_module_unload(struct mvz_trace *t, struct mvz_cursor *c)
{
    uint32_t id = (uint32_t)mvz_get_uvarint(c);
    uint32_t gen = (uint32_t)mvz_get_uvarint(c);
    for (size_t i = 0; i < t->nmodules && !c->bad; i++)
        if (t->modules[i].id == id && !t->modules[i].gen_unloaded)
            t->modules[i].gen_unloaded = gen;
}

/* Room for stack `id` in t->stacks; -1: out of memory. */
static int stacks_reserve(struct mvz_trace *t, uint32_t id)
{
    if (id >= t->stacks_cap) {
        size_t cap = t->stacks_cap ? t->stacks_cap : 1024;
        while (cap <= id)
            cap *= 2;
        struct mvz_stack *v = realloc(t->stacks, cap * sizeof(*v));
        if (!v)
            return -1;
        memset(v + t->stacks_cap, 0, (cap - t->stacks_cap) * sizeof(*v));
        t->stacks = v;
        t->stacks_cap = cap;
    }
    return 0;
}

/* Stacks' frames are allocated from chunks, never moved nor freed one by
 * one: a large program has a hundred thousand stacks, and freeing them
 * one by one was 5 ms of cc1plus's report. */
#define FRAMES_CHUNK (128u << 10)

struct mvz_frames_chunk {
    struct mvz_frames_chunk *next;
    size_t used, cap;
    uint64_t v[];
};

static uint64_t *frames_alloc(struct mvz_trace *t, size_t n)
{
    struct mvz_frames_chunk *c = t->frames_chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > FRAMES_CHUNK ? n : FRAMES_CHUNK;
        if (!(c = malloc(sizeof(*c) + cap * sizeof(c->v[0]))))
            return NULL;
        c->next = t->frames_chunks;
        c->used = 0;
        c->cap = cap;
        t->frames_chunks = c;
    }
    c->used += n;
    return c->v + c->used - n;
}

/* Gives back the latest allocation of n frames. */
static void frames_unalloc(struct mvz_trace *t, size_t n)
{
    t->frames_chunks->used -= n;
}

/* A stack's frames with its context mark, which a later stack may share. */
static uint32_t full_depth(const struct mvz_stack *s)
{
    return s->depth + (s->context != 0);
}

/* Since format 4 a stack may take its `shared` outermost frames from an
 * earlier stack, named by how far its id is below this one's; *outer is set to them (the end of
 * base's frames, which stay where they are when t->stacks grows). A base that is not defined (its
 * chunk was damaged) or too shallow makes the record damaged: the stack stays undefined rather than
 * get frames it may not have. */
static int stack_base(const struct mvz_trace *t, struct mvz_cursor *c, uint32_t id, uint64_t n,
                      const uint64_t **outer, uint64_t *shared)
{
    uint64_t back = mvz_get_uvarint(c);
    *shared = mvz_get_uvarint(c);
    if (c->bad || (!back && *shared) || *shared > n || n > MVZ_STACK_MAX_FRAMES ||
        back > id - MVZ_STACK_FIRST)
        return -1;
    if (!back)
        return 0;
    const struct mvz_stack *base = mvz_trace_stack(t, id - (uint32_t)back);
    if (!base || *shared > full_depth(base))
        return -1;
    *outer = base->frames + (full_depth(base) - *shared);
    return 0;
}

void mvz_meta_stack(struct mvz_trace *t, struct mvz_cursor *c, int major)
{
    uint32_t id = (uint32_t)mvz_get_uvarint(c);
    uint32_t gen = (uint32_t)mvz_get_uvarint(c);
    uint64_t n = mvz_get_uvarint(c), shared = 0;
    const uint64_t *outer = NULL;
    if (c->bad || id < MVZ_STACK_FIRST || id > mvz_trace_max_stack_id(t) ||
        (major >= 4 && stack_base(t, c, id, n, &outer, &shared) < 0) ||
        n - shared > mvz_cursor_left(c)) {
        t->bad_records++;
        return;
    }
    if (stacks_reserve(t, id) < 0)
        return;
    struct mvz_stack *s = &t->stacks[id];
    if (s->frames)
        return; /* defined twice: keep the first */
    size_t len = (size_t)(n ? n : 1);
    uint64_t *frames = frames_alloc(t, len);
    if (!frames)
        return;
    uint64_t ip = 0;
    for (uint64_t i = 0; i < n - shared; i++) {
        ip += (uint64_t)mvz_get_svarint(c);
        frames[i] = ip;
    }
    if (c->bad) {
        frames_unalloc(t, len);
        return;
    }
    if (shared)
        memcpy(frames + (n - shared), outer, (size_t)shared * sizeof(*frames));
    s->id = id;
    s->gen = gen;
    s->depth = (uint32_t)n;
    s->frames = frames;
    if (n && (frames[n - 1] & MVZ_CG_MARK_BIT)) {
        s->context = frames[n - 1];
        s->depth--;
    }
    t->nstacks++;
}

void mvz_meta_thread(struct mvz_trace *t, struct mvz_cursor *c)
{
    int tid = (int)mvz_get_uvarint(c);
    mvz_get_uvarint(c);
    char *name = mvz_get_str(c);
    struct mvz_thread *v = c->bad ? NULL : realloc(t->threads, (t->nthreads + 1) * sizeof(*v));
    if (!v) {
        free(name);
        return;
    }
    t->threads = v;
    t->threads[t->nthreads].tid = tid;
    t->threads[t->nthreads++].name = name;
}

void mvz_meta_child(struct mvz_trace *t, struct mvz_cursor *c)
{
    int pid = (int)mvz_get_uvarint(c);
    int how = (int)mvz_get_uvarint(c);
    char *path = mvz_get_str(c);
    struct mvz_child *v = c->bad ? NULL : realloc(t->children, (t->nchildren + 1) * sizeof(*v));
    if (!v) {
        free(path);
        return;
    }
    t->children = v;
    t->children[t->nchildren++] = (struct mvz_child){pid, how, path};
}

void mvz_meta_notice(struct mvz_trace *t, struct mvz_cursor *c)
{
    int code = (int)mvz_get_uvarint(c);
    char *text = mvz_get_str(c);
    struct mvz_notice *v = c->bad ? NULL : realloc(t->notices, (t->nnotices + 1) * sizeof(*v));
    if (!v) {
        free(text);
        return;
    }
    t->notices = v;
    t->notices[t->nnotices++] = (struct mvz_notice){code, text};
}

void mvz_meta_exit(struct mvz_trace *t, struct mvz_cursor *c)
{
    int how = (int)mvz_get_uvarint(c);
    int source = (int)mvz_get_uvarint(c);
    int status = (int)mvz_get_svarint(c);
    int sig = (int)mvz_get_uvarint(c);
    uint64_t ts = mvz_get_uvarint(c);
    uint64_t maxrss = mvz_get_uvarint(c);
    if (c->bad)
        return;
    if (maxrss > t->peak_rss)
        t->peak_rss = maxrss;
    if (source == MVZ_EXIT_FROM_AGENT) {
        t->have_agent_exit = 1;
        t->agent_exit_how = how;
        if (ts)
            t->exit_ts = ts;
        if (t->exit_from_cli)
            return;
    }
    t->have_exit = 1;
    t->exit_from_cli = source == MVZ_EXIT_FROM_CLI;
    t->exit_how = how;
    t->exit_status = status;
    t->exit_signal = sig;
}

const struct mvz_stack *mvz_trace_stack(const struct mvz_trace *t, uint32_t id)
{
    if (id >= t->stacks_cap || !t->stacks[id].frames)
        return NULL;
    return &t->stacks[id];
}

uint64_t mvz_trace_agent_rss(const struct mvz_trace *t)
{
    uint64_t v = t->peak_rss > t->peak_rss_sampled && t->agent_mapped_max ? t->agent_mapped_max
                                                                          : t->agent_at_peak_rss;
    return v < t->peak_rss ? v : t->peak_rss;
}

void mvz_trace_drop_stacks(struct mvz_trace *t)
{
    mvz_symbols_warm_free(t->warm); /* joins its thread, which reads the trace */
    t->warm = NULL;
    for (struct mvz_frames_chunk *c = t->frames_chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(t->stacks);
    t->frames_chunks = NULL;
    t->stacks = NULL;
    t->stacks_cap = t->nstacks = 0;
}

void mvz_trace_free(struct mvz_trace *t)
{
    mvz_sampling_free(&t->sampling);
    free(t->parent_trace);
    free(t->exe);
    free(t->cwd);
    free(t->exec_path);
    for (size_t i = 0; t->argv && i < t->argc; i++)
        free(t->argv[i]);
    free(t->argv);
    for (size_t i = 0; i < t->nmodules; i++)
        free(t->modules[i].path);
    free(t->modules);
    mvz_trace_drop_stacks(t);
    for (size_t i = 0; i < t->nthreads; i++)
        free(t->threads[i].name);
    free(t->threads);
    for (size_t i = 0; i < t->nchildren; i++)
        free(t->children[i].trace);
    free(t->children);
    for (size_t i = 0; i < t->nnotices; i++)
        free(t->notices[i].text);
    free(t->notices);
    mvz_user_free(&t->user);
    mvz_cg_raw_free(t->callgraph);
    memset(t, 0, sizeof(*t));
}

const char *mvz_exit_how_name(int how)
{
    switch (how) {
    case MVZ_EXIT_RETURN:
        return "return";
    case MVZ_EXIT_EXIT:
        return "exit";
    case MVZ_EXIT__EXIT:
        return "_exit";
    case MVZ_EXIT_QUICK:
        return "quick_exit";
    case MVZ_EXIT_SIGNAL:
        return "signal";
    default:
        return "unknown";
    }
}

const char *mvz_trace_thread_name(const struct mvz_trace *t, uint32_t tid)
{
    for (size_t i = 0; i < t->nthreads; i++)
        if ((uint32_t)t->threads[i].tid == tid && t->threads[i].name)
            return t->threads[i].name;
    return NULL;
}
