/*
 * diff.c - two runs compared for the UI (diff.h). Sites and functions are
 * matched by analysis/diff.c, as `memviz diff` matches them. The flame
 * graph walks the new run's top-down tree and, beside it, the base run's:
 * a frame's counterpart is the base child with the same function and
 * module (by file name: two builds may live in two places) under the
 * counterpart of its parent, so each frame carries what
 * the same calling context cost in the base run (0 when it had none).
 */
#include "ui/diff.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/diff.h"
#include "ui/doc.h"
#include "util/fmt.h"

static void put_pair(struct mvz_json *j, const char *k, uint64_t base, uint64_t new_)
{
    mvz_json_key(j, k);
    mvz_json_begin_array(j);
    mvz_json_uint(j, base);
    mvz_json_uint(j, new_);
    mvz_json_end_array(j);
}

static void put_totals(struct mvz_json *j, const struct mvz_ui_model *b,
                       const struct mvz_ui_model *n)
{
    const struct mvz_summary *x = &b->whole.p.sum, *y = &n->whole.p.sum;
    mvz_json_key(j, "totals");
    mvz_json_begin_object(j);
    put_pair(j, "peak_bytes", x->peak_bytes, y->peak_bytes);
    put_pair(j, "leaked_bytes", x->leaked_bytes, y->leaked_bytes);
    put_pair(j, "allocations", x->allocations, y->allocations);
    put_pair(j, "allocated_bytes", x->allocated_bytes, y->allocated_bytes);
    put_pair(j, "temporary", x->temporary, y->temporary);
    put_pair(j, "peak_rss_bytes", b->whole.p.trace.peak_rss, n->whole.p.trace.peak_rss);
    mvz_json_end_object(j);
}

static void put_entry(struct mvz_json *j, const struct mvz_diff *m, const struct mvz_diff_entry *e,
                      enum mvz_cost c)
{
    mvz_json_begin_object(j);
    mvz_json_put_string(j, "key", mvz_strtab_get(&m->keys, e->key));
    mvz_json_put_uint(j, "base", e->cost[MVZ_DIFF_BASE][c]);
    mvz_json_put_uint(j, "new", e->cost[MVZ_DIFF_NEW][c]);
    mvz_json_key(j, "delta");
    mvz_json_int(j, mvz_diff_delta(e, c));
    mvz_json_end_object(j);
}

/* The top growers, then the top shrinkers (largest shrink first). */
static void put_changes(struct mvz_json *j, const char *k, struct mvz_diff *m, enum mvz_cost c,
                        size_t top)
{
    mvz_diff_sort(m, c);
    mvz_json_key(j, k);
    mvz_json_begin_object(j);
    mvz_json_key(j, "grew");
    mvz_json_begin_array(j);
    for (size_t i = 0, shown = 0; i < m->n && shown < top && mvz_diff_delta(&m->e[i], c) > 0;
         i++, shown++)
        put_entry(j, m, &m->e[i], c);
    mvz_json_end_array(j);
    mvz_json_key(j, "shrank");
    mvz_json_begin_array(j);
    for (size_t i = m->n, shown = 0; i-- > 0 && shown < top && mvz_diff_delta(&m->e[i], c) < 0;
         shown++)
        put_entry(j, m, &m->e[i], c);
    mvz_json_end_array(j);
    mvz_json_end_object(j);
}

char *mvz_ui_diff_json(const struct mvz_ui_model *base, const struct mvz_ui_model *new_,
                       enum mvz_cost c, size_t top, size_t *len)
{
    struct mvz_diff sites = {0}, funcs = {0};
    char *doc = NULL;
    struct mvz_ui_doc d;
    if (mvz_diff_add_profile(&sites, &funcs, MVZ_DIFF_BASE, &base->whole.p, base->sym) == 0 &&
        mvz_diff_add_profile(&sites, &funcs, MVZ_DIFF_NEW, &new_->whole.p, new_->sym) == 0 &&
        mvz_ui_doc_open(&d) == 0) {
        mvz_json_begin_object(&d.j);
        mvz_json_put_string(&d.j, "base", base->path);
        mvz_json_put_string(&d.j, "new", new_->path);
        mvz_json_put_string(&d.j, "cost", mvz_cost_name(c));
        put_totals(&d.j, base, new_);
        put_changes(&d.j, "functions", &funcs, c, top);
        put_changes(&d.j, "sites", &sites, c, top);
        mvz_json_end_object(&d.j);
        doc = mvz_ui_doc_close(&d, len);
    }
    mvz_diff_free(&sites);
    mvz_diff_free(&funcs);
    return doc;
}

