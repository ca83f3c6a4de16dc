/*
 * profile_json.c - see profile_json.h.
 */
#include "analysis/profile_json.h"

void mvz_profile_json_summary(struct mvz_json *j, const struct mvz_profile *p)
{
    const struct mvz_summary *s = &p->sum;
    mvz_json_put_uint(j, "allocations", s->allocations);
    mvz_json_put_uint(j, "frees", s->frees);
    mvz_json_put_uint(j, "allocated_bytes", s->allocated_bytes);
    mvz_json_put_uint(j, "peak_bytes", s->peak_bytes);
    mvz_json_put_uint(j, "peak_time_ns", s->peak_time_ns);
    mvz_json_put_uint(j, "peak_rss_bytes", p->trace.peak_rss);
    mvz_json_put_uint(j, "peak_rss_agent_bytes", mvz_trace_agent_rss(&p->trace));
    mvz_json_put_uint(j, "leaked_bytes", s->leaked_bytes);
    mvz_json_put_uint(j, "leaked_blocks", s->leaked_blocks);
    mvz_json_put_uint(j, "temporary", s->temporary);
    mvz_json_put_uint(j, "duration_ns", s->duration_ns);
    mvz_json_put_uint(j, "threads", p->nthreads);
    mvz_json_put_uint(j, "unmatched_frees", s->unmatched_frees);
    mvz_json_put_uint(j, "mismatched_frees", s->mismatched_frees);
}

void mvz_profile_json_sizes(struct mvz_json *j, const char *key, const struct mvz_summary *s)
{
    mvz_json_key(j, key);
    mvz_json_begin_array(j);
    for (int k = 0; k < MVZ_SIZE_BUCKETS; k++) {
        const struct mvz_size_bucket *b = &s->sizes[k];
        if (!b->allocations)
            continue;
        mvz_json_begin_object(j);
        mvz_json_put_uint(j, "min", k ? 1ull << (k - 1) : 0);
        mvz_json_put_uint(j, "max", k ? (k == 64 ? UINT64_MAX : (1ull << k) - 1) : 0);
        mvz_json_put_uint(j, "allocations", b->allocations);
        mvz_json_put_uint(j, "bytes", b->bytes);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

void mvz_profile_json_threads(struct mvz_json *j, const char *key, const struct mvz_profile *p)
{
    mvz_json_key(j, key);
    mvz_json_begin_array(j);
    for (size_t i = 0; i < p->nthreads; i++) {
        const struct mvz_profile_thread *t = &p->threads[i];
        mvz_json_begin_object(j);
        mvz_json_put_uint(j, "tid", t->tid);
        mvz_json_put_string(j, "name", mvz_trace_thread_name(&p->trace, t->tid));
        mvz_json_put_uint(j, "allocations", t->allocations);
        mvz_json_put_uint(j, "allocated_bytes", t->allocated_bytes);
        mvz_json_put_uint(j, "frees", t->frees);
        mvz_json_put_uint(j, "temporary", t->temporary);
        mvz_json_put_uint(j, "at_peak_bytes", t->at_peak_bytes);
        mvz_json_put_uint(j, "leaked_bytes", t->leaked_bytes);
        mvz_json_put_uint(j, "leaked_blocks", t->leaked_blocks);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}
