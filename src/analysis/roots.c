/*
 * roots.c - a snapshot's root words grouped into named roots (roots.h).
 * Globals group by variable, so that a table's hundred words are one
 * root; a thread's stack and registers are one root, since a block both
 * hold is what the thread holds, and splitting them would make it
 * retained by neither.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/roots.h"
#include "trace/format.h"
#include "util/fmt.h"

const char *mvz_root_kind_name(int kind)
{
    switch (kind) {
    case MVZ_ROOT_GLOBAL:
        return "global";
    case MVZ_ROOT_TLS:
        return "tls";
    case MVZ_ROOT_STACK:
        return "stack";
    case MVZ_ROOT_REGISTER:
        return "register";
    case MVZ_ROOT_MAPPING:
        return "mapping";
    case MVZ_ROOT_REGISTERED:
        return "registered";
    default:
        return "?";
    }
}

void mvz_root_label(const struct mvz_root_info *ri, char *buf, size_t cap)
{
    const char *kind = mvz_root_kind_name(ri->kind);
    if (ri->kind == MVZ_ROOT_GLOBAL)
        snprintf(buf, cap, "%s %s [%s]", kind, *ri->name ? ri->name : "?",
                 ri->module ? mvz_base_name(ri->module) : "?");
    else if (ri->kind == MVZ_ROOT_MAPPING || ri->kind == MVZ_ROOT_REGISTERED)
        snprintf(buf, cap, "%s %s%s0x%" PRIx64, kind, ri->name, *ri->name ? " at " : "", ri->addr);
    else
        snprintf(buf, cap, "%s of thread %u%s", kind, ri->tid,
                 ri->kind == MVZ_ROOT_STACK ? " (and its registers)" : "");
}

/* The variable at addr (its name), or NULL. */
static const char *data_symbol(const struct mvz_trace *t, struct mvz_symbols *sym, uint64_t addr)
{
    uint32_t gen = 0; /* the latest generation: every module the snapshot saw */
    for (size_t i = 0; i < t->nmodules; i++)
        gen = t->modules[i].gen_loaded > gen ? t->modules[i].gen_loaded : gen;
    uint64_t off;
    return mvz_symbols_data(sym, gen, addr, &off);
}

/* The key that names a root word of region rt (sym: its variable), into key. */
static void root_key(const struct mvz_snap_root *rt, const char *sym, char *key, size_t cap)
{
    if (rt->kind == MVZ_ROOT_GLOBAL)
        snprintf(key, cap, "g %s %s", mvz_base_name(rt->name), sym ? sym : "");
    else if (rt->kind == MVZ_ROOT_MAPPING || rt->kind == MVZ_ROOT_REGISTERED)
        snprintf(key, cap, "m %d %" PRIx64, rt->kind, rt->addr);
    else
        snprintf(key, cap, "t %d %u", rt->kind == MVZ_ROOT_TLS, rt->tid);
}

static int add_root(struct mvz_root_groups *g, size_t *cap, const struct mvz_snap_root *rt,
                    uint64_t at, const char *sym, uint32_t key)
{
    if (g->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        struct mvz_root_info *v = realloc(g->roots, *cap * sizeof(*v));
        if (!v)
            return -1;
        g->roots = v;
    }
    int kind = rt->kind == MVZ_ROOT_REGISTER ? MVZ_ROOT_STACK : rt->kind;
    const char *name = sym ? sym : kind == MVZ_ROOT_STACK || !rt->name ? "" : rt->name;
    char *copy = strdup(name);
    if (!copy)
        return -1;
    int global = rt->kind == MVZ_ROOT_GLOBAL;
    g->roots[g->n++] = (struct mvz_root_info){
        kind, rt->tid, copy, global ? rt->name : NULL, global ? at : rt->addr, key};
    return 0;
}

int mvz_root_groups_build(const struct mvz_snapshot *s, const struct mvz_trace *t,
                          struct mvz_symbols *sym, struct mvz_root_groups *g)
{
    memset(g, 0, sizeof(*g));
    g->group = malloc((s->nroot_edges ? s->nroot_edges : 1) * sizeof(*g->group));
    if (!g->group)
        return -1;
    size_t cap = 0;
    uint32_t *root_of_key = NULL; /* key id -> root + 1 */
    size_t rk_cap = 0;
    for (size_t i = 0; i < s->nroots; i++) {
        const struct mvz_snap_root *rt = &s->roots[i];
        for (size_t k = 0; k < rt->nedges; k++) {
            uint64_t at = rt->addr + s->root_edges[rt->first_edge + k].offset;
            const char *symname = rt->kind == MVZ_ROOT_GLOBAL ? data_symbol(t, sym, at) : NULL;
            char key[512];
            root_key(rt, symname, key, sizeof(key));
            uint32_t id = mvz_strtab_intern(&g->keys, key);
            if (!id)
                goto oom;
            if (id >= rk_cap) {
                size_t nc = rk_cap ? 2 * rk_cap : 256;
                while (nc <= id)
                    nc *= 2;
                uint32_t *v = realloc(root_of_key, nc * sizeof(*v));
                if (!v)
                    goto oom;
                memset(v + rk_cap, 0, (nc - rk_cap) * sizeof(*v));
                root_of_key = v;
                rk_cap = nc;
            }
            if (!root_of_key[id]) {
                if (add_root(g, &cap, rt, at, symname, id) < 0)
                    goto oom;
                root_of_key[id] = g->n;
            }
            g->group[rt->first_edge + k] = root_of_key[id] - 1;
        }
    }
    free(root_of_key);
    g->weak = calloc(g->n ? g->n : 1, 1);
    if (!g->weak)
        return -1;
    for (uint32_t i = 0; i < g->n; i++)
        g->weak[i] = g->roots[i].kind == MVZ_ROOT_STACK;
    return 0;
oom:
    free(root_of_key);
    return -1;
}

void mvz_root_groups_free(struct mvz_root_groups *g)
{
    for (uint32_t i = 0; i < g->n; i++)
        free(g->roots[i].name);
    free(g->roots);
    free(g->group);
    free(g->weak);
    mvz_strtab_free(&g->keys);
    memset(g, 0, sizeof(*g));
}
