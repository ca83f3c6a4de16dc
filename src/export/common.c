/*
 * common.c - what the export writers share: how an unknown frame is named,
 * and the heap sampled over the window for the formats that draw time.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/timeline.h"
#include "cmd/cmd.h"
#include "export/export.h"
#include "util/fmt.h"
#include "util/json.h"

const char *mvz_export_frame_name(const struct mvz_frame *f, char *buf, size_t cap)
{
    if (strcmp(f->function, "??") != 0 || !f->module)
        return f->function;
    snprintf(buf, cap, "?? [%s]", mvz_base_name(f->module));
    return buf;
}

/* Points past the end of the run would draw a process that no longer runs,
 * and knowing the end spares the timeline a replay to find it. */
static int image_points(const char *path, uint64_t from, uint64_t to, size_t npoints,
                        struct mvz_timeline *tl)
{
    char err[512];
    struct mvz_profile *tp = calloc(1, sizeof(*tp));
    if (!tp) {
        mvz_error("out of memory");
        return -1;
    }
    int rc = mvz_timeline_build(tl, tp, path, from, to, npoints, NULL, 0, 0, err, sizeof(err));
    if (rc < 0)
        mvz_error("%s", err);
    /* Only the points are needed: the window's numbers are in x->p. */
    mvz_profile_free(tp);
    free(tp);
    return rc;
}

/* Adds image tl's heap (started `off` ns after the tree) to the tree's
 * points: each tree point takes the image's point covering the same wall
 * time, and the highest heap of every image point since the tree's
 * previous point; nothing before the image started or after it ended. */
static void add_image_points(struct mvz_timeline *sum, const struct mvz_timeline *tl, uint64_t off)
{
    size_t k = 0, n = tl->npoints;
    for (size_t i = 0; i < sum->npoints && n; i++) {
        if (sum->t[i] < off)
            continue;
        uint64_t local = sum->t[i] - off, most = 0;
        if (local > tl->t[n - 1] + sum->step_ns)
            break;
        for (; k < n && tl->t[k] < local; k++)
            most = tl->heap_max[k] > most ? tl->heap_max[k] : most;
        size_t c = k < n ? k : n - 1;
        most = tl->heap_max[c] > most ? tl->heap_max[c] : most;
        sum->heap[i] += tl->heap[c];
        sum->heap_max[i] += most;
        sum->rss[i] += tl->rss[c];
    }
}

/* --children: the images' heaps summed on the tree's wall clock. */
static int tree_points(struct mvz_export *x, size_t npoints, struct mvz_timeline *sum)
{
    uint64_t end = x->p->sum.duration_ns, first = UINT64_MAX;
    for (size_t i = 0; i < x->nimages; i++)
        first = x->image_starts[i] < first ? x->image_starts[i] : first;
    memset(sum, 0, sizeof(*sum));
    sum->npoints = npoints;
    sum->to_ns = end;
    sum->step_ns = end / npoints ? end / npoints : 1;
    sum->t = calloc(npoints, sizeof(uint64_t));
    sum->heap = calloc(npoints, sizeof(uint64_t));
    sum->heap_max = calloc(npoints, sizeof(uint64_t));
    sum->rss = calloc(npoints, sizeof(uint64_t));
    if (!sum->t || !sum->heap || !sum->heap_max || !sum->rss) {
        mvz_timeline_free(sum);
        mvz_error("out of memory");
        return -1;
    }
    for (size_t i = 0; i < npoints; i++)
        sum->t[i] = (i + 1) * sum->step_ns;
    for (size_t i = 0; i < x->nimages; i++) {
        struct mvz_timeline tl;
        if (image_points(x->image_paths[i], 0, UINT64_MAX, npoints, &tl) < 0) {
            mvz_timeline_free(sum);
            return -1;
        }
        add_image_points(sum, &tl, x->image_starts[i] - first);
        mvz_timeline_free(&tl);
    }
    x->peak_bytes = x->peak_time_ns = 0;
    for (size_t i = 0; i < npoints; i++)
        if (sum->heap_max[i] > x->peak_bytes) {
            x->peak_bytes = sum->heap_max[i];
            x->peak_time_ns = sum->t[i];
        }
    return 0;
}

