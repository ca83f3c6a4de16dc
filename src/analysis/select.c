/*
 * select.c - site filters and leak suppressions; see select.h.
 */
#include "analysis/select.h"
#include "util/fmt.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Known one-time allocations that live until exit by design. Each must be
 * narrow enough never to hide a leak of the program's own. */
static const struct {
    const char *pattern, *also;
} builtin[] = {
    /* thread descriptors' TLS vectors: glibc caches them for reuse */
    {"_dl_allocate_tls", NULL},
    /* stdio buffers, freed only by __libc_freeres */
    {"_IO_file_doallocate", NULL},
    /* dlopen's lookup tables for _dl_find_object */
    {"_dl_find_object_update", NULL},
    /* libstdc++'s emergency exception pool, made by its own static
     * initializer: allocated in libstdc++, called from ld.so's call_init */
    {"libstdc++.so", "^call_init$"},
};

static int push_str(char ***v, size_t *n, const char *s)
{
    char **nv = realloc(*v, (*n + 1) * sizeof(*nv));
    if (!nv)
        return -1;
    *v = nv;
    if (!(nv[*n] = strdup(s)))
        return -1;
    (*n)++;
    return 0;
}

int mvz_select_add_filter(struct mvz_select *s, const char *glob, int exclude)
{
    return exclude ? push_str(&s->excludes, &s->nexcludes, glob)
                   : push_str(&s->filters, &s->nfilters, glob);
}

static int add_suppression(struct mvz_select *s, const char *pattern, const char *also,
                           const char *origin, unsigned line)
{
    struct mvz_suppression *v = realloc(s->supp, (s->nsupp + 1) * sizeof(*v));
    if (!v)
        return -1;
    s->supp = v;
    struct mvz_suppression *r = &v[s->nsupp];
    memset(r, 0, sizeof(*r));
    r->pattern = strdup(pattern);
    r->also = also ? strdup(also) : NULL;
    r->origin = origin;
    r->line = line;
    if (!r->pattern || (also && !r->also))
        return -1;
    s->nsupp++;
    return 0;
}

int mvz_select_add_builtin_suppressions(struct mvz_select *s)
{
    for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
        if (add_suppression(s, builtin[i].pattern, builtin[i].also, "built-in", 0) < 0)
            return -1;
    return 0;
}

static char *trim(char *l)
{
    while (*l == ' ' || *l == '\t')
        l++;
    size_t n = strlen(l);
    while (n && (l[n - 1] == '\n' || l[n - 1] == '\r' || l[n - 1] == ' ' || l[n - 1] == '\t'))
        l[--n] = 0;
    return l;
}

/* LSan's file format: one "type:template" per line, '#' comments. Only
 * "leak:" concerns memviz; other types (from a shared file) are skipped. */
int mvz_select_load_suppressions(struct mvz_select *s, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read suppressions %s: %s", path, strerror(errno));
        return -1;
    }
    char buf[4096];
    unsigned line = 0;
    int rc = 0;
    while (rc == 0 && fgets(buf, sizeof(buf), f)) {
        line++;
        char *l = trim(buf), *colon = strchr(l, ':');
        if (!*l || *l == '#')
            continue;
        if (!colon || colon == l) {
            snprintf(err, errlen, "%s:%u: expected 'leak:PATTERN', got '%.60s'", path, line, l);
            rc = -1;
        } else if (!strncmp(l, "leak:", 5)) {
            if (!*trim(colon + 1)) {
                snprintf(err, errlen, "%s:%u: empty pattern", path, line);
                rc = -1;
            } else if (add_suppression(s, trim(colon + 1), NULL, path, line) < 0) {
                snprintf(err, errlen, "out of memory reading %s", path);
                rc = -1;
            }
        }
    }
    fclose(f);
    return rc;
}

