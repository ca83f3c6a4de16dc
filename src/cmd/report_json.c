/*
 * report_json.c - `memviz report --json`: one JSON object with the same
 * numbers as the text, every site, and the optional views (groups, tree,
 * sizes, threads, suppressions). The schema is described in docs/METRICS.md.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/report.h"
#include "cmd/snapshots.h"
#include "analysis/profile_json.h"
#include "util/json.h"
#include "util/sort.h"

static void json_process(struct report *r, struct mvz_json *j)
{
    const struct mvz_trace *t = &r->p.trace;
    mvz_json_key(j, "process");
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "pid", (uint64_t)t->pid);
    mvz_json_put_uint(j, "ppid", (uint64_t)t->ppid);
    mvz_json_key(j, "argv");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < t->argc; i++)
        mvz_json_string(j, t->argv[i]);
    mvz_json_end_array(j);
    mvz_json_put_uint(j, "argv_not_kept", t->argc_total > t->argc ? t->argc_total - t->argc : 0);
    mvz_json_put_string(j, "exe", t->exe);
    if (t->have_exit && t->exit_signal) {
        mvz_json_put_uint(j, "exit_signal", (uint64_t)t->exit_signal);
    } else if (t->have_exit) {
        mvz_json_key(j, "exit_status");
        mvz_json_int(j, t->exit_status);
    }
    int how = t->have_exit && t->exit_signal ? MVZ_EXIT_SIGNAL
              : t->have_agent_exit           ? t->agent_exit_how
                                             : MVZ_EXIT_UNKNOWN;
    mvz_json_put_string(j, "exit_how",
                        t->have_exec && !t->have_exit ? "exec" : mvz_exit_how_name(how));
    mvz_json_put_uint(j, "depth_cap", t->depth > 0 ? (uint64_t)t->depth : 0);
    mvz_json_key(j, "complete");
    mvz_json_bool(j,
                  (t->have_end || t->have_exec || t->have_exit) && !t->bad_chunks && !t->truncated);
    mvz_json_end_object(j);
}

static void json_summary(struct report *r, struct mvz_json *j)
{
    mvz_json_key(j, "summary");
    mvz_json_begin_object(j);
    mvz_profile_json_summary(j, &r->p);
    mvz_json_put_uint(j, "suppressed_leaked_bytes", r->suppressed.leaked_bytes);
    mvz_json_put_uint(j, "suppressed_leaked_blocks", r->suppressed.leaked_blocks);
    mvz_json_end_object(j);
}

static void json_window(struct report *r, struct mvz_json *j)
{
    mvz_json_key(j, "window");
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "from_ns", r->o.at == AT_TIME ? 0 : r->o.from_ns);
    uint64_t to = r->o.at == AT_TIME ? r->o.at_ns : r->o.to_ns;
    mvz_json_key(j, "to_ns");
    if (to == UINT64_MAX)
        mvz_json_null(j);
    else
        mvz_json_uint(j, to);
    mvz_json_put_string(j, "at", r->o.at == AT_PEAK ? "peak" : r->o.at == AT_TIME ? "time" : NULL);
    mvz_json_end_object(j);
}

static void json_frames(struct report *r, struct mvz_json *j, uint32_t stack)
{
    size_t n = mvz_symbols_stack(r->sym, stack, r->frames, REPORT_MAX_FRAMES);
    char addr[32];
    mvz_json_key(j, "frames");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        const struct mvz_frame *f = &r->frames[i];
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "function", f->function);
        mvz_json_put_string(j, "file", f->file);
        mvz_json_put_uint(j, "line", f->line);
        mvz_json_put_string(j, "module", f->module);
        mvz_json_key(j, "inlined");
        mvz_json_bool(j, f->inlined);
        snprintf(addr, sizeof(addr), "0x%" PRIx64, f->address);
        mvz_json_put_string(j, "address", addr);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void json_counts(struct mvz_json *j, const struct mvz_site *s)
{
    mvz_json_put_uint(j, "allocations", s->allocations);
    mvz_json_put_uint(j, "allocated_bytes", s->allocated_bytes);
    mvz_json_put_uint(j, "at_peak_bytes", s->at_peak_bytes);
    mvz_json_put_uint(j, "at_peak_blocks", s->at_peak_blocks);
    mvz_json_put_uint(j, "leaked_bytes", s->leaked_bytes);
    mvz_json_put_uint(j, "leaked_blocks", s->leaked_blocks);
    mvz_json_put_uint(j, "temporary", s->temporary);
}

static void json_site(struct report *r, struct mvz_json *j, const struct report_site *rs)
{
    const struct mvz_site *s = rs->s;
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "stack_id", s->stack);
    json_counts(j, s);
    mvz_json_put_uint(j, "peak_bytes", s->peak_bytes);
    if (rs->supp)
        mvz_json_put_string(j, "suppressed_by", rs->supp->pattern);
    mvz_json_key(j, "entries");
    mvz_json_begin_object(j);
    for (int e = 0; e < MVZ_E_ALLOC_COUNT; e++) {
        uint64_t n = mvz_site_entry_allocations(&r->p, s, e);
        if (n)
            mvz_json_put_uint(j, mvz_entry_name((unsigned)e), n);
    }
    mvz_json_end_object(j);
    json_frames(r, j, s->stack);
    mvz_json_key(j, "cut_at_depth_cap");
    mvz_json_bool(j, report_stack_at_cap(r, s->stack));
    mvz_json_end_object(j);
}

static int by_peak_desc(const void *a, const void *b)
{
    const struct report_site *x = a, *y = b;
    if (x->s->at_peak_bytes != y->s->at_peak_bytes)
        return x->s->at_peak_bytes > y->s->at_peak_bytes ? -1 : 1;
    return x->s->stack < y->s->stack ? -1 : x->s->stack > y->s->stack;
}

/* Marks the sites the text report's lists show (--top per list; the one
 * list of --sort or --at, or the four default ones). Returns how many, or
 * -1 when out of memory. */
