/*
 * report_text.c - `memviz report` for people: the summary, then lists of
 * sites or groups, or a call tree, and the optional size histogram and
 * per-thread table.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/callgraph.h"
#include "cmd/report.h"
#include "util/fmt.h"
#include "util/sort.h"

static const char *fmt_cost(enum mvz_cost c, uint64_t v, char *buf, size_t cap)
{
    return mvz_cost_is_bytes(c) ? mvz_fmt_bytes(v, buf, cap) : mvz_fmt_count(v, buf, cap);
}

static void print_warnings(const struct mvz_trace *t, const struct mvz_summary *s, FILE *out)
{
    for (size_t i = 0; i < t->nnotices; i++)
        fprintf(out, "warning: %s\n", t->notices[i].text ? t->notices[i].text : "");
    if (t->bad_chunks || t->truncated)
        fprintf(out,
                "warning: the trace is damaged: %" PRIu64 " unreadable chunk(s), %" PRIu64
                " byte(s) skipped%s; numbers cover the readable part only\n",
                t->bad_chunks, t->skipped_bytes, t->truncated ? ", cut short" : "");
    if (t->bad_records || t->bad_events)
        fprintf(out,
                "warning: %" PRIu64 " malformed record(s) and %" PRIu64
                " malformed event(s) were ignored\n",
                t->bad_records, t->bad_events);
    if (t->missing_seqs)
        fprintf(out, "warning: %" PRIu64 " event(s) are missing from the trace\n", t->missing_seqs);
    if (t->unordered_events)
        fprintf(out, "warning: %" PRIu64 " event(s) could not be put in order\n",
                t->unordered_events);
    if (t->lost_events)
        fprintf(out, "warning: the agent could not record %" PRIu64 " event(s)\n", t->lost_events);
    if (s->reused_addresses)
        fprintf(out,
                "warning: %" PRIu64 " allocation(s) reused a live address (a release was "
                "not recorded)\n",
                s->reused_addresses);
}

/* A run whose mode a live client switched: which parts were sampled. */
static void print_sampling_sections(const struct mvz_trace *t, FILE *out)
{
    const struct mvz_sampling *s = &t->sampling;
    char a[32], b[32];
    const char *sep = "";
    fprintf(out, "sampling:         ");
    if (!s->nsections || s->sections[0].from_ns > 0) {
        fprintf(out, "every allocation from the start");
        sep = "; ";
    }
    for (size_t i = 0; i < s->nsections; i++, sep = "; ") {
        const struct mvz_sampling_section *x = &s->sections[i];
        fputs(sep, out);
        if (x->rate)
            fprintf(out, "one in %s from %s", mvz_fmt_bytes(x->rate, a, sizeof(a)),
                    mvz_fmt_duration(x->from_ns, b, sizeof(b)));
        else
            fprintf(out, "every allocation from %s", mvz_fmt_duration(x->from_ns, b, sizeof(b)));
    }
    fprintf(out, "\n");
}

static void print_window(struct report *r, FILE *out)
{
    char a[64], b[64];
    if (r->o.at == AT_TIME)
        fprintf(out, "at:               %s (what was live at that moment)\n",
                mvz_fmt_duration(r->o.at_ns, a, sizeof(a)));
    else if (r->o.windowed)
        fprintf(out, "window:           %s to %s (counts cover this part of the run)\n",
                mvz_fmt_duration(r->o.from_ns, a, sizeof(a)),
                r->o.to_ns == UINT64_MAX ? "the end" : mvz_fmt_duration(r->o.to_ns, b, sizeof(b)));
}

