/*
 * report.c - `memviz report`: the summary of one trace and its top
 * allocation sites, as text for people or as one JSON object for programs.
 * Every number printed is defined in docs/METRICS.md.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "analysis/symbols.h"
#include "cmd/cmd.h"
#include "util/fmt.h"
#include "util/json.h"

#define MAX_FRAMES 2048

struct report {
    struct mvz_profile p;
    struct mvz_symbols *sym;
    struct mvz_site **sites; /* sites with at least one allocation */
    size_t nsites;
    struct mvz_frame frames[MAX_FRAMES];
};

/* ---- ordering sites ---- */
typedef uint64_t (*site_key)(const struct mvz_site *);
static uint64_t key_at_peak(const struct mvz_site *s)
{
    return s->at_peak_bytes;
}
static uint64_t key_leaked(const struct mvz_site *s)
{
    return s->leaked_bytes;
}
static uint64_t key_calls(const struct mvz_site *s)
{
    return s->allocations;
}
static uint64_t key_temporary(const struct mvz_site *s)
{
    return s->temporary;
}

static site_key sort_key;
static int by_key_desc(const void *a, const void *b)
{
    const struct mvz_site *x = *(struct mvz_site *const *)a, *y = *(struct mvz_site *const *)b;
    uint64_t kx = sort_key(x), ky = sort_key(y);
    if (kx != ky)
        return kx > ky ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static void collect_sites(struct report *r)
{
    r->sites = calloc(r->p.sites_cap ? r->p.sites_cap : 1, sizeof(*r->sites));
    for (size_t i = 0; r->sites && i < r->p.sites_cap; i++)
        if (r->p.sites[i].allocations)
            r->sites[r->nsites++] = &r->p.sites[i];
}

/* ---- text ---- */
static const char *exit_text(const struct mvz_trace *t, char *buf, size_t cap)
{
    if (t->have_exit && t->exit_signal)
        snprintf(buf, cap, "killed by signal %d (%s)", t->exit_signal, strsignal(t->exit_signal));
    else if (t->have_exit) {
        int how = t->have_agent_exit ? t->agent_exit_how : t->exit_how;
        snprintf(buf, cap, "exited with status %d%s%s%s", t->exit_status,
                 how == MVZ_EXIT_STATUS || how == MVZ_EXIT_UNKNOWN ? "" : " (via ",
                 how == MVZ_EXIT_STATUS || how == MVZ_EXIT_UNKNOWN ? "" : mvz_exit_how_name(how),
                 how == MVZ_EXIT_STATUS || how == MVZ_EXIT_UNKNOWN ? "" : ")");
    } else if (t->have_exec)
        snprintf(buf, cap, "replaced itself with exec(%s)", t->exec_path ? t->exec_path : "?");
    else
        snprintf(buf, cap,
                 "unknown: the trace ends without an exit record (killed by SIGKILL, "
                 "or still running)");
    return buf;
}

static void print_frames(struct report *r, FILE *out, uint32_t stack)
{
    size_t n = mvz_symbols_stack(r->sym, stack, r->frames, MAX_FRAMES);
    for (size_t i = 0; i < n; i++) {
        const struct mvz_frame *f = &r->frames[i];
        fprintf(out, "      %s%s", f->inlined ? "(inlined) " : "", f->function);
        if (f->file)
            fprintf(out, "  %s:%u", f->file, f->line);
        if (f->module) {
            const char *base = strrchr(f->module, '/');
            fprintf(out, "  [%s]", base ? base + 1 : f->module);
        }
        fputc('\n', out);
    }
}

/* unit: what the key counts; keys in bytes are printed as sizes. */
static void print_top(struct report *r, FILE *out, const char *title, site_key key, size_t top,
                      int is_bytes, const char *unit)
{
    sort_key = key;
    qsort(r->sites, r->nsites, sizeof(*r->sites), by_key_desc);
    size_t shown = 0;
    char a[32], b[32], c[32];
    fprintf(out, "\n%s\n", title);
    for (size_t i = 0; i < r->nsites && shown < top; i++) {
        const struct mvz_site *s = r->sites[i];
        uint64_t k = key(s);
        if (!k)
            break;
        shown++;
        fprintf(out, "  #%zu  %s %s", shown,
                is_bytes ? mvz_fmt_bytes(k, a, sizeof(a)) : mvz_fmt_count(k, a, sizeof(a)), unit);
        fprintf(out, "  (%s call%s, %s allocated, %s leaked)\n",
                mvz_fmt_count(s->allocations, b, sizeof(b)), s->allocations == 1 ? "" : "s",
                mvz_fmt_bytes(s->allocated_bytes, c, sizeof(c)),
                mvz_fmt_bytes(s->leaked_bytes, a, sizeof(a)));
        print_frames(r, out, s->stack);
    }
    if (!shown)
        fprintf(out, "  (none)\n");
}

static void print_warnings(const struct mvz_trace *t, const struct mvz_summary *s, FILE *out)
{
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

static void print_text(struct report *r, FILE *out, size_t top)
{
    const struct mvz_trace *t = &r->p.trace;
    const struct mvz_summary *s = &r->p.sum;
    char a[64], b[64], c[64], how[256];
    fprintf(out, "memviz report: %s\n", t->path);
    print_warnings(t, s, out);
    fprintf(out, "command:          ");
    for (size_t i = 0; i < t->argc; i++)
        fprintf(out, "%s%s", i ? " " : "", t->argv[i]);
    fprintf(out, "\npid:              %d (parent %d)\n", t->pid, t->ppid);
    fprintf(out, "duration:         %s\n", mvz_fmt_duration(s->duration_ns, a, sizeof(a)));
    fprintf(out, "exit:             %s\n", exit_text(t, how, sizeof(how)));
    fprintf(out, "allocation calls: %s (frees: %s)\n", mvz_fmt_count(s->allocations, a, sizeof(a)),
            mvz_fmt_count(s->frees, b, sizeof(b)));
    fprintf(out, "bytes allocated:  %s\n", mvz_fmt_bytes(s->allocated_bytes, a, sizeof(a)));
    fprintf(out, "peak heap:        %s (%s bytes) at %s\n",
            mvz_fmt_bytes(s->peak_bytes, a, sizeof(a)), mvz_fmt_count(s->peak_bytes, b, sizeof(b)),
            mvz_fmt_duration(s->peak_time_ns, c, sizeof(c)));
    fprintf(out, "peak RSS:         %s\n", mvz_fmt_bytes(t->peak_rss, a, sizeof(a)));
    fprintf(out, "leaked at exit:   %s (%s bytes) in %s block(s)\n",
            mvz_fmt_bytes(s->leaked_bytes, a, sizeof(a)),
            mvz_fmt_count(s->leaked_bytes, b, sizeof(b)),
            mvz_fmt_count(s->leaked_blocks, c, sizeof(c)));
    fprintf(out, "temporary:        %s allocation(s)\n", mvz_fmt_count(s->temporary, a, sizeof(a)));
    fprintf(out, "threads:          %zu\n", r->p.nthreads);
    if (s->unmatched_frees || s->mismatched_frees)
        fprintf(out,
                "other:            %" PRIu64 " release(s) of untraced blocks, %" PRIu64
                " mismatched release(s) (e.g. new[] with free)\n",
                s->unmatched_frees, s->mismatched_frees);
    for (size_t i = 0; i < t->nchildren; i++)
        fprintf(out, "child:            pid %d (%s) -> %s\n", t->children[i].pid,
                t->children[i].how == MVZ_CHILD_EXEC ? "exec" : "fork", t->children[i].trace);
    print_top(r, out, "Top sites by contribution to the peak:", key_at_peak, top, 1, "at peak");
    print_top(r, out, "Top sites by bytes leaked:", key_leaked, top, 1, "leaked");
    print_top(r, out, "Top sites by allocation calls:", key_calls, top, 0, "calls");
    print_top(r, out, "Top sites by temporary allocations:", key_temporary, top, 0, "temporary");
}

/* ---- JSON ---- */
static void json_u(struct mvz_json *j, const char *k, uint64_t v)
{
    mvz_json_key(j, k);
    mvz_json_uint(j, v);
}

static void json_process(struct report *r, struct mvz_json *j)
{
    const struct mvz_trace *t = &r->p.trace;
    mvz_json_key(j, "process");
    mvz_json_begin_object(j);
    json_u(j, "pid", (uint64_t)t->pid);
    json_u(j, "ppid", (uint64_t)t->ppid);
    mvz_json_key(j, "argv");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < t->argc; i++)
        mvz_json_string(j, t->argv[i]);
    mvz_json_end_array(j);
    mvz_json_key(j, "exe");
    mvz_json_string(j, t->exe);
    if (t->have_exit && t->exit_signal) {
        json_u(j, "exit_signal", (uint64_t)t->exit_signal);
    } else if (t->have_exit) {
        mvz_json_key(j, "exit_status");
        mvz_json_int(j, t->exit_status);
    }
    int how = t->have_exit && t->exit_signal ? MVZ_EXIT_SIGNAL
              : t->have_agent_exit           ? t->agent_exit_how
                                             : MVZ_EXIT_UNKNOWN;
    mvz_json_key(j, "exit_how");
    mvz_json_string(j, t->have_exec && !t->have_exit ? "exec" : mvz_exit_how_name(how));
    mvz_json_key(j, "complete");
    mvz_json_bool(j,
                  (t->have_end || t->have_exec || t->have_exit) && !t->bad_chunks && !t->truncated);
    mvz_json_end_object(j);
}

static void json_summary(struct report *r, struct mvz_json *j)
{
    const struct mvz_summary *s = &r->p.sum;
    mvz_json_key(j, "summary");
    mvz_json_begin_object(j);
    json_u(j, "allocations", s->allocations);
    json_u(j, "frees", s->frees);
    json_u(j, "allocated_bytes", s->allocated_bytes);
    json_u(j, "peak_bytes", s->peak_bytes);
    json_u(j, "peak_time_ns", s->peak_time_ns);
    json_u(j, "peak_rss_bytes", r->p.trace.peak_rss);
    json_u(j, "leaked_bytes", s->leaked_bytes);
    json_u(j, "leaked_blocks", s->leaked_blocks);
    json_u(j, "temporary", s->temporary);
    json_u(j, "duration_ns", s->duration_ns);
    json_u(j, "threads", r->p.nthreads);
    json_u(j, "unmatched_frees", s->unmatched_frees);
    json_u(j, "mismatched_frees", s->mismatched_frees);
    mvz_json_end_object(j);
}

static void json_frames(struct report *r, struct mvz_json *j, uint32_t stack)
{
    size_t n = mvz_symbols_stack(r->sym, stack, r->frames, MAX_FRAMES);
    char addr[32];
    mvz_json_key(j, "frames");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        const struct mvz_frame *f = &r->frames[i];
        mvz_json_begin_object(j);
        mvz_json_key(j, "function");
        mvz_json_string(j, f->function);
        mvz_json_key(j, "file");
        mvz_json_string(j, f->file);
        json_u(j, "line", f->line);
        mvz_json_key(j, "module");
        mvz_json_string(j, f->module);
        mvz_json_key(j, "inlined");
        mvz_json_bool(j, f->inlined);
        snprintf(addr, sizeof(addr), "0x%" PRIx64, f->address);
        mvz_json_key(j, "address");
        mvz_json_string(j, addr);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void json_site(struct report *r, struct mvz_json *j, const struct mvz_site *s)
{
    mvz_json_begin_object(j);
    json_u(j, "stack_id", s->stack);
    json_u(j, "allocations", s->allocations);
    json_u(j, "allocated_bytes", s->allocated_bytes);
    json_u(j, "peak_bytes", s->peak_bytes);
    json_u(j, "at_peak_bytes", s->at_peak_bytes);
    json_u(j, "leaked_bytes", s->leaked_bytes);
    json_u(j, "leaked_blocks", s->leaked_blocks);
    json_u(j, "temporary", s->temporary);
    mvz_json_key(j, "entries");
    mvz_json_begin_object(j);
    for (int e = 0; e < MVZ_E_COUNT; e++)
        if (s->entries[e])
            json_u(j, mvz_entry_name((unsigned)e), s->entries[e]);
    mvz_json_end_object(j);
    json_frames(r, j, s->stack);
    mvz_json_end_object(j);
}

static void json_children(struct report *r, struct mvz_json *j)
{
    const struct mvz_trace *t = &r->p.trace;
    mvz_json_key(j, "children");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < t->nchildren; i++) {
        mvz_json_begin_object(j);
        json_u(j, "pid", (uint64_t)t->children[i].pid);
        mvz_json_key(j, "trace");
        mvz_json_string(j, t->children[i].trace);
        mvz_json_key(j, "how");
        mvz_json_string(j, t->children[i].how == MVZ_CHILD_EXEC ? "exec" : "fork");
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

static void json_warnings(struct report *r, struct mvz_json *j)
{
    const struct mvz_trace *t = &r->p.trace;
    mvz_json_key(j, "damage");
    mvz_json_begin_object(j);
    json_u(j, "bad_chunks", t->bad_chunks);
    json_u(j, "skipped_bytes", t->skipped_bytes);
    mvz_json_key(j, "truncated");
    mvz_json_bool(j, t->truncated);
    json_u(j, "bad_records", t->bad_records);
    json_u(j, "bad_events", t->bad_events);
    json_u(j, "missing_events", t->missing_seqs);
    json_u(j, "unordered_events", t->unordered_events);
    json_u(j, "lost_events", t->lost_events);
    json_u(j, "reused_addresses", r->p.sum.reused_addresses);
    mvz_json_end_object(j);
}

static void print_json(struct report *r, FILE *out)
{
    struct mvz_json j;
    mvz_json_init(&j, out);
    mvz_json_begin_object(&j);
    json_u(&j, "memviz_report", 1);
    mvz_json_key(&j, "trace");
    mvz_json_string(&j, r->p.trace.path);
    json_process(r, &j);
    json_summary(r, &j);
    sort_key = key_at_peak;
    qsort(r->sites, r->nsites, sizeof(*r->sites), by_key_desc);
    mvz_json_key(&j, "sites");
    mvz_json_begin_array(&j);
    for (size_t i = 0; i < r->nsites; i++)
        json_site(r, &j, r->sites[i]);
    mvz_json_end_array(&j);
    json_children(r, &j);
    json_warnings(r, &j);
    mvz_json_end_object(&j);
}

int cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"top", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0;
    long top = 10;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+jn:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = 1;
            break;
        case 'n':
            top = mvz_parse_count(optarg, 1000000);
            if (top < 0)
                return mvz_usage_error("report", "--top needs a number, got '%s'", optarg);
            break;
        case 'h':
            printf("usage: memviz report [--json] [--top N] FILE\n");
            return 0;
        default:
            return mvz_usage_error("report", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return mvz_usage_error("report", "expects exactly one trace file");
    /* Symbolization must not wait on the network. */
    unsetenv("DEBUGINFOD_URLS");
    static struct report r;
    char err[512];
    if (mvz_profile_load(&r.p, argv[optind], err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return 1;
    }
    r.sym = mvz_symbols_new(&r.p.trace);
    collect_sites(&r);
    if (json)
        print_json(&r, stdout);
    else
        print_text(&r, stdout, (size_t)top);
    mvz_symbols_free(r.sym);
    free(r.sites);
    mvz_profile_free(&r.p);
    return fflush(stdout) == 0 ? 0 : 1;
}