int mvz_export_heap_points(struct mvz_export *x, size_t npoints, struct mvz_timeline *tl)
{
    if (x->nimages)
        return tree_points(x, npoints, tl);
    uint64_t end = x->p->sum.duration_ns;
    if (x->from_ns > end) {
        mvz_error("the window starts at %.3f s, after the end of the run (%.3f s)",
                  (double)x->from_ns / 1e9, (double)end / 1e9);
        return -1;
    }
    x->peak_bytes = x->p->sum.peak_bytes;
    x->peak_time_ns = x->p->sum.peak_time_ns;
    return image_points(x->trace_path, x->from_ns, x->to_ns < end ? x->to_ns : end, npoints, tl);
}

static struct mvz_frame pseudo_frame(const char *name)
{
    return (struct mvz_frame){.function = name};
}

static int same_function(const struct mvz_frame *a, const struct mvz_frame *b)
{
    return !strcmp(a->function, b->function) &&
           (a->module == b->module || (a->module && b->module && !strcmp(a->module, b->module)));
}

/* Drops each frame whose next (outer) frame is of the same function. */
static size_t fold_recursion(struct mvz_frame *f, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (i + 1 == n || !same_function(&f[i], &f[i + 1]))
            f[k++] = f[i];
    return k;
}

size_t mvz_export_stack(const struct mvz_export *x, uint32_t stack, struct mvz_frame *out,
                        size_t max)
{
    const struct mvz_trace *t = &x->p->trace;
    const struct mvz_stack *st = mvz_trace_stack(t, stack);
    int at_cap = st && t->depth > 0 && st->depth >= (uint32_t)t->depth;
    size_t n = mvz_symbols_stack(x->sym, stack, out, max - 1);
    if (x->fold_recursion)
        n = fold_recursion(out, n);
    if (x->depth && n > x->depth) {
        n = x->depth;
        out[n++] = pseudo_frame("[outer frames]");
    } else if (at_cap) {
        out[n++] = pseudo_frame("[cut at the depth cap]");
    }
    return n;
}

int mvz_export_site_shown(const struct mvz_export *x, const struct mvz_site *s, enum mvz_cost c)
{
    if (x->min_percent <= 0)
        return 1;
    return (double)mvz_site_cost(s, c) * 100.0 >= x->min_percent * (double)x->total[c];
}

void mvz_export_put_clean(FILE *out, const char *s)
{
    for (; s && *s; s++)
        fputc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
}

void mvz_export_callgrind_head(FILE *out, const struct mvz_export *x)
{
    const struct mvz_trace *t = &x->p->trace;
    fprintf(out, "# callgrind format\nversion: 1\ncreator: memviz %s\npid: %d\ncmd:", MVZ_VERSION,
            t->pid);
    for (size_t i = 0; i < t->argc; i++) {
        fputc(' ', out);
        mvz_export_put_clean(out, t->argv[i]);
    }
    fputs("\npart: 1\ndesc: Trace: ", out);
    mvz_export_put_clean(out, x->trace_path);
    fputc('\n', out);
}

void mvz_export_speedscope_head(struct mvz_json *j, const struct mvz_export *x)
{
    mvz_json_begin_object(j);
    mvz_json_put_string(j, "$schema", "https://www.speedscope.app/file-format-schema.json");
    mvz_json_put_string(j, "name", x->trace_path);
    mvz_json_put_string(j, "exporter", "memviz " MVZ_VERSION);
    mvz_json_put_uint(j, "activeProfileIndex", 0);
}

void mvz_export_callgrind_events(FILE *out, const char *const (*events)[2], int nevents)
{
    fputs("positions: line\n", out);
    for (int e = 0; e < nevents; e++)
        fprintf(out, "event: %s : %s\n", events[e][0], events[e][1]);
    fputs("events:", out);
    for (int e = 0; e < nevents; e++)
        fprintf(out, " %s", events[e][0]);
    fputc('\n', out);
}