static void print_leaks_line(struct report *r, FILE *out)
{
    const struct mvz_summary *s = &r->p.sum;
    char a[64], b[64], c[64];
    const struct mvz_trace *t = &r->p.trace;
    /* Not freed is not lost: which of these blocks the program could no
     * longer reach is for heap snapshots to say. */
    const char *what = r->o.at == AT_TIME         ? "live then:       "
                       : r->o.to_ns != UINT64_MAX ? "live at --to:    "
                                                  : "not freed:       ";
    const char *when = r->o.at == AT_TIME || r->o.to_ns != UINT64_MAX ? ""
                       : t->have_exit || t->have_agent_exit           ? ", at exit"
                       : t->have_exec                                 ? ", at exec"
                                      : ", when the trace ends (no exit recorded)";
    fprintf(out, "%s %s (%s bytes) in %s block(s)%s\n", what,
            mvz_fmt_bytes(s->leaked_bytes, a, sizeof(a)),
            mvz_fmt_count(s->leaked_bytes, b, sizeof(b)),
            mvz_fmt_count(s->leaked_blocks, c, sizeof(c)), when);
    if (r->suppressed.leaked_blocks)
        fprintf(out, "  suppressed:     %s in %s block(s), listed under \"Suppressed leaks\"\n",
                mvz_fmt_bytes(r->suppressed.leaked_bytes, a, sizeof(a)),
                mvz_fmt_count(r->suppressed.leaked_blocks, b, sizeof(b)));
}

/* --children: the summary of the whole tree's merged sites. */
static void print_merged_summary(struct report *r, FILE *out)
{
    const struct mvz_trace *t = &r->p.trace;
    const struct mvz_summary *s = &r->p.sum;
    char a[64], b[64], c[64];
    fprintf(out, "memviz report: %s and its process tree, merged\n", t->path);
    print_warnings(t, s, out);
    fprintf(out, "command:          ");
    report_put_command(out, t);
    fprintf(out, "\nduration:         %s (first start to last end)\n",
            mvz_fmt_duration(s->duration_ns, a, sizeof(a)));
    fprintf(out, "allocation calls: %s (frees: %s)\n", mvz_fmt_count(s->allocations, a, sizeof(a)),
            mvz_fmt_count(s->frees, b, sizeof(b)));
    fprintf(out, "bytes allocated:  %s\n", mvz_fmt_bytes(s->allocated_bytes, a, sizeof(a)));
    fprintf(out,
            "peak heap:        %s: each image's peak, summed (the peaks need not coincide);\n"
            "                  \"at peak\" below means at each image's own peak\n",
            mvz_fmt_bytes(s->peak_bytes, a, sizeof(a)));
    fprintf(out, "not freed:        %s (%s bytes) in %s block(s), at each image's end\n",
            mvz_fmt_bytes(s->leaked_bytes, a, sizeof(a)),
            mvz_fmt_count(s->leaked_bytes, b, sizeof(b)),
            mvz_fmt_count(s->leaked_blocks, c, sizeof(c)));
    if (r->suppressed.leaked_blocks)
        fprintf(out, "  suppressed:     %s in %s block(s), listed under \"Suppressed leaks\"\n",
                mvz_fmt_bytes(r->suppressed.leaked_bytes, a, sizeof(a)),
                mvz_fmt_count(r->suppressed.leaked_blocks, b, sizeof(b)));
    fprintf(out, "temporary:        %s allocation(s)\n", mvz_fmt_count(s->temporary, a, sizeof(a)));
    fprintf(out, "threads:          %zu\n", r->p.nthreads);
    if (s->unmatched_frees || s->mismatched_frees)
        fprintf(out,
                "other:            %" PRIu64 " release(s) of untraced blocks, %" PRIu64
                " mismatched release(s) (e.g. new[] with free)\n",
                s->unmatched_frees, s->mismatched_frees);
    if (r->nsites != r->nsites_all)
        fprintf(out, "filtered:         %zu of %zu sites shown\n", r->nsites, r->nsites_all);
}

