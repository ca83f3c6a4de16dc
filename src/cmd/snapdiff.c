/*
 * snapdiff.c - `memviz diff --snapshots`: two heap snapshots compared, of
 * one run or of two. Per allocation site: live bytes and blocks in each,
 * and, within one run (where a block keeps its identity: its thread and
 * serial), the blocks that are new and those freed in between; per root
 * and per site, the change of retained size (what freeing it would free:
 * its dominator subtree, analysis/retain.h).
 *
 * The two snapshots are read one after the other, so memory is one graph
 * plus the first one's block identities and per-site figures.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/retain.h"
#include "analysis/roots.h"
#include "cmd/cmd.h"
#include "cmd/snapshots.h"
#include "trace/format.h"
#include "util/fmt.h"
#include "util/json.h"
#include "util/sort.h"
#include "util/strtab.h"

#define KEY_MAX 65536

/* Figures of one site or root, [0] the base snapshot's, [1] the new one's. */
struct row {
    uint64_t live[2], live_n[2], retained[2], retained_n[2];
    uint64_t born, born_n, freed, freed_n; /* same run only */
};

/* A block of the base snapshot, by identity. */
struct ident {
    uint64_t tid, serial;
    uint32_t site;
    uint64_t size;
    uint8_t seen; /* in the new snapshot too */
};

struct snapdiff {
    const struct snapdiff_opts *o;
    int same_run;
    struct mvz_strtab site_keys, root_keys;
    char **root_labels; /* by root key id */
    struct row *sites, *roots;
    size_t sites_cap, roots_cap;
    struct ident *base; /* sorted by (tid, serial) */
    size_t nbase;
    struct {
        char *path, *name;
        uint64_t ts, blocks, bytes;
    } side[2];
    char key[KEY_MAX];
};

static int grow_rows(struct row **v, size_t *cap, size_t need)
{
    if (need < *cap)
        return 0;
    size_t n = *cap ? *cap : 256;
    while (n <= need)
        n *= 2;
    struct row *p = realloc(*v, n * sizeof(*p));
    if (!p)
        return -1;
    memset(p + *cap, 0, (n - *cap) * sizeof(*p));
    *v = p;
    *cap = n;
    return 0;
}

/* One frame per line, innermost first: "function\tfile\tline\tmodule".
 * Across runs lines are left out, so that two builds still match. */
static uint32_t site_id(struct snapdiff *d, struct snap_ctx *c, uint32_t stack)
{
    size_t n = mvz_symbols_stack(c->sym, stack, c->frames, SNAP_MAX_FRAMES), len = 0;
    d->key[0] = 0;
    for (size_t i = 0; i < n && len + 1 < KEY_MAX; i++) {
        const struct mvz_frame *f = &c->frames[i];
        int w = snprintf(d->key + len, KEY_MAX - len, "%s%s\t%s\t%u\t%s", i ? "\n" : "",
                         f->function, d->same_run && f->file ? f->file : "",
                         d->same_run ? f->line : 0, f->module ? mvz_base_name(f->module) : "");
        if (w < 0)
            break;
        len += (size_t)w < KEY_MAX - len ? (size_t)w : KEY_MAX - len - 1;
    }
    uint32_t id = mvz_strtab_intern(&d->site_keys, d->key);
    return id && grow_rows(&d->sites, &d->sites_cap, id) == 0 ? id : 0;
}

static int by_ident(const void *a, const void *b)
{
    const struct ident *p = a, *q = b;
    if (p->tid != q->tid)
        return p->tid < q->tid ? -1 : 1;
    return p->serial < q->serial ? -1 : p->serial > q->serial;
}