static long mark_listed(struct report *r, uint8_t *listed)
{
    int one = r->o.sort >= 0 || r->o.at != AT_NONE;
    long count = 0;
    for (int c = 0; c < MVZ_COST_COUNT; c++) {
        if (one ? c != (int)report_list_cost(r) : c == MVZ_COST_BYTES)
            continue;
        size_t n;
        struct report_site *top = report_top_sites(r, (enum mvz_cost)c, r->o.top, &n);
        if (!top)
            return -1;
        for (size_t i = 0; i < n; i++)
            if (!listed[top[i].s->stack]++)
                count++;
        free(top);
    }
    return count;
}

/* Every site with --all-sites; else those of the text report's lists:
 * a large program's every site was 1.9 GB of JSON. Largest at the peak
 * first either way. */
static void json_sites(struct report *r, struct mvz_json *j)
{
    uint8_t *listed = NULL;
    if (!r->o.all_sites)
        listed = calloc(r->p.sites_cap + 1, 1);
    if (listed && mark_listed(r, listed) < 0) {
        free(listed);
        listed = NULL;
    }
    mvz_sort(r->sites, r->nsites, sizeof(*r->sites), by_peak_desc);
    mvz_json_key(j, "sites");
    mvz_json_begin_array(j);
    size_t shown = 0;
    for (size_t i = 0; i < r->nsites; i++) {
        if (listed && !listed[r->sites[i].s->stack])
            continue;
        json_site(r, j, &r->sites[i]);
        shown++;
    }
    mvz_json_end_array(j);
    mvz_json_put_uint(j, "sites_listed", shown);
    mvz_json_put_uint(j, "sites_selected", r->nsites);
    mvz_json_put_uint(j, "sites_total", r->nsites_all);
    free(listed);
}