static void print_summary(struct report *r, FILE *out)
{
    if (r->ptree) {
        print_merged_summary(r, out);
        return;
    }
    const struct mvz_trace *t = &r->p.trace;
    const struct mvz_summary *s = &r->p.sum;
    char a[64], b[64], c[64], how[256];
    fprintf(out, "memviz report: %s\n", t->path);
    print_warnings(t, s, out);
    fprintf(out, "command:          ");
    report_put_command(out, t);
    if (t->argc_total > t->argc)
        fprintf(out, " [%s more arguments not kept]",
                mvz_fmt_count(t->argc_total - t->argc, a, sizeof(a)));
    fprintf(out, "\npid:              %d (parent %d)\n", t->pid, t->ppid);
    fprintf(out, "duration:         %s\n", mvz_fmt_duration(s->duration_ns, a, sizeof(a)));
    fprintf(out, "exit:             %s\n", report_exit_text(t, how, sizeof(how)));
    print_window(r, out);
    fprintf(out, "allocation calls: %s (frees: %s)\n", mvz_fmt_count(s->allocations, a, sizeof(a)),
            mvz_fmt_count(s->frees, b, sizeof(b)));
    fprintf(out, "bytes allocated:  %s\n", mvz_fmt_bytes(s->allocated_bytes, a, sizeof(a)));
    if (t->sample_bytes)
        fprintf(out,
                "sampled:          one allocation every %s on average: every number is an "
                "estimate (bytes allocated within %s, not freed within %s; 95%%)\n",
                mvz_fmt_bytes(t->sample_bytes, a, sizeof(a)),
                mvz_fmt_bytes((uint64_t)(1.96 * sqrt(s->var_allocated)), b, sizeof(b)),
                mvz_fmt_bytes((uint64_t)(1.96 * sqrt(s->var_live > 0 ? s->var_live : 0)), c,
                              sizeof(c)));
    if (t->sample_bytes && (mvz_sampling_mixed(&t->sampling) || t->sampling.nsections > 1))
        print_sampling_sections(t, out);
    fprintf(out, "peak heap:        %s (%s bytes) at %s\n",
            mvz_fmt_bytes(s->peak_bytes, a, sizeof(a)), mvz_fmt_count(s->peak_bytes, b, sizeof(b)),
            mvz_fmt_duration(s->peak_time_ns, c, sizeof(c)));
    fprintf(out, "peak RSS:         %s", mvz_fmt_bytes(t->peak_rss, a, sizeof(a)));
    if (mvz_trace_agent_rss(t))
        fprintf(out, " (memviz's own: at most %s of it, the agent's mappings)",
                mvz_fmt_bytes(mvz_trace_agent_rss(t), a, sizeof(a)));
    fputc('\n', out);
    print_leaks_line(r, out);
    if (r->have_leaks)
        fprintf(out,
                "leak scan:        %s definitely lost, %s indirectly, %s possibly; %s still "
                "reachable (memviz leaks)\n",
                mvz_fmt_bytes(r->leaks.bytes[MVZ_LEAK_DEFINITE], a, sizeof(a)),
                mvz_fmt_bytes(r->leaks.bytes[MVZ_LEAK_INDIRECT], b, sizeof(b)),
                mvz_fmt_bytes(r->leaks.bytes[MVZ_LEAK_POSSIBLE], c, sizeof(c)),
                mvz_fmt_bytes(r->leaks.bytes[MVZ_LEAK_REACHABLE], how, sizeof(how)));
    fprintf(out, "temporary:        %s allocation(s)\n", mvz_fmt_count(s->temporary, a, sizeof(a)));
    fprintf(out, "threads:          %zu\n", r->p.nthreads);
    if (t->depth > 0)
        fprintf(out, "stack depth cap:  %d frames (memviz run --depth)\n", t->depth);
    if (t->callgraph) {
        uint64_t calls = 0;
        for (size_t i = 0; i < t->callgraph->n; i++)
            for (size_t k = 1; k < t->callgraph->threads[i].n; k++)
                calls += t->callgraph->threads[i].nodes[k].calls;
        fprintf(out, "call graph:       %s call(s) on %zu thread(s) (memviz callgraph)\n",
                mvz_fmt_count(calls, a, sizeof(a)), t->callgraph->n);
    }
    if (s->unmatched_frees || s->mismatched_frees)
        fprintf(out,
                "other:            %" PRIu64 " release(s) of untraced blocks, %" PRIu64
                " mismatched release(s) (e.g. new[] with free)\n",
                s->unmatched_frees, s->mismatched_frees);
    for (size_t i = 0; i < t->nchildren; i++)
        fprintf(out, "child:            pid %d (%s) -> %s\n", t->children[i].pid,
                t->children[i].how == MVZ_CHILD_EXEC ? "exec" : "fork", t->children[i].trace);
    if (r->nsites != r->nsites_all)
        fprintf(out,
                "filtered:         %zu of %zu sites shown: %s at peak, %s not freed, %s calls\n",
                r->nsites, r->nsites_all, mvz_fmt_bytes(r->shown.at_peak_bytes, a, sizeof(a)),
                mvz_fmt_bytes(r->shown.leaked_bytes, b, sizeof(b)),
                mvz_fmt_count(r->shown.allocations, c, sizeof(c)));
}

