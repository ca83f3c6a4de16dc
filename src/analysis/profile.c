/*
 * profile.c - per-site and total heap accounting over a replayed trace.
 *
 * The at-peak snapshot is taken lazily: every new global peak starts a new
 * "peak epoch"; a site about to change records its live bytes first if it
 * has not done so in the current epoch (its value has not changed since the
 * peak, so that is its value at the peak). Sites untouched since the last
 * peak keep their live bytes. This makes the snapshot O(1) per event.
 */
#include "analysis/profile.h"
#include "trace/sampling.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Whether e's addr is a block's name (HEAP records) rather than an
 * address (older traces). */
static int named(const struct mvz_event *e)
{
    return e->flags & MVZ_EV_NAMED;
}

/* ---- sites and threads ---- */

/* The site table is mapped memory grown with mremap: pages come zeroed and
 * are faulted in by the first write to a site, so growing it neither copies
 * nor clears the table (memset and copies were a quarter of a cc1plus
 * report's page faults). */
static int sites_grow(struct mvz_profile *p, uint32_t stack)
{
    size_t cap = p->sites_cap ? p->sites_cap : 1024;
    while (cap <= stack)
        cap *= 2;
    size_t old_bytes = p->sites_cap * sizeof(struct mvz_site),
           bytes = cap * sizeof(struct mvz_site);
    void *v = p->sites
                  ? mremap(p->sites, old_bytes, bytes, MREMAP_MAYMOVE)
                  : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (v == MAP_FAILED)
        return -1;
    p->sites = v;
    p->sites_cap = cap;
    return 0;
}

/* Inlined: it is on every allocation's and release's path. */
static inline __attribute__((always_inline)) struct mvz_site *site_for(struct mvz_profile *p,
                                                                       uint32_t stack)
{
    if (stack >= p->sites_cap && sites_grow(p, stack) < 0)
        return NULL;
    struct mvz_site *s = &p->sites[stack];
    s->stack = stack;
    return s;
}

/* Moves site s's counts by entry point to p->mixed, where each entry point
 * has its own; the allocation being counted is not in them yet. */
static int site_split_entries(struct mvz_profile *p, struct mvz_site *s)
{
    if (p->nmixed == p->mixed_cap) {
        size_t cap = p->mixed_cap ? p->mixed_cap * 2 : 16;
        struct mvz_site_entries *v = realloc(p->mixed, cap * sizeof(*v));
        if (!v)
            return -1;
        p->mixed = v;
        p->mixed_cap = cap;
    }
    struct mvz_site_entries *m = &p->mixed[p->nmixed++];
    memset(m, 0, sizeof(*m));
    if (s->entry1)
        m->n[s->entry1 - 1] = s->allocations - 1;
    s->mixed = (uint32_t)p->nmixed;
    return 0;
}

/* Counts an allocation through entry point e (allocations already counts
 * it): in `entry1` while every allocation of the site came through one
 * entry point, in p->mixed after. An entry point that is not an
 * allocation's (a damaged trace) is counted under none. */
static void site_count_entry(struct mvz_profile *p, struct mvz_site *s, unsigned e)
{
    int valid = e < MVZ_E_ALLOC_COUNT;
    if (!s->mixed && valid && (!s->entry1 || s->entry1 == e + 1)) {
        s->entry1 = (uint8_t)(e + 1);
        return;
    }
    if (!s->mixed && site_split_entries(p, s) < 0)
        return; /* out of memory: the split by entry point is lost */
    if (valid)
        p->mixed[s->mixed - 1].n[e]++;
}

struct mvz_site *mvz_profile_site(struct mvz_profile *p, uint32_t stack)
{
    return site_for(p, stack);
}

int mvz_profile_add_site(struct mvz_profile *p, struct mvz_site *s, const struct mvz_profile *sp,
                         const struct mvz_site *src)
{
    int e1 = src->mixed ? 0 : src->entry1;
    if (!s->mixed && (!src->allocations || (e1 && (!s->entry1 || s->entry1 == e1)))) {
        if (src->allocations)
            s->entry1 = (uint8_t)e1;
    } else {
        if (!s->mixed) {
            s->allocations++; /* site_split_entries leaves out one allocation */
            int rc = site_split_entries(p, s);
            s->allocations--;
            if (rc < 0)
                return -1;
        }
        for (int e = 0; e < MVZ_E_ALLOC_COUNT; e++)
            p->mixed[s->mixed - 1].n[e] += mvz_site_entry_allocations(sp, src, e);
    }
    uint64_t peak = s->peak_bytes > src->peak_bytes ? s->peak_bytes : src->peak_bytes;
    mvz_site_add(s, src);
    s->peak_bytes = peak;
    return 0;
}