/* ---- the differential flame graph ---- */
struct walk {
    const struct mvz_calltree *n, *b;
    struct mvz_json *j;
    enum mvz_cost c;
    uint64_t min;
    long next;
};

/* Base node id's child with node n's function and module (0: none). */
static uint32_t counterpart(const struct walk *w, uint32_t base_parent, uint32_t n)
{
    if (base_parent == UINT32_MAX)
        return 0;
    const struct mvz_tree_node *x = &w->n->nodes[n];
    const char *func = mvz_strtab_get(&w->n->names, x->func);
    const char *mod = x->module ? mvz_base_name(mvz_strtab_get(&w->n->names, x->module)) : "";
    for (uint32_t k = w->b->nodes[base_parent].first_child; k; k = w->b->nodes[k].next_sibling) {
        const struct mvz_tree_node *y = &w->b->nodes[k];
        if (!strcmp(func, mvz_strtab_get(&w->b->names, y->func)) &&
            !strcmp(mod, y->module ? mvz_base_name(mvz_strtab_get(&w->b->names, y->module)) : ""))
            return k;
    }
    return 0;
}

static void put_node(struct walk *w, uint32_t id, uint32_t base_id, long parent)
{
    const struct mvz_tree_node *x = &w->n->nodes[id];
    long me = w->next++;
    mvz_json_begin_array(w->j);
    mvz_json_int(w->j, parent);
    mvz_json_string(w->j, id ? mvz_strtab_get(&w->n->names, x->func) : "all");
    mvz_json_string(w->j, id && x->module ? mvz_strtab_get(&w->n->names, x->module) : NULL);
    mvz_json_uint(w->j, x->incl[w->c]);
    mvz_json_uint(w->j, base_id != UINT32_MAX ? w->b->nodes[base_id].incl[w->c] : 0);
    mvz_json_end_array(w->j);
    for (uint32_t k = x->first_child; k; k = w->n->nodes[k].next_sibling)
        if (w->n->nodes[k].incl[w->c] && w->n->nodes[k].incl[w->c] >= w->min) {
            uint32_t b = counterpart(w, base_id, k);
            put_node(w, k, b ? b : UINT32_MAX, me);
        }
}

char *mvz_ui_diff_flame_json(const struct mvz_ui_model *base, const struct mvz_ui_model *new_,
                             enum mvz_cost c, double min_fraction, size_t *len)
{
    const struct mvz_calltree *n = &new_->whole.top_down, *b = &base->whole.top_down;
    uint64_t total = n->n ? n->nodes[0].incl[c] : 0;
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0)
        return NULL;
    struct walk w = {n, b, &d.j, c, (uint64_t)((double)total * min_fraction), 0};
    mvz_json_begin_object(&d.j);
    mvz_json_put_string(&d.j, "cost", mvz_cost_name(c));
    mvz_json_key(&d.j, "bytes");
    mvz_json_bool(&d.j, mvz_cost_is_bytes(c));
    mvz_json_put_uint(&d.j, "total", total);
    mvz_json_put_uint(&d.j, "base_total", b->n ? b->nodes[0].incl[c] : 0);
    mvz_json_key(&d.j, "columns");
    mvz_json_raw(&d.j, "[\"parent\",\"function\",\"module\",\"inclusive\",\"base_inclusive\"]");
    mvz_json_key(&d.j, "nodes");
    mvz_json_begin_array(&d.j);
    if (n->n)
        put_node(&w, 0, b->n ? 0 : UINT32_MAX, -1);
    mvz_json_end_array(&d.j);
    mvz_json_end_object(&d.j);
    return mvz_ui_doc_close(&d, len);
}