/* ---- lists ---- */
static void print_frames(struct report *r, FILE *out, uint32_t stack)
{
    size_t n = mvz_symbols_stack(r->sym, stack, r->frames, REPORT_MAX_FRAMES);
    for (size_t i = 0; i < n; i++) {
        const struct mvz_frame *f = &r->frames[i];
        fprintf(out, "      %s%s", f->inlined ? "(inlined) " : "", f->function);
        if (f->file)
            fprintf(out, "  %s:%u", f->file, f->line);
        if (f->module)
            fprintf(out, "  [%s]", mvz_base_name(f->module));
        fputc('\n', out);
    }
    if (report_stack_at_cap(r, stack))
        fprintf(out, "      ... (cut at the depth cap, %d frames: outer frames not recorded)\n",
                r->p.trace.depth);
}

static enum mvz_cost sort_cost;
static int group_desc(const void *a, const void *b)
{
    const struct mvz_group *x = a, *y = b;
    uint64_t kx = mvz_site_cost(&x->s, sort_cost), ky = mvz_site_cost(&y->s, sort_cost);
    if (kx != ky)
        return kx > ky ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Blocks still live when the analysis stops are leaks only when it stops
 * at the end of the run. */
static const char *still_live_label(const struct report *r)
{
    return r->o.at == AT_TIME         ? "live then"
           : r->o.to_ns != UINT64_MAX ? "live at end"
                                      : "not freed";
}

static void print_counts(struct report *r, FILE *out, const struct mvz_site *s)
{
    char a[32], b[32], c[32];
    fprintf(out, "  (%s call%s, %s allocated, %s %s)", mvz_fmt_count(s->allocations, a, 32),
            s->allocations == 1 ? "" : "s", mvz_fmt_bytes(s->allocated_bytes, b, 32),
            mvz_fmt_bytes(s->leaked_bytes, c, 32), still_live_label(r));
}

static void print_site_list(struct report *r, FILE *out, enum mvz_cost c, const char *unit)
{
    char a[32];
    size_t n;
    struct report_site *top = report_top_sites(r, c, r->o.top, &n);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "  #%zu  %s %s", i + 1,
                fmt_cost(c, report_site_cost(&top[i], c), a, sizeof(a)), unit);
        print_counts(r, out, top[i].s);
        fputc('\n', out);
        print_frames(r, out, top[i].s->stack);
    }
    if (!n)
        fprintf(out, "  (none)\n");
    free(top);
}

static void print_group_list(struct report *r, FILE *out, enum mvz_cost c, const char *unit)
{
    char a[32];
    size_t shown = 0;
    sort_cost = c;
    mvz_sort(r->groups.groups, r->groups.n, sizeof(*r->groups.groups), group_desc);
    for (size_t i = 0; i < r->groups.n && shown < r->o.top; i++) {
        const struct mvz_group *g = &r->groups.groups[i];
        uint64_t k = mvz_site_cost(&g->s, c);
        if (!k)
            break;
        fprintf(out, "  #%zu  %s %s", ++shown, fmt_cost(c, k, a, sizeof(a)), unit);
        print_counts(r, out, &g->s);
        fprintf(out, "\n      %s  (%zu call stack%s)\n", mvz_group_name(&r->groups, g), g->nsites,
                g->nsites == 1 ? "" : "s");
    }
    if (!shown)
        fprintf(out, "  (none)\n");
}