uint64_t mvz_site_entry_allocations(const struct mvz_profile *p, const struct mvz_site *s, int e)
{
    if (e < 0 || e >= MVZ_E_ALLOC_COUNT)
        return 0;
    if (s->mixed)
        return p->mixed[s->mixed - 1].n[e];
    return s->entry1 == e + 1 ? s->allocations : 0;
}

static struct mvz_profile_thread *thread_for(struct mvz_profile *p, uint32_t tid)
{
    size_t *last = &p->last_thread;
    if (*last < p->nthreads && p->threads[*last].tid == tid)
        return &p->threads[*last];
    for (size_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].tid == tid)
            return &p->threads[*last = i];
    struct mvz_profile_thread *v = realloc(p->threads, (p->nthreads + 1) * sizeof(*v));
    if (!v)
        return NULL;
    p->threads = v;
    memset(&v[p->nthreads], 0, sizeof(*v));
    v[p->nthreads].tid = tid;
    *last = p->nthreads;
    return &v[p->nthreads++];
}

/* Records the site's value at the latest peak before it changes. */
static void site_touch(struct mvz_profile *p, struct mvz_site *s)
{
    if (s->snap_epoch != p->peak_epoch) {
        s->at_peak_bytes = s->live_bytes;
        s->at_peak_blocks = s->live_blocks;
        s->snap_epoch = p->peak_epoch;
    }
}

static void thread_touch(struct mvz_profile *p, struct mvz_profile_thread *t)
{
    if (t->snap_epoch != p->peak_epoch) {
        t->at_peak_bytes = t->live_bytes;
        t->snap_epoch = p->peak_epoch;
    }
}

/* A new peak starts a new epoch: values touched from now on were recorded
 * at it. Only the window's heap counts. */
static void peak_check(struct mvz_profile *p, uint64_t ts, uint64_t seq, int transient)
{
    if (p->in_window && !transient && p->sum.live_bytes > p->sum.peak_bytes) {
        p->sum.peak_bytes = p->sum.live_bytes;
        p->sum.peak_time_ns = ts;
        p->sum.peak_seq = seq;
        p->peak_epoch++;
    }
}

/* The heap as it stood when the window opened is the window's first
 * candidate for its peak, and each site's for its own. */
static void open_window(struct mvz_profile *p)
{
    p->in_window = 1;
    for (size_t i = 0; i < p->sites_cap; i++)
        if (p->sites[i].live_bytes > p->sites[i].peak_bytes)
            p->sites[i].peak_bytes = p->sites[i].live_bytes;
    peak_check(p, p->opt.from_ns, 0, 0);
}

static int is_array_new(int e)
{
    return e == MVZ_E_NEW_ARRAY || e == MVZ_E_NEW_ARRAY_NOTHROW || e == MVZ_E_NEW_ARRAY_ALIGNED ||
           e == MVZ_E_NEW_ARRAY_ALIGNED_NOTHROW;
}
static int is_scalar_new(int e)
{
    return e == MVZ_E_NEW || e == MVZ_E_NEW_NOTHROW || e == MVZ_E_NEW_ALIGNED ||
           e == MVZ_E_NEW_ALIGNED_NOTHROW;
}
static int is_array_delete(int e)
{
    return e == MVZ_E_DELETE_ARRAY || e == MVZ_E_DELETE_ARRAY_SIZED ||
           e == MVZ_E_DELETE_ARRAY_ALIGNED || e == MVZ_E_DELETE_ARRAY_SIZED_ALIGNED ||
           e == MVZ_E_DELETE_ARRAY_NOTHROW || e == MVZ_E_DELETE_ARRAY_ALIGNED_NOTHROW;
}
static int is_delete(int e)
{
    return e >= MVZ_E_DELETE && e < MVZ_E_COUNT;
}

/* new/new[]/delete/delete[]/malloc-family must pair up; realloc's release
 * part matches any malloc-family block. */
static int mismatched(int alloc_entry, int free_entry)
{
    if (is_array_new(alloc_entry))
        return !is_array_delete(free_entry);
    if (is_scalar_new(alloc_entry))
        return !is_delete(free_entry) || is_array_delete(free_entry);
    return is_delete(free_entry);
}