static void json_groups(struct report *r, struct mvz_json *j)
{
    mvz_json_put_string(j, "by", mvz_by_name(r->o.by));
    mvz_json_key(j, "groups");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < r->groups.n; i++) {
        const struct mvz_group *g = &r->groups.groups[i];
        if (!g->nsites)
            continue;
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "name", mvz_group_name(&r->groups, g));
        mvz_json_put_uint(j, "sites", g->nsites);
        json_counts(j, &g->s);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void json_costs(struct mvz_json *j, const char *key, const uint64_t *c)
{
    mvz_json_key(j, key);
    mvz_json_begin_object(j);
    for (int i = 0; i < MVZ_COST_COUNT; i++)
        mvz_json_put_uint(j, mvz_cost_name((enum mvz_cost)i), c[i]);
    mvz_json_end_object(j);
}

static void json_node(struct report *r, struct mvz_json *j, uint32_t id, size_t depth,
                      enum mvz_cost c, uint64_t min)
{
    const struct mvz_tree_node *n = &r->tree.nodes[id];
    mvz_json_begin_object(j);
    if (id) {
        mvz_json_put_string(j, "function", mvz_strtab_get(&r->tree.names, n->func));
        mvz_json_put_string(j, "file", n->file ? mvz_strtab_get(&r->tree.names, n->file) : NULL);
        mvz_json_put_string(j, "module",
                            n->module ? mvz_strtab_get(&r->tree.names, n->module) : NULL);
    }
    json_costs(j, "inclusive", n->incl);
    json_costs(j, "self", n->self);
    mvz_json_key(j, "children");
    mvz_json_begin_array(j);
    if (!r->o.tree_depth || depth < r->o.tree_depth)
        for (uint32_t k = n->first_child; k; k = r->tree.nodes[k].next_sibling)
            if (r->tree.nodes[k].incl[c] && r->tree.nodes[k].incl[c] >= min)
                json_node(r, j, k, depth + 1, c, min);
    mvz_json_end_array(j);
    mvz_json_end_object(j);
}

static void json_tree(struct report *r, struct mvz_json *j)
{
    enum mvz_cost c = report_list_cost(r);
    uint64_t min = (uint64_t)((double)r->tree.nodes[0].incl[c] * r->o.min_percent / 100.0);
    mvz_json_key(j, "tree");
    mvz_json_begin_object(j);
    mvz_json_put_string(j, "direction", r->o.tree == TREE_TOP_DOWN ? "top-down" : "bottom-up");
    mvz_json_put_string(j, "sorted_by", mvz_cost_name(c));
    mvz_json_key(j, "root");
    json_node(r, j, 0, 0, c, min);
    mvz_json_end_object(j);
}

static void json_suppressions(struct report *r, struct mvz_json *j)
{
    mvz_json_key(j, "suppressions");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < r->sel.nsupp; i++) {
        const struct mvz_suppression *s = &r->sel.supp[i];
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "pattern", s->pattern);
        mvz_json_put_string(j, "called_from", s->also);
        mvz_json_put_string(j, "origin", s->origin);
        mvz_json_put_uint(j, "line", s->line);
        mvz_json_put_uint(j, "leaked_bytes", s->bytes);
        mvz_json_put_uint(j, "leaked_blocks", s->blocks);
        mvz_json_put_uint(j, "sites", s->sites);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void json_children(struct report *r, struct mvz_json *j)
{
    const struct mvz_trace *t = &r->p.trace;
    mvz_json_key(j, "children");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < t->nchildren; i++) {
        mvz_json_begin_object(j);
        mvz_json_put_uint(j, "pid", (uint64_t)t->children[i].pid);
        mvz_json_put_string(j, "trace", t->children[i].trace);
        mvz_json_put_string(j, "how", t->children[i].how == MVZ_CHILD_EXEC ? "exec" : "fork");
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

/* The agent's NOTICE records: what it could not see, in its words. */
static void json_section(struct mvz_json *j, uint64_t from_ns, uint64_t rate)
{
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "from_ns", from_ns);
    mvz_json_put_uint(j, "mean_bytes", rate);
    mvz_json_end_object(j);
}