static const char *const list_unit[MVZ_COST_COUNT] = {"at peak", "not freed", "calls", "allocated",
                                                      "temporary"};
static const char *const list_title[MVZ_COST_COUNT] = {"contribution to the peak",
                                                       "bytes not freed", "allocation calls",
                                                       "bytes allocated", "temporary allocations"};

static void print_list(struct report *r, FILE *out, enum mvz_cost c)
{
    const char *what = r->o.by == MVZ_BY_STACK ? "site" : mvz_by_name(r->o.by);
    char a[64];
    if (r->o.at == AT_TIME)
        fprintf(out, "\nTop %ss by bytes live at %s:\n", what,
                mvz_fmt_duration(r->o.at_ns, a, sizeof(a)));
    else if (r->o.by == MVZ_BY_STACK)
        fprintf(out, "\nTop sites by %s:\n", list_title[c]);
    else
        fprintf(out, "\nTop %ss by %s:\n", what, list_title[c]);
    const char *unit = r->o.at == AT_TIME ? "live" : list_unit[c];
    if (r->o.by == MVZ_BY_STACK)
        print_site_list(r, out, c, unit);
    else
        print_group_list(r, out, c, unit);
}

/* ---- tree ---- */
static void print_node(struct report *r, FILE *out, uint32_t id, size_t depth, enum mvz_cost c,
                       uint64_t total, uint64_t min)
{
    const struct mvz_tree_node *n = &r->tree.nodes[id];
    char a[32], b[32];
    double pct = total ? 100.0 * (double)n->incl[c] / (double)total : 0;
    fprintf(out, "%*s%5.1f%%  %s", (int)(2 * depth), "", pct, fmt_cost(c, n->incl[c], a, 32));
    if (r->o.tree == TREE_TOP_DOWN)
        fprintf(out, "  (self %s)", fmt_cost(c, n->self[c], b, 32));
    fprintf(out, "  %s", mvz_strtab_get(&r->tree.names, n->func));
    if (n->file)
        fprintf(out, "  %s", mvz_strtab_get(&r->tree.names, n->file));
    if (n->module)
        fprintf(out, "  [%s]", mvz_base_name(mvz_strtab_get(&r->tree.names, n->module)));
    fputc('\n', out);
    if (r->o.tree_depth && depth + 1 >= r->o.tree_depth)
        return;
    for (uint32_t k = n->first_child; k; k = r->tree.nodes[k].next_sibling)
        if (r->tree.nodes[k].incl[c] && r->tree.nodes[k].incl[c] >= min)
            print_node(r, out, k, depth + 1, c, total, min);
}

static void print_tree(struct report *r, FILE *out)
{
    enum mvz_cost c = report_list_cost(r);
    uint64_t total = r->tree.nodes[0].incl[c];
    uint64_t min = (uint64_t)((double)total * r->o.min_percent / 100.0);
    char a[32];
    fprintf(out, "\n%s call tree by %s (total %s; inclusive%s; nodes under %.1f%% hidden):\n",
            r->o.tree == TREE_TOP_DOWN ? "Top-down" : "Bottom-up",
            r->o.at == AT_TIME ? "bytes live at that time" : list_title[c],
            fmt_cost(c, total, a, sizeof(a)), r->o.tree == TREE_TOP_DOWN ? " and self" : "",
            r->o.min_percent);
    size_t shown = 0;
    for (uint32_t k = r->tree.nodes[0].first_child; k; k = r->tree.nodes[k].next_sibling)
        if (r->tree.nodes[k].incl[c] && r->tree.nodes[k].incl[c] >= min) {
            print_node(r, out, k, 1, c, total, min);
            shown++;
        }
    if (!shown)
        fprintf(out, "  (none)\n");
}

/* ---- histogram, threads, suppressions ---- */
/* 2^k bytes exactly: "512 B", "4 KiB", "16 EiB". */
static const char *pow2_text(int k, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    snprintf(buf, cap, "%llu %s", 1ull << (k % 10), units[k / 10]);
    return buf;
}