void mvz_select_free(struct mvz_select *s)
{
    for (size_t i = 0; i < s->nfilters; i++)
        free(s->filters[i]);
    for (size_t i = 0; i < s->nexcludes; i++)
        free(s->excludes[i]);
    for (size_t i = 0; i < s->nsupp; i++) {
        free(s->supp[i].pattern);
        free(s->supp[i].also);
        free(s->supp[i].memo[0]);
        free(s->supp[i].memo[1]);
    }
    free(s->filters);
    free(s->excludes);
    free(s->supp);
    memset(s, 0, sizeof(*s));
}

static int frame_globbed(const struct mvz_frame *f, const char *glob)
{
    return !fnmatch(glob, f->function, 0) || (f->file && !fnmatch(glob, f->file, 0)) ||
           (f->module &&
            (!fnmatch(glob, f->module, 0) || !fnmatch(glob, mvz_base_name(f->module), 0)));
}

static int any_frame_globbed(const struct mvz_frame *f, size_t n, char **globs, size_t nglobs)
{
    for (size_t i = 0; i < n; i++)
        for (size_t g = 0; g < nglobs; g++)
            if (frame_globbed(&f[i], globs[g]))
                return 1;
    return 0;
}

int mvz_select_keep(const struct mvz_select *s, const struct mvz_frame *f, size_t n)
{
    if (s->nfilters && !any_frame_globbed(f, n, s->filters, s->nfilters))
        return 0;
    return !any_frame_globbed(f, n, s->excludes, s->nexcludes);
}

/* Does template t match text [s, s+n)? t has no anchors left; '*' splits. */
static int pieces_match(const char *t, const char *s, int anchor_start, int anchor_end)
{
    size_t slen = strlen(s);
    const char *end = s + slen;
    int first = 1;
    while (1) {
        const char *star = strchr(t, '*');
        size_t plen = star ? (size_t)(star - t) : strlen(t);
        if (!star && anchor_end) { /* the last piece must end the string */
            if ((size_t)(end - s) < plen || strncmp(end - plen, t, plen))
                return 0;
            return !(first && anchor_start) || (size_t)(end - s) == plen;
        }
        if (plen) {
            const char *hit = s;
            if (first && anchor_start) {
                if (strncmp(s, t, plen))
                    return 0;
            } else if (!(hit = memmem(s, (size_t)(end - s), t, plen))) {
                return 0;
            }
            s = hit + plen;
        }
        first = 0;
        if (!star)
            return 1;
        t = star + 1;
    }
}

/* A template split once into its anchors and body, so that matching it
 * against thousands of frames copies nothing. */
struct parsed_template {
    char body[1024];
    int anchor_start, anchor_end, empty;
};

static void parse_template(const char *tmpl, struct parsed_template *p)
{
    size_t n = strlen(tmpl);
    p->empty = n == 0;
    p->anchor_start = n > 0 && tmpl[0] == '^';
    p->anchor_end = n > 1 && tmpl[n - 1] == '$';
    snprintf(p->body, sizeof(p->body), "%.*s",
             (int)(n - (size_t)p->anchor_start - (size_t)p->anchor_end), tmpl + p->anchor_start);
}

static int parsed_match(const struct parsed_template *p, const char *str)
{
    return str && !p->empty && pieces_match(p->body, str, p->anchor_start, p->anchor_end);
}

int mvz_template_match(const char *tmpl, const char *str)
{
    struct parsed_template p;
    parse_template(tmpl, &p);
    return parsed_match(&p, str);
}

/* A rule's template, parsed once, and its results by string address: a
 * report matches every rule against every frame of every leaking site, and
 * most frames repeat (their strings are interned by the symbolizer). */
#define MEMO_SLOTS 8192
struct mvz_match_memo {
    struct parsed_template t;
    const char *key[MEMO_SLOTS];
    uint8_t val[MEMO_SLOTS];
};

static struct mvz_match_memo *memo_for(struct mvz_match_memo **m, const char *tmpl)
{
    if (!*m && (*m = calloc(1, sizeof(**m))))
        parse_template(tmpl, &(*m)->t);
    return *m;
}

