/*
 * calltree.c - see calltree.h. Children are found through one hash table
 * keyed on (parent, function, module), so adding a stack costs one probe per
 * frame whatever the fan-out.
 */
#include "analysis/calltree.h"

#include <stdlib.h>
#include <string.h>

#include "util/sort.h"

static uint64_t child_hash(uint32_t parent, uint32_t func, uint32_t module)
{
    uint64_t h = ((uint64_t)parent << 32 | func) * 0x9E3779B97F4A7C15ull;
    return (h ^ (h >> 29) ^ module) * 0xBF58476D1CE4E5B9ull;
}

static int same_child(const struct mvz_calltree *t, uint32_t node, uint32_t parent, uint32_t func,
                      uint32_t module)
{
    const struct mvz_tree_node *x = &t->nodes[node];
    return x->parent == parent && x->func == func && x->module == module;
}

static int grow_slots(struct mvz_calltree *t)
{
    size_t n = t->nslots ? t->nslots * 2 : 4096;
    uint32_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return -1;
    for (uint32_t i = 1; i < t->n; i++) {
        size_t j = child_hash(t->nodes[i].parent, t->nodes[i].func, t->nodes[i].module) & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = i;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
    return 0;
}

static int grow_nodes(struct mvz_calltree *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    struct mvz_tree_node *v = realloc(t->nodes, cap * sizeof(*v));
    if (!v)
        return -1;
    t->nodes = v;
    t->cap = cap;
    return 0;
}

int mvz_calltree_init(struct mvz_calltree *t, int top_down)
{
    memset(t, 0, sizeof(*t));
    t->top_down = top_down;
    if (grow_nodes(t) < 0 || grow_slots(t) < 0)
        return -1;
    memset(&t->nodes[0], 0, sizeof(t->nodes[0]));
    t->n = 1;
    return 0;
}

static uint32_t child_of(struct mvz_calltree *t, uint32_t parent, const struct mvz_frame *f)
{
    uint32_t func = mvz_strtab_intern(&t->names, f->function);
    uint32_t module = f->module ? mvz_strtab_intern(&t->names, f->module) : 0;
    if (!func)
        return 0;
    if ((t->n + 1) * 2 > t->nslots && grow_slots(t) < 0)
        return 0;
    size_t j = child_hash(parent, func, module) & (t->nslots - 1);
    for (; t->slots[j]; j = (j + 1) & (t->nslots - 1))
        if (same_child(t, t->slots[j], parent, func, module))
            return t->slots[j];
    if (t->n == t->cap && grow_nodes(t) < 0)
        return 0;
    uint32_t id = (uint32_t)t->n++;
    struct mvz_tree_node *node = &t->nodes[id];
    memset(node, 0, sizeof(*node));
    node->func = func;
    node->module = module;
    node->file = f->file ? mvz_strtab_intern(&t->names, f->file) : 0;
    node->next_sibling = t->nodes[parent].first_child;
    t->nodes[parent].first_child = id;
    node->parent = parent;
    t->slots[j] = id;
    return id;
}

static void add_cost(uint64_t *dst, const uint64_t *c)
{
    for (int i = 0; i < MVZ_COST_COUNT; i++)
        dst[i] += c[i];
}

int mvz_calltree_add(struct mvz_calltree *t, const struct mvz_frame *f, size_t n,
                     const uint64_t cost[MVZ_COST_COUNT])
{
    uint32_t node = 0;
    add_cost(t->nodes[0].incl, cost);
    for (size_t i = 0; i < n; i++) {
        const struct mvz_frame *fr = t->top_down ? &f[n - 1 - i] : &f[i];
        if (!(node = child_of(t, node, fr)))
            return -1;
        add_cost(t->nodes[node].incl, cost);
    }
    add_cost(t->nodes[node].self, cost);
    return 0;
}

static const struct mvz_tree_node *sort_nodes;
static enum mvz_cost sort_cost;

static int by_incl_desc(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint64_t vx = sort_nodes[x].incl[sort_cost], vy = sort_nodes[y].incl[sort_cost];
    if (vx != vy)
        return vx > vy ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Relinks every sibling list in order of inclusive cost c. */
void mvz_calltree_sort(struct mvz_calltree *t, enum mvz_cost c)
{
    uint32_t *order = malloc(t->n * sizeof(*order));
    if (!order)
        return; /* out of memory: the tree stays in insertion order */
    for (uint32_t i = 1; i < t->n; i++)
        order[i - 1] = i;
    sort_nodes = t->nodes;
    sort_cost = c;
    mvz_sort(order, t->n - 1, sizeof(*order), by_incl_desc);
    for (size_t i = 0; i < t->n; i++)
        t->nodes[i].first_child = 0;
    /* walking the global order backwards and pushing on the front keeps it */
    for (size_t k = t->n - 1; k-- > 0;) {
        struct mvz_tree_node *x = &t->nodes[order[k]];
        x->next_sibling = t->nodes[x->parent].first_child;
        t->nodes[x->parent].first_child = order[k];
    }
    free(order);
}

void mvz_calltree_free(struct mvz_calltree *t)
{
    mvz_strtab_free(&t->names);
    free(t->nodes);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}