static void print_histogram(struct report *r, FILE *out)
{
    const struct mvz_summary *s = &r->p.sum;
    uint64_t most = 0;
    for (int k = 0; k < MVZ_SIZE_BUCKETS; k++)
        if (s->sizes[k].allocations > most)
            most = s->sizes[k].allocations;
    fprintf(out, "\nAllocation sizes (calls and bytes per size class):\n");
    for (int k = 0; k < MVZ_SIZE_BUCKETS; k++) {
        const struct mvz_size_bucket *b = &s->sizes[k];
        if (!b->allocations)
            continue;
        char lo[32], hi[32], n[32], by[32], range[80];
        if (k == 0)
            snprintf(range, sizeof(range), "0 B");
        else
            snprintf(range, sizeof(range), "[%s, %s)", pow2_text(k - 1, lo, 32),
                     pow2_text(k, hi, 32));
        int bar = (int)(40.0 * (double)b->allocations / (double)most + 0.999);
        fprintf(out, "  %-24s %12s calls %12s  %.*s\n", range, mvz_fmt_count(b->allocations, n, 32),
                mvz_fmt_bytes(b->bytes, by, 32), bar, "########################################");
    }
}

static const char *name_or_empty(const char *s)
{
    return s ? s : "";
}

static void print_threads(struct report *r, FILE *out)
{
    fprintf(out, "\nThreads (live bytes are charged to the allocating thread):\n");
    fprintf(out, "  %8s  %-16s %12s %12s %12s %10s %12s %12s\n", "tid", "name", "calls",
            "allocated", "frees", "temporary", "at peak", "not freed");
    for (size_t i = 0; i < r->p.nthreads; i++) {
        const struct mvz_profile_thread *t = &r->p.threads[i];
        char a[32], b[32], c[32], d[32], e[32], f[32];
        fprintf(out, "  %8u  %-16s %12s %12s %12s %10s %12s %12s\n", t->tid,
                name_or_empty(mvz_trace_thread_name(&r->p.trace, t->tid)),
                mvz_fmt_count(t->allocations, a, 32), mvz_fmt_bytes(t->allocated_bytes, b, 32),
                mvz_fmt_count(t->frees, c, 32), mvz_fmt_count(t->temporary, d, 32),
                mvz_fmt_bytes(t->at_peak_bytes, e, 32), mvz_fmt_bytes(t->leaked_bytes, f, 32));
    }
}

static void print_suppressed(struct report *r, FILE *out)
{
    if (!r->suppressed.leaked_blocks)
        return;
    fprintf(out, "\nSuppressed leaks (not in the lists above):\n");
    for (size_t i = 0; i < r->sel.nsupp; i++) {
        const struct mvz_suppression *s = &r->sel.supp[i];
        char a[32];
        if (!s->blocks)
            continue;
        fprintf(out, "  %s in %" PRIu64 " block(s) from %" PRIu64 " site(s)  leak:%s%s%s",
                mvz_fmt_bytes(s->bytes, a, 32), s->blocks, s->sites, s->pattern,
                s->also ? " called from " : "", s->also ? s->also : "");
        if (s->line)
            fprintf(out, "  (%s:%u)\n", s->origin, s->line);
        else
            fprintf(out, "  (%s)\n", s->origin);
    }
}

void report_print_text(struct report *r, FILE *out)
{
    if (r->o.children)
        report_print_tree(r->ptree, out, NULL);
    print_summary(r, out);
    if (r->o.tree != TREE_NONE)
        print_tree(r, out);
    else if (r->o.top == 0)
        ; /* --top 0: the summary alone */
    else if (r->o.sort >= 0 || r->o.at != AT_NONE)
        print_list(r, out, report_list_cost(r));
    else
        for (int c = 0; c < MVZ_COST_COUNT; c++)
            if (c != MVZ_COST_BYTES)
                print_list(r, out, (enum mvz_cost)c);
    if (r->o.histogram)
        print_histogram(r, out);
    if (r->o.threads)
        print_threads(r, out);
    print_suppressed(r, out);
    report_user_text(r, out);
}
