/*
 * collapsed.c - `memviz export --format collapsed`: folded stacks, the input
 * of flamegraph.pl, inferno and speedscope. One line per distinct symbolized
 * stack, "outermost;...;innermost VALUE", where VALUE is the chosen cost
 * (--cost) summed over the sites whose stacks fold to the same line.
 * Lines are sorted, so the output of one trace is always the same.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "export/export.h"
#include "util/strtab.h"
#include "util/sort.h"

/* Deep enough for the 1024-frame depth cap plus inlined frames. */
#define FRAMES_MAX 4096

struct folded {
    struct mvz_strtab lines; /* folded stack -> id */
    uint64_t *values;        /* by id */
    size_t values_cap;
    char *buf; /* the line being built */
    size_t len, cap;
    struct mvz_frame *frames;
};

static int buf_put(struct folded *f, const char *s, size_t n)
{
    if (f->len + n + 1 > f->cap) {
        size_t cap = f->cap ? f->cap : 256;
        while (f->len + n + 1 > cap)
            cap *= 2;
        char *b = realloc(f->buf, cap);
        if (!b)
            return -1;
        f->buf = b;
        f->cap = cap;
    }
    memcpy(f->buf + f->len, s, n);
    f->len += n;
    f->buf[f->len] = '\0';
    return 0;
}

/* A frame name must not contain the separators of the format: ';' splits
 * frames and a newline ends the record, so they (and other control bytes)
 * are replaced; an empty name would make an empty frame. */
static int put_name(struct folded *f, const char *name)
{
    if (!*name)
        name = "??";
    size_t start = f->len;
    if (buf_put(f, name, strlen(name)) < 0)
        return -1;
    for (char *c = f->buf + start; *c; c++) {
        if (*c == ';')
            *c = ':';
        else if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = ' ';
    }
    return 0;
}

/* Builds the folded line of one stack in f->buf, outermost frame first. */
static int fold_stack(struct folded *f, const struct mvz_export *x, uint32_t stack)
{
    size_t n = mvz_export_stack(x, stack, f->frames, FRAMES_MAX);
    char name[512];
    f->len = 0;
    for (size_t i = n; i-- > 0;) {
        if (put_name(f, mvz_export_frame_name(&f->frames[i], name, sizeof(name))) < 0)
            return -1;
        if (i > 0 && buf_put(f, ";", 1) < 0)
            return -1;
    }
    return 0;
}

/* Adds value to the line in f->buf (merging stacks that fold alike). */
static int add_line(struct folded *f, uint64_t value)
{
    uint32_t id = mvz_strtab_intern(&f->lines, f->buf);
    if (!id)
        return -1;
    if (id >= f->values_cap) {
        size_t cap = f->values_cap ? f->values_cap * 2 : 256;
        while (cap <= id)
            cap *= 2;
        uint64_t *v = realloc(f->values, cap * sizeof(*v));
        if (!v)
            return -1;
        memset(v + f->values_cap, 0, (cap - f->values_cap) * sizeof(*v));
        f->values = v;
        f->values_cap = cap;
    }
    f->values[id] += value;
    return 0;
}

static const struct mvz_strtab *sort_lines;
static int by_line(const void *a, const void *b)
{
    return strcmp(mvz_strtab_get(sort_lines, *(const uint32_t *)a),
                  mvz_strtab_get(sort_lines, *(const uint32_t *)b));
}

static int write_lines(struct folded *f, FILE *out)
{
    size_t n = f->lines.n;
    uint32_t *order = malloc((n ? n : 1) * sizeof(*order));
    if (!order)
        return -1;
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)(i + 1);
    sort_lines = &f->lines;
    mvz_sort(order, n, sizeof(*order), by_line);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s %" PRIu64 "\n", mvz_strtab_get(&f->lines, order[i]), f->values[order[i]]);
    free(order);
    return 0;
}

static int fold_sites(struct folded *f, const struct mvz_export *x)
{
    uint64_t other = 0;
    /* Sites are indexed by stack id; the unused ones cost nothing. */
    for (size_t i = 0; i < x->p->sites_cap; i++) {
        uint64_t v = mvz_site_cost(&x->p->sites[i], x->cost);
        if (v == 0)
            continue;
        if (!mvz_export_site_shown(x, &x->p->sites[i], x->cost)) {
            other += v;
            continue;
        }
        if (fold_stack(f, x, (uint32_t)i) < 0 || add_line(f, v) < 0)
            return -1;
    }
    if (other) {
        f->len = 0;
        if (buf_put(f, MVZ_EXPORT_OTHER_SITES, strlen(MVZ_EXPORT_OTHER_SITES)) < 0 ||
            add_line(f, other) < 0)
            return -1;
    }
    return 0;
}

int mvz_export_collapsed(struct mvz_export *x)
{
    struct folded f = {0};
    int rc = -1;
    f.frames = malloc(FRAMES_MAX * sizeof(*f.frames));
    if (f.frames && fold_sites(&f, x) == 0 && write_lines(&f, x->out) == 0)
        rc = 0;
    else
        mvz_error("export: out of memory");
    mvz_strtab_free(&f.lines);
    free(f.values);
    free(f.buf);
    free(f.frames);
    return rc;
}