/* Block b, live under key until now, is released. t is the releasing
 * thread, or NULL when the release was never seen (the address was
 * reused). */
/* A block's weight follows the rate it was allocated under, not the one
 * in force when it goes (a live client may have switched the mode). */
static uint64_t block_rate(const struct mvz_profile *p, const struct mvz_block *b)
{
    return mvz_sampling_rate(&p->trace.sampling, b->rate);
}

static void release_block(struct mvz_profile *p, uint64_t key, const struct mvz_block *b,
                          struct mvz_profile_thread *t, int free_entry)
{
    struct mvz_site *s = site_for(p, b->stack);
    if (!s)
        return;
    struct mvz_profile_thread *owner = &p->threads[b->thread];
    uint64_t rate = block_rate(p, b), n = mvz_sample_count(b->size, rate);
    uint64_t bytes = mvz_sample_size(b->size, rate);
    p->sum.var_live -= mvz_sample_variance(b->size, rate);
    site_touch(p, s);
    thread_touch(p, owner);
    s->live_bytes -= bytes;
    s->live_blocks -= n;
    owner->live_bytes -= bytes;
    p->sum.live_bytes -= bytes;
    if (t && p->in_window) {
        p->sum.frees += n;
        t->frees += n;
        /* b is the thread's latest allocation: no other came in between */
        if (owner == t && t->last_alloc_addr == key && !b->before_window) {
            s->temporary += n;
            t->temporary += n;
            p->sum.temporary += n;
        }
        if (mismatched(b->entry, free_entry))
            p->sum.mismatched_frees++;
    }
}

static void on_free(struct mvz_profile *p, const struct mvz_event *e)
{
    struct mvz_block b;
    struct mvz_profile_thread *t = thread_for(p, e->tid);
    /* A release lowers the heap, but the state after it can still be a
     * GROUP's highest (its mark), which the written order reaches here. */
    if (!mvz_blocks_take(&p->blocks, e->addr, named(e), &b)) {
        if (p->in_window)
            p->sum.unmatched_frees++;
        if (e->flags & MVZ_EV_MARK)
            peak_check(p, e->ts, e->seq, 0);
        if (p->opt.observe)
            p->opt.observe(p->opt.ctx, p, e, 0, 0);
        return;
    }
    release_block(p, e->addr, &b, t, e->entry);
    if (e->flags & MVZ_EV_MARK)
        peak_check(p, e->ts, e->seq, 0);
    if (p->opt.observe)
        p->opt.observe(p->opt.ctx, p, e, b.stack, mvz_sample_size(b.size, block_rate(p, &b)));
}

static void on_alloc(struct mvz_profile *p, const struct mvz_event *e)
{
    struct mvz_block b;
    if (mvz_blocks_take(&p->blocks, e->addr, named(e), &b)) {
        /* the trace missed its release; treat it as released now */
        struct mvz_event gone = *e;
        p->sum.reused_addresses++;
        release_block(p, e->addr, &b, NULL, 0);
        gone.op = MVZ_OP_FREE;
        if (p->opt.observe)
            p->opt.observe(p->opt.ctx, p, &gone, b.stack,
                           mvz_sample_size(b.size, block_rate(p, &b)));
    }
    struct mvz_site *s = site_for(p, e->stack);
    struct mvz_profile_thread *t = thread_for(p, e->tid);
    if (!s || !t)
        return; /* out of memory: the block is not counted */
    b = (struct mvz_block){.size = e->size,
                           .stack = e->stack,
                           .thread = (uint32_t)(t - p->threads),
                           .entry = e->entry,
                           .before_window = !p->in_window,
                           .rate = p->trace.sampling.now_ix};
    if (mvz_blocks_put(&p->blocks, e->addr, named(e), &b) < 0)
        return;
    /* a sampled trace's allocation stands for n of them, of bytes in all */
    uint64_t rate = p->trace.sampling.now, n = mvz_sample_count(e->size, rate);
    uint64_t bytes = mvz_sample_size(e->size, rate);
    double var = mvz_sample_variance(e->size, rate);
    p->sum.var_live += var;
    if (p->in_window)
        p->sum.var_allocated += var;
    site_touch(p, s);
    thread_touch(p, t);
    s->live_bytes += bytes;
    s->live_blocks += n;
    t->live_bytes += bytes;
    t->last_alloc_addr = e->addr;
    p->sum.live_bytes += bytes;
    if (!p->in_window) {
        if (p->opt.observe)
            p->opt.observe(p->opt.ctx, p, e, e->stack, bytes);
        return;
    }
    s->allocations += n;
    s->allocated_bytes += bytes;
    site_count_entry(p, s, e->entry);
    if (s->live_bytes > s->peak_bytes && p->heap_events > s->hidden_until)
        s->peak_bytes = s->live_bytes;
    t->allocations += n;
    t->allocated_bytes += bytes;
    p->sum.allocations += n;
    p->sum.allocated_bytes += bytes;
    struct mvz_size_bucket *sb = &p->sum.sizes[mvz_size_bucket(e->size)];
    sb->allocations += n;
    sb->bytes += bytes;
    peak_check(p, e->ts, e->seq, e->flags & MVZ_EV_TRANSIENT);
    if (p->opt.observe)
        p->opt.observe(p->opt.ctx, p, e, e->stack, bytes);
}

