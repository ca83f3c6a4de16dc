/*
 * sites.c - the UI's tables (sites.h). Sites are ranked as `memviz
 * report` ranks them (by the cost, then by stack id), with the same
 * numbers; a function's callers and callees come from the top-down call
 * tree, where each of its nodes is one calling context.
 */
#include "ui/sites.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/profile_json.h"
#include "trace/format.h"
#include "ui/doc.h"
#include "util/sort.h"
#include "util/strtab.h"

#define SITE_FRAMES 32

/* ---- the top sites ---- */
struct ranked {
    const struct mvz_site *s;
    uint64_t cost;
};

static int by_cost(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    return x->s->stack < y->s->stack ? -1 : 1;
}

static void put_site(struct mvz_json *j, struct mvz_symbols *sym, const struct ranked *r)
{
    const struct mvz_site *s = r->s;
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "stack_id", s->stack);
    mvz_json_put_uint(j, "cost", r->cost);
    mvz_json_put_uint(j, "allocations", s->allocations);
    mvz_json_put_uint(j, "allocated_bytes", s->allocated_bytes);
    mvz_json_put_uint(j, "at_peak_bytes", s->at_peak_bytes);
    mvz_json_put_uint(j, "leaked_bytes", s->leaked_bytes);
    mvz_json_put_uint(j, "leaked_blocks", s->leaked_blocks);
    mvz_json_put_uint(j, "temporary", s->temporary);
    mvz_json_put_uint(j, "peak_bytes", s->peak_bytes);
    mvz_ui_put_frames(j, sym, s->stack, SITE_FRAMES);
    mvz_json_end_object(j);
}

char *mvz_ui_sites_json(const struct mvz_ui_model *m, const struct mvz_ui_view *v, enum mvz_cost c,
                        size_t top, size_t *len)
{
    const struct mvz_profile *p = &v->p;
    struct ranked *r = malloc((p->sites_cap + 1) * sizeof(*r));
    if (!r)
        return NULL;
    size_t n = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < p->sites_cap; i++) {
        const struct mvz_site *s = &p->sites[i];
        uint64_t cost = s->stack ? mvz_site_cost(s, c) : 0;
        if (cost) {
            r[n++] = (struct ranked){s, cost};
            total += cost;
        }
    }
    mvz_sort(r, n, sizeof(*r), by_cost);
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0) {
        free(r);
        return NULL;
    }
    mvz_json_begin_object(&d.j);
    mvz_json_put_string(&d.j, "cost", mvz_cost_name(c));
    mvz_json_key(&d.j, "bytes");
    mvz_json_bool(&d.j, mvz_cost_is_bytes(c));
    mvz_json_put_uint(&d.j, "total", total);
    mvz_json_put_uint(&d.j, "sites_with_cost", n);
    mvz_json_key(&d.j, "sites");
    mvz_json_begin_array(&d.j);
    for (size_t i = 0; i < n && i < top; i++)
        put_site(&d.j, m->sym, &r[i]);
    mvz_json_end_array(&d.j);
    mvz_json_end_object(&d.j);
    free(r);
    return mvz_ui_doc_close(&d, len);
}

/* ---- sizes, allocator functions, threads ---- */
static void put_allocators(struct mvz_json *j, const struct mvz_profile *p)
{
    uint64_t calls[MVZ_E_ALLOC_COUNT] = {0};
    for (size_t i = 0; i < p->sites_cap; i++)
        if (p->sites[i].stack && p->sites[i].allocations)
            for (int e = 0; e < MVZ_E_ALLOC_COUNT; e++)
                calls[e] += mvz_site_entry_allocations(p, &p->sites[i], e);
    mvz_json_key(j, "allocators");
    mvz_json_begin_array(j);
    for (int e = 0; e < MVZ_E_ALLOC_COUNT; e++) {
        if (!calls[e])
            continue;
        mvz_json_begin_object(j);
        mvz_json_put_string(j, "function", mvz_entry_name((unsigned)e));
        mvz_json_put_uint(j, "allocations", calls[e]);
        mvz_json_end_object(j);
    }
    mvz_json_end_array(j);
}

char *mvz_ui_breakdown_json(const struct mvz_ui_model *m, const struct mvz_ui_view *v, size_t *len)
{
    (void)m;
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0)
        return NULL;
    mvz_json_begin_object(&d.j);
    mvz_profile_json_sizes(&d.j, "sizes", &v->p.sum);
    put_allocators(&d.j, &v->p);
    mvz_profile_json_threads(&d.j, "threads", &v->p);
    mvz_json_end_object(&d.j);
    return mvz_ui_doc_close(&d, len);
}