static int memo_match(struct mvz_match_memo *m, const char *str)
{
    if (!str)
        return 0;
    size_t h = (size_t)(((uintptr_t)str >> 3) * 0x9E3779B97F4A7C15ull >> 51) % MEMO_SLOTS;
    if (m->key[h] != str) {
        m->key[h] = str;
        m->val[h] = (uint8_t)parsed_match(&m->t, str);
    }
    return m->val[h];
}

static int frames_match(struct mvz_match_memo *m, const struct mvz_frame *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memo_match(m, f[i].function) || memo_match(m, f[i].file) || memo_match(m, f[i].module))
            return 1;
    return 0;
}

/* A rule's parsed templates with their memos (also's is NULL for a
 * one-template rule); -1 when out of memory. */
static int rule_memos(struct mvz_suppression *r, struct mvz_match_memo **pat,
                      struct mvz_match_memo **also)
{
    *pat = memo_for(&r->memo[0], r->pattern);
    *also = r->also ? memo_for(&r->memo[1], r->also) : NULL;
    return !*pat || (r->also && !*also) ? -1 : 0;
}

struct mvz_suppression *mvz_select_suppression(struct mvz_select *s, const struct mvz_frame *f,
                                               size_t n)
{
    for (size_t i = 0; i < s->nsupp; i++) {
        struct mvz_suppression *r = &s->supp[i];
        struct mvz_match_memo *pat, *also;
        if (rule_memos(r, &pat, &also) < 0)
            continue; /* out of memory: the rule cannot be applied */
        if (r->also ? n >= 2 && frames_match(pat, f, 1) && frames_match(also, f + 1, 1)
                    : frames_match(pat, f, n))
            return r;
    }
    return NULL;
}

int mvz_select_supp_bits(struct mvz_select *s, const struct mvz_frame *f, size_t n,
                         struct mvz_supp_bits *out)
{
    memset(out, 0, sizeof(*out));
    if (s->nsupp > MVZ_SUPP_BITS)
        return -1;
    out->nframes = (uint32_t)n;
    for (size_t i = 0; i < s->nsupp; i++) {
        struct mvz_suppression *r = &s->supp[i];
        struct mvz_match_memo *pat, *also;
        if (rule_memos(r, &pat, &also) < 0)
            continue; /* out of memory: the rule cannot be applied */
        uint64_t bit = 1ull << i;
        if (frames_match(pat, f, n))
            out->any |= bit;
        if (n >= 1 && frames_match(pat, f, 1))
            out->p0 |= bit;
        if (also && n >= 1 && frames_match(also, f, 1))
            out->a0 |= bit;
        if (also && n >= 2 && frames_match(also, f + 1, 1))
            out->a1 |= bit;
    }
    return 0;
}

/* The rules whose two-frame condition holds: the pattern on the stack's
 * first frame and `also` on its second, wherever the addresses put them. */
static uint64_t two_frame_bits(const struct mvz_supp_bits *b, size_t n)
{
    size_t j = 0;
    while (j < n && !b[j].nframes)
        j++;
    if (j == n)
        return 0;
    if (b[j].nframes >= 2)
        return b[j].p0 & b[j].a1;
    size_t k = j + 1;
    while (k < n && !b[k].nframes)
        k++;
    return k < n ? b[j].p0 & b[k].a0 : 0;
}

struct mvz_suppression *mvz_select_suppression_bits(const struct mvz_select *s,
                                                    const struct mvz_supp_bits *b, size_t n)
{
    uint64_t any = 0;
    for (size_t k = 0; k < n; k++)
        any |= b[k].any;
    uint64_t two = two_frame_bits(b, n);
    for (size_t i = 0; i < s->nsupp && i < MVZ_SUPP_BITS; i++)
        if (((s->supp[i].also ? two : any) >> i) & 1)
            return &s->supp[i];
    return NULL;
}