/* The site's highest during the GROUP that follows, which the group's
 * written order does not show: its own states are hidden until the group's
 * events are past. */
static void on_site_rise(struct mvz_profile *p, const struct mvz_event *e)
{
    struct mvz_site *s = site_for(p, e->stack);
    if (!s)
        return;
    if (p->in_window && s->live_bytes + e->size > s->peak_bytes)
        s->peak_bytes = s->live_bytes + e->size;
    s->hidden_until = p->heap_events + e->addr;
}

/* Called for events a few places ahead of the one being processed, so that
 * the block table line they need is in cache by the time they come. */
static void prefetch_event(void *ctx, const struct mvz_event *e)
{
    struct mvz_profile *p = ctx;
    mvz_blocks_prefetch(&p->blocks, e->addr, named(e));
}

/* A USER TAG record: block `name` marked. */
static void on_tag(void *ctx, uint32_t tag, uint64_t name, uint64_t size, uint64_t ts)
{
    struct mvz_profile *p = ctx;
    struct mvz_block b;
    int live = mvz_blocks_find(&p->blocks, name, 1, &b);
    mvz_tags_mark(&p->tags, tag, name, size, live, ts);
}

static void on_event(void *ctx, const struct mvz_event *e)
{
    struct mvz_profile *p = ctx;
    if (e->ts > p->opt.to_ns)
        return;
    if (!p->in_window && e->ts >= p->opt.from_ns)
        open_window(p);
    if (e->op == MVZ_OP_ALLOC || e->op == MVZ_OP_FREE)
        p->heap_events++;
    if (e->op == MVZ_OP_ALLOC)
        on_alloc(p, e);
    else if (e->op == MVZ_OP_FREE)
        on_free(p, e);
    if (p->tags.used && named(e) && e->op == MVZ_OP_ALLOC)
        mvz_tags_alloc(&p->tags, e->addr, e->ts);
    else if (p->tags.used && named(e) && e->op == MVZ_OP_FREE)
        mvz_tags_free(&p->tags, e->addr);
    else if (e->op == MVZ_OP_SITE_RISE)
        on_site_rise(p, e);
}

static void on_rss(void *ctx, uint64_t ts, uint64_t rss)
{
    struct mvz_profile *p = ctx;
    if (p->opt.observe_rss && ts <= p->opt.to_ns)
        p->opt.observe_rss(p->opt.ctx, ts, rss);
}

/* A block live at the end of the run. */
static void count_leak(void *ctx, uint64_t key, const struct mvz_block *b)
{
    (void)key;
    struct mvz_profile *p = ctx;
    if (b->before_window)
        return;
    struct mvz_site *s = &p->sites[b->stack];
    struct mvz_profile_thread *th = &p->threads[b->thread];
    uint64_t rate = block_rate(p, b), n = mvz_sample_count(b->size, rate);
    uint64_t bytes = mvz_sample_size(b->size, rate);
    s->leaked_bytes += bytes;
    s->leaked_blocks += n;
    th->leaked_bytes += bytes;
    th->leaked_blocks += n;
    p->sum.leaked_bytes += bytes;
    p->sum.leaked_blocks += n;
}