/* A sampled trace: its rate and the estimates' 95% errors; null when full. */
static void json_sampling(struct report *r, struct mvz_json *j)
{
    const struct mvz_summary *s = &r->p.sum;
    mvz_json_key(j, "sampling");
    if (!r->p.trace.sample_bytes) {
        mvz_json_null(j);
        return;
    }
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "mean_bytes", r->p.trace.sample_bytes);
    mvz_json_put_uint(j, "allocated_bytes_error_95", (uint64_t)(1.96 * sqrt(s->var_allocated)));
    mvz_json_put_uint(j, "leaked_bytes_error_95",
                      (uint64_t)(1.96 * sqrt(s->var_live > 0 ? s->var_live : 0)));
    /* the switches: from when each rate held (0: every allocation) */
    const struct mvz_sampling *sm = &r->p.trace.sampling;
    mvz_json_key(j, "sections");
    mvz_json_begin_array(j);
    if (!sm->nsections || sm->sections[0].from_ns > 0)
        json_section(j, 0, 0);
    for (size_t i = 0; i < sm->nsections; i++)
        json_section(j, sm->sections[i].from_ns, sm->sections[i].rate);
    mvz_json_end_array(j);
    mvz_json_end_object(j);
}

static void json_notices(struct report *r, struct mvz_json *j)
{
    const struct mvz_trace *t = &r->p.trace;
    mvz_json_key(j, "notices");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < t->nnotices; i++) {
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "code",
                            t->notices[i].code == MVZ_NOTICE_FOREIGN_ALLOCATOR ? "foreign_allocator"
                                                                               : "unknown");
        mvz_json_put_string(j, "text", t->notices[i].text ? t->notices[i].text : "");
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void json_damage(struct report *r, struct mvz_json *j)
{
    const struct mvz_trace *t = &r->p.trace;
    mvz_json_key(j, "damage");
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "bad_chunks", t->bad_chunks);
    mvz_json_put_uint(j, "skipped_bytes", t->skipped_bytes);
    mvz_json_key(j, "truncated");
    mvz_json_bool(j, t->truncated);
    mvz_json_put_uint(j, "bad_records", t->bad_records);
    mvz_json_put_uint(j, "bad_events", t->bad_events);
    mvz_json_put_uint(j, "missing_events", t->missing_seqs);
    mvz_json_put_uint(j, "unordered_events", t->unordered_events);
    mvz_json_put_uint(j, "lost_events", t->lost_events);
    mvz_json_put_uint(j, "reused_addresses", r->p.sum.reused_addresses);
    mvz_json_end_object(j);
}

void report_print_json(struct report *r, FILE *out)
{
    struct mvz_json j;
    mvz_json_init(&j, out);
    mvz_json_begin_object(&j);
    mvz_json_put_uint(&j, "memviz_report", 1);
    mvz_json_put_string(&j, "trace", r->p.trace.path);
    if (r->ptree) {
        /* sites, summary and threads are the whole tree's (METRICS.md) */
        mvz_json_key(&j, "merged_tree");
        mvz_json_begin_object(&j);
        mvz_json_put_uint(&j, "images", proc_tree_count(r->ptree));
        mvz_json_put_string(&j, "at_peak", "at each image's own peak, summed");
        mvz_json_end_object(&j);
    }
    json_process(r, &j);
    json_summary(r, &j);
    json_window(r, &j);
    json_sites(r, &j);
    if (r->o.by != MVZ_BY_STACK)
        json_groups(r, &j);
    if (r->o.tree != TREE_NONE)
        json_tree(r, &j);
    mvz_profile_json_sizes(&j, "sizes", &r->p.sum);
    mvz_profile_json_threads(&j, "thread_list", &r->p);
    json_suppressions(r, &j);
    json_children(r, &j);
    if (r->o.children)
        report_print_tree(r->ptree, NULL, &j);
    if (r->have_leaks)
        snap_json_leak_totals(&j, "leaks", &r->leaks); /* as memviz leaks has it */
    json_notices(r, &j);
    json_sampling(r, &j);
    report_user_json(r, &j);
    json_damage(r, &j);
    mvz_json_end_object(&j);
}
