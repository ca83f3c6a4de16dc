/*
 * merge.c - see merge.h.
 *
 * Invariant: m->p.sites[k] sums the sites of every image added so far
 * whose frames (with the program frame) are stack k of m->fs.
 */
#include "analysis/merge.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/framestore.h"

#define MERGE_MAX_FRAMES 2048

int mvz_merge_init(struct mvz_merge *m)
{
    memset(m, 0, sizeof(*m));
    m->fs = mvz_framestore_new();
    m->frames = malloc((MERGE_MAX_FRAMES + 2) * sizeof(*m->frames));
    if (!m->fs || !m->frames) {
        mvz_merge_free(m);
        return -1;
    }
    return 0;
}

void mvz_merge_free(struct mvz_merge *m)
{
    mvz_framestore_free(m->fs);
    free(m->frames);
    mvz_profile_free(&m->p);
    memset(m, 0, sizeof(*m));
}

static int stack_at_cap(const struct mvz_trace *t, uint32_t stack)
{
    const struct mvz_stack *st = mvz_trace_stack(t, stack);
    return st && t->depth > 0 && st->depth >= (uint32_t)t->depth;
}

/* Adds one site of img, symbolized, under the program frame. */
static int add_site(struct mvz_merge *m, struct mvz_symbols *sym, const struct mvz_profile *img,
                    const struct mvz_site *s, const struct mvz_frame *program)
{
    size_t n = mvz_symbols_stack(sym, s->stack, m->frames, MERGE_MAX_FRAMES);
    if (stack_at_cap(&img->trace, s->stack))
        m->frames[n++] = (struct mvz_frame){.function = "[cut at the depth cap]"};
    m->frames[n++] = *program;
    uint32_t id = mvz_framestore_add(m->fs, m->frames, n);
    struct mvz_site *d = id ? mvz_profile_site(&m->p, id) : NULL;
    if (!d)
        return -1;
    return mvz_profile_add_site(&m->p, d, img, s);
}

static void add_summary(struct mvz_summary *d, const struct mvz_summary *s)
{
    d->allocations += s->allocations;
    d->frees += s->frees;
    d->allocated_bytes += s->allocated_bytes;
    d->peak_bytes += s->peak_bytes;
    d->leaked_bytes += s->leaked_bytes;
    d->leaked_blocks += s->leaked_blocks;
    d->temporary += s->temporary;
    d->unmatched_frees += s->unmatched_frees;
    d->reused_addresses += s->reused_addresses;
    d->mismatched_frees += s->mismatched_frees;
    for (int k = 0; k < MVZ_SIZE_BUCKETS; k++) {
        d->sizes[k].allocations += s->sizes[k].allocations;
        d->sizes[k].bytes += s->sizes[k].bytes;
    }
}

/* Damage counts add up, so the merged report's warnings cover every image. */
static void add_damage(struct mvz_trace *d, const struct mvz_trace *s)
{
    d->bad_chunks += s->bad_chunks;
    d->bad_records += s->bad_records;
    d->skipped_bytes += s->skipped_bytes;
    d->bad_events += s->bad_events;
    d->missing_seqs += s->missing_seqs;
    d->unordered_events += s->unordered_events;
    d->lost_events += s->lost_events;
    d->truncated |= s->truncated;
}

static int add_threads(struct mvz_merge *m, struct mvz_profile *img)
{
    struct mvz_profile *p = &m->p;
    struct mvz_profile_thread *v =
        realloc(p->threads, (p->nthreads + img->nthreads + 1) * sizeof(*v));
    if (!v)
        return -1;
    p->threads = v;
    memcpy(v + p->nthreads, img->threads, img->nthreads * sizeof(*v));
    p->nthreads += img->nthreads;
    struct mvz_trace *t = &p->trace;
    struct mvz_thread *w =
        realloc(t->threads, (t->nthreads + img->trace.nthreads + 1) * sizeof(*w));
    if (!w)
        return -1;
    t->threads = w;
    for (size_t i = 0; i < img->trace.nthreads; i++) {
        w[t->nthreads] = img->trace.threads[i];
        img->trace.threads[i].name = NULL; /* taken over */
        t->nthreads++;
    }
    return 0;
}

/* The first image's trace becomes the merged profile's, without its
 * stacks; the threads are gathered from every image. */
static void take_trace(struct mvz_merge *m, struct mvz_profile *img)
{
    m->p.trace = img->trace;
    memset(&img->trace, 0, sizeof(img->trace));
    mvz_trace_drop_stacks(&m->p.trace);
    for (size_t i = 0; i < m->p.trace.nthreads; i++)
        free(m->p.trace.threads[i].name);
    free(m->p.trace.threads);
    m->p.trace.threads = NULL;
    m->p.trace.nthreads = 0;
}

int mvz_merge_add(struct mvz_merge *m, struct mvz_profile *img, const char *program,
                  const char *exe)
{
    struct mvz_symbols *sym = mvz_symbols_new(&img->trace);
    if (!sym)
        return -1;
    struct mvz_frame prog = {.function = program, .module = exe};
    for (size_t i = 0; i < img->sites_cap && !m->failed; i++)
        if (img->sites[i].stack && (img->sites[i].allocations || img->sites[i].leaked_blocks ||
                                    img->sites[i].at_peak_blocks))
            m->failed = add_site(m, sym, img, &img->sites[i], &prog) < 0;
    mvz_symbols_free(sym);
    uint64_t start = img->trace.start_realtime_ns, end = start + img->sum.duration_ns;
    if (m->nimages == 0) {
        m->first_start_ns = start;
        take_trace(m, img);
    } else {
        add_damage(&m->p.trace, &img->trace);
    }
    if (end > m->end_ns)
        m->end_ns = end;
    add_summary(&m->p.sum, &img->sum);
    if (add_threads(m, img) < 0)
        m->failed = 1;
    m->nimages++;
    return m->failed ? -1 : 0;
}

struct mvz_symbols *mvz_merge_finish(struct mvz_merge *m, struct mvz_profile *out)
{
    struct mvz_symbols *sym = m->failed ? NULL : mvz_symbols_new_stored(m->fs);
    if (sym) {
        m->fs = NULL;
        m->p.sum.duration_ns = m->end_ns > m->first_start_ns ? m->end_ns - m->first_start_ns : 0;
        m->p.sum.peak_time_ns = 0;
        *out = m->p;
        memset(&m->p, 0, sizeof(m->p));
    }
    mvz_merge_free(m);
    return sym;
}