static struct ident *find_ident(struct snapdiff *d, uint64_t tid, uint64_t serial)
{
    size_t lo = 0, hi = d->nbase;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct ident *m = &d->base[mid];
        if (m->tid == tid && m->serial == serial)
            return &d->base[mid];
        if (m->tid < tid || (m->tid == tid && m->serial < serial))
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The base's block identities, or the new blocks and the freed ones. */
static int track_blocks(struct snapdiff *d, struct snap_ctx *c, int k, const uint32_t *site_of)
{
    const struct mvz_snapshot *s = &c->snap;
    if (k == 0) {
        d->base = malloc((s->nblocks ? s->nblocks : 1) * sizeof(*d->base));
        if (!d->base)
            return -1;
        for (size_t b = 0; b < s->nblocks; b++)
            d->base[b] = (struct ident){s->blocks[b].tid, s->blocks[b].serial,
                                        site_of[s->blocks[b].stack], s->blocks[b].size, 0};
        d->nbase = s->nblocks;
        mvz_sort(d->base, d->nbase, sizeof(*d->base), by_ident);
        return 0;
    }
    for (size_t b = 0; b < s->nblocks; b++) {
        struct ident *id = find_ident(d, s->blocks[b].tid, s->blocks[b].serial);
        if (id && id->size == s->blocks[b].size) {
            id->seen = 1;
            continue;
        }
        struct row *r = &d->sites[site_of[s->blocks[b].stack]];
        r->born += s->blocks[b].size;
        r->born_n++;
    }
    for (size_t i = 0; i < d->nbase; i++)
        if (!d->base[i].seen) {
            d->sites[d->base[i].site].freed += d->base[i].size;
            d->sites[d->base[i].site].freed_n++;
        }
    return 0;
}

static int add_roots(struct snapdiff *d, struct snap_ctx *c, int k, const struct mvz_root_groups *g,
                     const struct mvz_retain *r)
{
    for (uint32_t i = 0; i < g->n; i++) {
        const struct mvz_root_info *ri = &g->roots[i];
        char label[600];
        const char *key = mvz_strtab_get(&g->keys, ri->key);
        /* the main thread has another tid in another run */
        if (ri->kind == MVZ_ROOT_STACK || ri->kind == MVZ_ROOT_TLS) {
            snprintf(label, sizeof(label), "t %d %s", ri->kind,
                     ri->tid == (uint32_t)c->t.pid ? "main" : key);
            key = label;
        }
        size_t cap = d->roots_cap;
        uint32_t id = mvz_strtab_intern(&d->root_keys, key);
        if (!id || grow_rows(&d->roots, &d->roots_cap, id) < 0)
            return -1;
        if (d->roots_cap != cap) {
            char **v = realloc(d->root_labels, d->roots_cap * sizeof(*v));
            if (!v)
                return -1;
            memset(v + cap, 0, (d->roots_cap - cap) * sizeof(*v));
            d->root_labels = v;
        }
        if (!d->root_labels[id]) {
            mvz_root_label(ri, label, sizeof(label));
            if (ri->tid == (uint32_t)c->t.pid && ri->kind != MVZ_ROOT_GLOBAL &&
                ri->kind != MVZ_ROOT_MAPPING && ri->kind != MVZ_ROOT_REGISTERED)
                snprintf(label, sizeof(label), "%s of the main thread%s",
                         mvz_root_kind_name(ri->kind),
                         ri->kind == MVZ_ROOT_STACK ? " (and its registers)" : "");
            if (!(d->root_labels[id] = strdup(label)))
                return -1;
        }
        d->roots[id].retained[k] += r->retained[r->nblocks + i];
        d->roots[id].retained_n[k] += r->retained_n[r->nblocks + i];
    }
    return 0;
}

/* Per site: live and retained; mvz_retain_by_stack gives the retained. */
static int add_sites(struct snapdiff *d, struct snap_ctx *c, int k, const struct mvz_retain *r,
                     uint32_t **site_of_out)
{
    const struct mvz_snapshot *s = &c->snap;
    uint32_t ns = 0;
    for (size_t b = 0; b < s->nblocks; b++)
        ns = s->blocks[b].stack + 1 > ns ? s->blocks[b].stack + 1 : ns;
    uint32_t *site_of = calloc(ns ? ns : 1, sizeof(*site_of));
    uint64_t *rb = calloc(ns ? ns : 1, sizeof(*rb)), *rn = calloc(ns ? ns : 1, sizeof(*rn));
    int rc = -1;
    if (!site_of || !rb || !rn || mvz_retain_by_stack(r, rb, rn, ns) < 0)
        goto out;
    for (size_t b = 0; b < s->nblocks; b++) {
        uint32_t st = s->blocks[b].stack;
        if (!site_of[st] && !(site_of[st] = site_id(d, c, st)))
            goto out;
        d->sites[site_of[st]].live[k] += s->blocks[b].size;
        d->sites[site_of[st]].live_n[k]++;
        d->side[k].bytes += s->blocks[b].size;
    }
    for (uint32_t st = 0; st < ns; st++)
        if (site_of[st]) { /* a site's stacks may be several when lines are left out */
            d->sites[site_of[st]].retained[k] += rb[st];
            d->sites[site_of[st]].retained_n[k] += rn[st];
        }
    *site_of_out = site_of;
    site_of = NULL;
    rc = 0;
out:
    free(site_of);
    free(rb);
    free(rn);
    return rc;
}

static int add_side(struct snapdiff *d, int k, const char *path, const char *want)
{
    static struct snap_ctx c;
    struct snap_retention ret = {0};
    uint32_t *site_of = NULL;
    int rc = -1;
    memset(&c, 0, sizeof(c));
    if (snap_open(&c, path, want) < 0)
        goto out;
    d->side[k].path = strdup(path);
    d->side[k].name = strdup(c.snap.info.name);
    d->side[k].ts = c.snap.info.ts;
    d->side[k].blocks = c.snap.nblocks;
    if (snap_retention_build(&c, &ret) < 0)
        goto out;
    if (!d->side[k].path || !d->side[k].name || add_sites(d, &c, k, &ret.r, &site_of) < 0 ||
        add_roots(d, &c, k, &ret.g, &ret.r) < 0 ||
        (d->same_run && track_blocks(d, &c, k, site_of) < 0)) {
        mvz_error("out of memory comparing snapshots");
        goto out;
    }
    rc = 0;
out:
    free(site_of);
    snap_retention_free(&ret);
    snap_close(&c);
    return rc;
}

/* ---- output ---- */
static int64_t change(const uint64_t v[2])
{
    return (int64_t)(v[1] - v[0]);
}

static const struct row *sort_rows;
static int by_change(const void *a, const void *b, const uint64_t *(*field)(const struct row *))
{
    uint32_t p = *(const uint32_t *)a, q = *(const uint32_t *)b;
    int64_t cp = change(field(&sort_rows[p])), cq = change(field(&sort_rows[q]));
    uint64_t ap = cp < 0 ? (uint64_t)-cp : (uint64_t)cp, aq = cq < 0 ? (uint64_t)-cq : (uint64_t)cq;
    if (ap != aq)
        return ap > aq ? -1 : 1;
    if (cp != cq)
        return cp > cq ? -1 : 1;
    return p < q ? -1 : p > q;
}
static const uint64_t *live_of(const struct row *r)
{
    return r->live;
}
static const uint64_t *retained_of(const struct row *r)
{
    return r->retained;
}
static int by_live_change(const void *a, const void *b)
{
    return by_change(a, b, live_of);
}
static int by_retained_change(const void *a, const void *b)
{
    return by_change(a, b, retained_of);
}

/* Ids 1..n of rows, largest change first (growth before shrinking). */
static uint32_t *ranked(const struct row *rows, size_t n, int (*cmp)(const void *, const void *))
{
    uint32_t *v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = (uint32_t)(i + 1);
    sort_rows = rows;
    mvz_sort(v, n, sizeof(*v), cmp);
    return v;
}

static const char *signed_bytes(int64_t v, char *buf, size_t cap)
{
    char a[32];
    snprintf(buf, cap, "%s%s", v < 0 ? "-" : "+",
             mvz_fmt_bytes(v < 0 ? (uint64_t)-v : (uint64_t)v, a, sizeof(a)));
    return buf;
}

static void print_frames(FILE *out, const char *key)
{
    char line[1200];
    for (const char *p = key; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(line, sizeof(line), "%.*s", (int)n, p);
        char *f[4] = {line, "", "", ""};
        for (int i = 1; i < 4 && f[i - 1]; i++) {
            char *t = strchr(f[i - 1], '\t');
            if (!t)
                break;
            *t = 0;
            f[i] = t + 1;
        }
        fprintf(out, "      %s", f[0]);
        if (*f[1])
            fprintf(out, "  %s:%s", f[1], f[2]);
        if (*f[3])
            fprintf(out, "  [%s]", f[3]);
        fputc('\n', out);
        p += n + (e ? 1 : 0);
    }
}

static void print_header(struct snapdiff *d, FILE *out)
{
    char a[32], b[32], c[32], e[32], f[32];
    for (int k = 0; k < 2; k++)
        fprintf(out, "%s \"%s\" of %s, at %s: %s in %s block(s)\n",
                k ? "new: " : "base:", d->side[k].name, d->side[k].path,
                mvz_fmt_duration(d->side[k].ts, a, sizeof(a)),
                mvz_fmt_bytes(d->side[k].bytes, b, sizeof(b)),
                mvz_fmt_count(d->side[k].blocks, c, sizeof(c)));
    int64_t db = (int64_t)(d->side[1].bytes - d->side[0].bytes);
    int64_t dn = (int64_t)(d->side[1].blocks - d->side[0].blocks);
    fprintf(out, "change: %s, %s%" PRId64 " block(s)", signed_bytes(db, a, sizeof(a)),
            dn < 0 ? "" : "+", dn);
    if (d->same_run) {
        uint64_t nb = 0, nn = 0, fb = 0, fn = 0;
        for (size_t i = 1; i <= d->site_keys.n; i++) {
            nb += d->sites[i].born;
            nn += d->sites[i].born_n;
            fb += d->sites[i].freed;
            fn += d->sites[i].freed_n;
        }
        fprintf(out, ": %s in %s new block(s), %s in %s freed", mvz_fmt_bytes(nb, b, sizeof(b)),
                mvz_fmt_count(nn, c, sizeof(c)), mvz_fmt_bytes(fb, e, sizeof(e)),
                mvz_fmt_count(fn, f, sizeof(f)));
    } else {
        fprintf(out, " (two runs: blocks have no identity across them, so new and freed are "
                     "not told apart)");
    }
    fputc('\n', out);
}

static void print_roots(struct snapdiff *d, FILE *out)
{
    uint32_t *v = ranked(d->roots, d->root_keys.n, by_retained_change);
    char a[32], b[32], c[32];
    fprintf(out, "\nRoots by change of retained size (what freeing the root would free):\n");
    size_t shown = 0;
    for (size_t i = 0; v && i < d->root_keys.n && shown < d->o->top; i++) {
        const struct row *r = &d->roots[v[i]];
        if (!change(r->retained))
            break;
        fprintf(out, "  %10s  %s -> %s  %s\n", signed_bytes(change(r->retained), a, sizeof(a)),
                mvz_fmt_bytes(r->retained[0], b, sizeof(b)),
                mvz_fmt_bytes(r->retained[1], c, sizeof(c)), d->root_labels[v[i]]);
        shown++;
    }
    if (!shown)
        fprintf(out, "  (no change)\n");
    free(v);
}

static void print_sites(struct snapdiff *d, FILE *out)
{
    uint32_t *v = ranked(d->sites, d->site_keys.n, by_live_change);
    char a[32], b[32], c[32], e[32], f[32];
    fprintf(out, "\nAllocation sites by change of live bytes:\n");
    size_t shown = 0;
    for (size_t i = 0; v && i < d->site_keys.n && shown < d->o->top; i++) {
        const struct row *r = &d->sites[v[i]];
        if (!change(r->live) && !r->born_n && !r->freed_n)
            continue;
        fprintf(out, "  #%zu  %s: %s -> %s live", ++shown,
                signed_bytes(change(r->live), a, sizeof(a)),
                mvz_fmt_bytes(r->live[0], b, sizeof(b)), mvz_fmt_bytes(r->live[1], c, sizeof(c)));
        if (d->same_run)
            fprintf(out, "; %s new, %s freed", mvz_fmt_count(r->born_n, e, sizeof(e)),
                    mvz_fmt_count(r->freed_n, f, sizeof(f)));
        fprintf(out, "; retained %s -> %s\n", mvz_fmt_bytes(r->retained[0], b, sizeof(b)),
                mvz_fmt_bytes(r->retained[1], c, sizeof(c)));
        print_frames(out, mvz_strtab_get(&d->site_keys, v[i]));
    }
    if (!shown)
        fprintf(out, "  (no change)\n");
    free(v);
}

static void kv_u(struct mvz_json *j, const char *k, uint64_t v)
{
    mvz_json_key(j, k);
    mvz_json_uint(j, v);
}

static void kv_pair(struct mvz_json *j, const char *k, const uint64_t v[2])
{
    mvz_json_key(j, k);
    mvz_json_begin_array(j);
    mvz_json_uint(j, v[0]);
    mvz_json_uint(j, v[1]);
    mvz_json_end_array(j);
}

static void json_frames(struct mvz_json *j, const char *key)
{
    char line[1200];
    mvz_json_key(j, "frames");
    mvz_json_begin_array(j);
    for (const char *p = key; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(line, sizeof(line), "%.*s", (int)n, p);
        char *f[4] = {line, "", "0", ""};
        for (int i = 1; i < 4; i++) {
            char *t = strchr(f[i - 1], '\t');
            if (!t)
                break;
            *t = 0;
            f[i] = t + 1;
        }
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "function", f[0]);
        mvz_json_put_string(j, "file", *f[1] ? f[1] : NULL);
        kv_u(j, "line", strtoull(f[2], NULL, 10));
        mvz_json_put_string(j, "module", *f[3] ? f[3] : NULL);
        mvz_json_end_object(j);
        p += n + (e ? 1 : 0);
    }
    mvz_json_end_array(j);
}