static void finish(struct mvz_profile *p)
{
    struct mvz_trace *t = &p->trace;
    uint64_t end = t->end_ts > t->last_ts ? t->end_ts : t->last_ts;
    if (t->exit_ts > end)
        end = t->exit_ts;
    p->sum.duration_ns = end;
    if (!p->in_window && p->opt.from_ns <= end)
        open_window(p);
    for (size_t i = 0; i < p->sites_cap; i++) {
        struct mvz_site *s = &p->sites[i];
        if (s->stack == 0 && s->allocations == 0)
            continue;
        if (s->snap_epoch != p->peak_epoch) {
            s->at_peak_bytes = s->live_bytes;
            s->at_peak_blocks = s->live_blocks;
        }
    }
    mvz_blocks_each(&p->blocks, count_leak, p);
    for (size_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].snap_epoch != p->peak_epoch)
            p->threads[i].at_peak_bytes = p->threads[i].live_bytes;
}

static int follow_more(void *ctx)
{
    struct mvz_profile *p = ctx;
    return p->opt.wait_more(p->opt.ctx, p);
}

int mvz_profile_load_window(struct mvz_profile *p, const char *path,
                            const struct mvz_profile_options *opt, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    p->opt.to_ns = UINT64_MAX;
    if (opt)
        p->opt = *opt;
    struct mvz_replay_ops ops = {.event = on_event,
                                 .prefetch = prefetch_event,
                                 .rss = on_rss,
                                 .warm_symbols = p->opt.symbolize,
                                 .wait_more = p->opt.wait_more ? follow_more : NULL,
                                 .tag = on_tag};
    if (mvz_replay(path, &p->trace, &ops, p, err, errlen) < 0) {
        mvz_profile_free(p);
        return -1;
    }
    finish(p);
    if (p->opt.from_ns > p->sum.duration_ns) {
        snprintf(err, errlen, "the window starts at %.3f s, after the end of the run (%.3f s)",
                 (double)p->opt.from_ns / 1e9, (double)p->sum.duration_ns / 1e9);
        mvz_profile_free(p);
        return -1;
    }
    return 0;
}

int mvz_profile_load(struct mvz_profile *p, const char *path, char *err, size_t errlen)
{
    return mvz_profile_load_window(p, path, NULL, err, errlen);
}

uint64_t mvz_site_cost(const struct mvz_site *s, enum mvz_cost c)
{
    switch (c) {
    case MVZ_COST_PEAK:
        return s->at_peak_bytes;
    case MVZ_COST_LEAKED:
        return s->leaked_bytes;
    case MVZ_COST_ALLOCATIONS:
        return s->allocations;
    case MVZ_COST_BYTES:
        return s->allocated_bytes;
    case MVZ_COST_TEMPORARY:
        return s->temporary;
    default:
        return 0;
    }
}

void mvz_site_add(struct mvz_site *sum, const struct mvz_site *s)
{
    sum->allocations += s->allocations;
    sum->allocated_bytes += s->allocated_bytes;
    sum->live_bytes += s->live_bytes;
    sum->live_blocks += s->live_blocks;
    sum->at_peak_bytes += s->at_peak_bytes;
    sum->at_peak_blocks += s->at_peak_blocks;
    sum->leaked_bytes += s->leaked_bytes;
    sum->leaked_blocks += s->leaked_blocks;
    sum->temporary += s->temporary;
}

static const char *const cost_names[MVZ_COST_COUNT] = {"peak", "leaked", "allocations", "bytes",
                                                       "temporary"};

int mvz_cost_is_bytes(enum mvz_cost c)
{
    return c == MVZ_COST_PEAK || c == MVZ_COST_LEAKED || c == MVZ_COST_BYTES;
}

int mvz_cost_parse(const char *name)
{
    for (int c = 0; c < MVZ_COST_COUNT; c++)
        if (!strcmp(name, cost_names[c]))
            return c;
    return -1;
}

const char *mvz_cost_name(enum mvz_cost c)
{
    return (unsigned)c < MVZ_COST_COUNT ? cost_names[c] : "?";
}

unsigned mvz_size_bucket(uint64_t size)
{
    return size ? 64u - (unsigned)__builtin_clzll(size) : 0;
}

void mvz_profile_free(struct mvz_profile *p)
{
    mvz_trace_free(&p->trace);
    if (p->sites)
        munmap(p->sites, p->sites_cap * sizeof(*p->sites));
    free(p->mixed);
    free(p->threads);
    mvz_blocks_free(&p->blocks);
    mvz_tags_clear(&p->tags);
    memset(p, 0, sizeof(*p));
}