/* ---- one function: callers and callees ---- */
struct share {
    uint32_t *func; /* name ids */
    uint64_t *cost;
    size_t n, cap;
};

static int share_add(struct share *s, uint32_t func, uint64_t cost)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->func[i] == func) {
            s->cost[i] += cost;
            return 0;
        }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        uint32_t *f = realloc(s->func, cap * sizeof(*f));
        if (f)
            s->func = f;
        uint64_t *c = f ? realloc(s->cost, cap * sizeof(*c)) : NULL;
        if (!c)
            return -1;
        s->cost = c;
        s->cap = cap;
    }
    s->func[s->n] = func;
    s->cost[s->n++] = cost;
    return 0;
}

static const uint64_t *share_costs;
static int by_share(const void *a, const void *b)
{
    uint64_t x = share_costs[*(const uint32_t *)a], y = share_costs[*(const uint32_t *)b];
    return x != y ? (x > y ? -1 : 1) : (*(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1);
}

static void put_share(struct mvz_json *j, const char *key, const struct share *s,
                      const struct mvz_calltree *t)
{
    uint32_t *order = malloc((s->n + 1) * sizeof(*order));
    mvz_json_key(j, key);
    mvz_json_begin_array(j);
    if (order) {
        for (size_t i = 0; i < s->n; i++)
            order[i] = (uint32_t)i;
        share_costs = s->cost;
        mvz_sort(order, s->n, sizeof(*order), by_share);
        for (size_t i = 0; i < s->n; i++) {
            mvz_json_begin_array(j);
            mvz_json_string(j, s->func[order[i]] ? mvz_strtab_get(&t->names, s->func[order[i]])
                                                 : "(the program's start)");
            mvz_json_uint(j, s->cost[order[i]]);
            mvz_json_end_array(j);
        }
    }
    mvz_json_end_array(j);
    free(order);
}

/* Whether an ancestor of node id calls itself func (recursion: the stack
 * is counted at the outermost call only). */
static int under_itself(const struct mvz_calltree *t, uint32_t id, uint32_t func)
{
    for (uint32_t a = t->nodes[id].parent; a; a = t->nodes[a].parent)
        if (t->nodes[a].func == func)
            return 1;
    return 0;
}

char *mvz_ui_function_json(const struct mvz_ui_view *v, const char *name, enum mvz_cost c,
                           size_t *len)
{
    const struct mvz_calltree *t = &v->top_down;
    uint64_t incl = 0, self = 0;
    size_t contexts = 0;
    struct share callers = {0}, callees = {0};
    int oom = 0;
    for (size_t id = 1; id < t->n; id++) {
        const struct mvz_tree_node *n = &t->nodes[id];
        if (strcmp(mvz_strtab_get(&t->names, n->func), name))
            continue;
        contexts++;
        self += n->self[c];
        if (!under_itself(t, (uint32_t)id, n->func))
            incl += n->incl[c];
        uint32_t caller = n->parent ? t->nodes[n->parent].func : 0;
        oom |= n->incl[c] && share_add(&callers, caller, n->incl[c]) < 0;
        for (uint32_t k = n->first_child; k; k = t->nodes[k].next_sibling)
            oom |= t->nodes[k].incl[c] &&
                   share_add(&callees, t->nodes[k].func, t->nodes[k].incl[c]) < 0;
    }
    struct mvz_ui_doc d;
    char *doc = NULL;
    if (!oom && mvz_ui_doc_open(&d) == 0) {
        mvz_json_begin_object(&d.j);
        mvz_json_put_string(&d.j, "function", name);
        mvz_json_put_string(&d.j, "cost", mvz_cost_name(c));
        mvz_json_put_uint(&d.j, "total", t->n ? t->nodes[0].incl[c] : 0);
        mvz_json_put_uint(&d.j, "contexts", contexts);
        mvz_json_put_uint(&d.j, "inclusive", incl);
        mvz_json_put_uint(&d.j, "self", self);
        put_share(&d.j, "callers", &callers, t);
        put_share(&d.j, "callees", &callees, t);
        mvz_json_end_object(&d.j);
        doc = mvz_ui_doc_close(&d, len);
    }
    free(callers.func);
    free(callers.cost);
    free(callees.func);
    free(callees.cost);
    return doc;
}