static void json_sides(struct snapdiff *d, struct mvz_json *j)
{
    static const char *const keys[2] = {"base", "new"};
    for (int k = 0; k < 2; k++) {
        mvz_json_key(j, keys[k]);
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "trace", d->side[k].path);
        mvz_json_put_string(j, "snapshot", d->side[k].name);
        kv_u(j, "time_ns", d->side[k].ts);
        kv_u(j, "live_bytes", d->side[k].bytes);
        kv_u(j, "live_blocks", d->side[k].blocks);
        mvz_json_end_object(j);
    }
}

static void json_rows(struct snapdiff *d, struct mvz_json *j, int sites)
{
    size_t n = sites ? d->site_keys.n : d->root_keys.n;
    const struct row *rows = sites ? d->sites : d->roots;
    uint32_t *v = ranked(rows, n, sites ? by_live_change : by_retained_change);
    mvz_json_key(j, sites ? "sites" : "roots");
    mvz_json_begin_array(j);
    size_t shown = 0;
    for (size_t i = 0; v && i < n && shown < d->o->top; i++) {
        const struct row *r = &rows[v[i]];
        if (!change(r->live) && !change(r->retained) && !r->born_n && !r->freed_n)
            continue;
        shown++;
        mvz_json_begin_object(j);
        if (sites) {
            kv_pair(j, "live_bytes", r->live);
            kv_pair(j, "live_blocks", r->live_n);
        } else {
            mvz_json_put_string(j, "name", d->root_labels[v[i]]);
        }
        kv_pair(j, "retained_bytes", r->retained);
        kv_pair(j, "retained_blocks", r->retained_n);
        if (sites && d->same_run) {
            kv_u(j, "new_bytes", r->born);
            kv_u(j, "new_blocks", r->born_n);
            kv_u(j, "freed_bytes", r->freed);
            kv_u(j, "freed_blocks", r->freed_n);
        }
        if (sites)
            json_frames(j, mvz_strtab_get(&d->site_keys, v[i]));
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
    free(v);
}

static void print_json(struct snapdiff *d, FILE *out)
{
    struct mvz_json j;
    mvz_json_init(&j, out);
    mvz_json_begin_object(&j);
    kv_u(&j, "memviz_snapshot_diff", 1);
    mvz_json_key(&j, "same_run");
    mvz_json_bool(&j, d->same_run);
    json_sides(d, &j);
    json_rows(d, &j, 0);
    json_rows(d, &j, 1);
    mvz_json_end_object(&j);
    fputc('\n', out);
}

static void snapdiff_free(struct snapdiff *d)
{
    mvz_strtab_free(&d->site_keys);
    mvz_strtab_free(&d->root_keys);
    for (size_t i = 0; i < d->roots_cap; i++)
        free(d->root_labels ? d->root_labels[i] : NULL);
    free(d->root_labels);
    free(d->sites);
    free(d->roots);
    free(d->base);
    for (int k = 0; k < 2; k++) {
        free(d->side[k].path);
        free(d->side[k].name);
    }
}

/* With one trace and no names: its last two complete snapshots. */
static int pick_two(const char *path, const char **a, const char **b, char **own)
{
    char err[512];
    struct mvz_snap_info *list = NULL;
    size_t n = 0, found = 0;
    if (mvz_snap_list(path, &list, &n, err, sizeof(err)) < 0) {
        mvz_error("%s", err);
        return -1;
    }
    const char *names[2] = {NULL, NULL};
    for (size_t i = n; i-- > 0 && found < 2;)
        if (list[i].complete)
            names[found++] = list[i].name;
    if (found < 2) {
        mvz_error("%s has %s complete heap snapshot: a comparison needs two", path,
                  found ? "one" : "no");
        mvz_snap_infos_free(list, n);
        return -1;
    }
    own[0] = strdup(names[1]);
    own[1] = strdup(names[0]);
    mvz_snap_infos_free(list, n);
    if (!own[0] || !own[1]) {
        mvz_error("out of memory");
        return -1;
    }
    *a = *a ? *a : own[0];
    *b = *b ? *b : own[1];
    return 0;
}

int snap_diff(const struct snapdiff_opts *o, const char *base, const char *new_path)
{
    static struct snapdiff d;
    memset(&d, 0, sizeof(d));
    d.o = o;
    const char *a = o->base_name, *b = o->new_name;
    char *own[2] = {NULL, NULL};
    int rc = 1;
    d.same_run = !new_path || mvz_same_file(base, new_path);
    if (!new_path && (!a || !b) && pick_two(base, &a, &b, own) < 0)
        goto out;
    if (add_side(&d, 0, base, a) < 0 || add_side(&d, 1, new_path ? new_path : base, b) < 0)
        goto out;
    if (o->json) {
        print_json(&d, stdout);
    } else {
        print_header(&d, stdout);
        print_roots(&d, stdout);
        print_sites(&d, stdout);
    }
    rc = 0;
out:
    free(own[0]);
    free(own[1]);
    snapdiff_free(&d);
    return rc;
}
