/*
 * types.c - a heap block's type from DWARF (types.h).
 *
 * The path walk: the root word lies in a global variable; its DWARF type,
 * at the word's offset, is a pointer (through members of structs and
 * elements of arrays); what it points to is the first block's type, an
 * array of it when the block holds several. From a typed block the next
 * word of the path is again a member at an offset, and so on. A step that
 * is not a pointer member, or a pointer into the middle of a block, ends
 * the walk: what cannot be told is not guessed.
 */
#include "analysis/types.h"

#include <dwarf.h>
#include <inttypes.h>
#include <string.h>

#include "analysis/dominators.h"
#include "trace/format.h"
#include "util/json.h"

#define PATH_MAX_STEPS 64
#define MAX_NEST 4
#define MAX_ELEMS 4

/* ---- DWARF types ---- */
static int type_of(Dwarf_Die *die, Dwarf_Die *out)
{
    Dwarf_Attribute a;
    return dwarf_attr_integrate(die, DW_AT_type, &a) && dwarf_formref_die(&a, out) ? 0 : -1;
}

/* Typedefs and qualifiers away: the type as laid out. */
static int strip(Dwarf_Die *t)
{
    for (int i = 0; i < 16; i++) {
        int tag = dwarf_tag(t);
        if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
            tag != DW_TAG_restrict_type && tag != DW_TAG_atomic_type)
            return 0;
        Dwarf_Die next;
        if (type_of(t, &next) < 0)
            return -1; /* const void */
        *t = next;
    }
    return -1;
}

static uint64_t type_size(Dwarf_Die *t)
{
    Dwarf_Word n;
    return dwarf_aggregate_size(t, &n) == 0 ? n : 0;
}

/* "struct entry", "int *", "char [16]", for people. */
static void type_name(Dwarf_Die *t, char *buf, size_t cap, int depth)
{
    Dwarf_Die in;
    const char *name = dwarf_diename(t);
    int tag = dwarf_tag(t);
    const char *kw = tag == DW_TAG_structure_type     ? "struct "
                     : tag == DW_TAG_union_type       ? "union "
                     : tag == DW_TAG_enumeration_type ? "enum "
                                                      : "";
    if (depth > 8) {
        snprintf(buf, cap, "...");
    } else if (name && tag != DW_TAG_pointer_type) {
        snprintf(buf, cap, "%s%s", kw, name);
    } else if (tag == DW_TAG_subroutine_type) {
        snprintf(buf, cap, "function");
    } else if (tag == DW_TAG_array_type && type_of(t, &in) == 0) {
        char inner[200];
        uint64_t es = type_size(&in), n = es ? type_size(t) / es : 0;
        type_name(&in, inner, sizeof(inner), depth + 1);
        snprintf(buf, cap, "%s [%" PRIu64 "]", inner, n);
    } else if ((tag == DW_TAG_pointer_type || tag == DW_TAG_const_type ||
                tag == DW_TAG_volatile_type) &&
               type_of(t, &in) == 0) {
        char inner[200];
        type_name(&in, inner, sizeof(inner), depth + 1);
        snprintf(buf, cap, "%s%s", inner,
                 tag == DW_TAG_pointer_type ? " *"
                 : tag == DW_TAG_const_type ? " const"
                                            : " volatile");
    } else {
        snprintf(buf, cap, "%s", tag == DW_TAG_pointer_type ? "void *" : "?");
    }
}

static int member_offset(Dwarf_Die *m, uint64_t *off)
{
    Dwarf_Attribute a;
    Dwarf_Word v;
    if (!dwarf_attr_integrate(m, DW_AT_data_member_location, &a))
        return dwarf_tag(m) == DW_TAG_member ? (*off = 0, 0) : -1; /* a union's members */
    if (dwarf_formudata(&a, &v) != 0)
        return -1;
    *off = v;
    return 0;
}

/* The type of what the pointer at byte off of type t points to. */
static int pointee_at(Dwarf_Die t, uint64_t off, Dwarf_Die *out, int depth)
{
    if (depth > 16 || strip(&t) < 0)
        return -1;
    int tag = dwarf_tag(&t);
    if (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type)
        return off == 0 && type_of(&t, out) == 0 && strip(out) == 0 ? 0 : -1;
    if (tag == DW_TAG_array_type) {
        Dwarf_Die el;
        uint64_t es;
        if (type_of(&t, &el) < 0 || strip(&el) < 0 || !(es = type_size(&el)))
            return -1;
        return pointee_at(el, off % es, out, depth + 1);
    }
    if (tag != DW_TAG_structure_type && tag != DW_TAG_class_type && tag != DW_TAG_union_type)
        return -1;
    Dwarf_Die m;
    if (dwarf_child(&t, &m) != 0)
        return -1;
    do {
        uint64_t mo, ms;
        Dwarf_Die mt;
        int mtag = dwarf_tag(&m);
        if ((mtag != DW_TAG_member && mtag != DW_TAG_inheritance) || member_offset(&m, &mo) < 0 ||
            type_of(&m, &mt) < 0)
            continue;
        Dwarf_Die st = mt;
        if (strip(&st) < 0 || !(ms = type_size(&st)) || off < mo || off >= mo + ms)
            continue;
        if (pointee_at(mt, off - mo, out, depth + 1) == 0)
            return 0;
    } while (dwarf_siblingof(&m, &m) == 0);
    return -1;
}

/* ---- finding a type by name, a variable by address ---- */
struct search {
    const char *name; /* a struct or class with this name and a size */
    uint64_t addr;    /* or the variable holding this (DWARF) address */
    Dwarf_Die found;
    uint64_t var_addr;
    int ok;
};

static int var_address(Dwarf_Die *v, uint64_t *addr)
{
    Dwarf_Attribute a;
    Dwarf_Op *ops;
    size_t n;
    if (!dwarf_attr(v, DW_AT_location, &a) || dwarf_getlocation(&a, &ops, &n) != 0 || n != 1 ||
        ops[0].atom != DW_OP_addr)
        return -1;
    *addr = ops[0].number;
    return 0;
}

static void visit(Dwarf_Die *die, struct search *q, int depth)
{
    Dwarf_Die c;
    if (depth > 6 || q->ok || dwarf_child(die, &c) != 0)
        return;
    do {
        int tag = dwarf_tag(&c);
        if (q->name && (tag == DW_TAG_structure_type || tag == DW_TAG_class_type) &&
            dwarf_diename(&c) && !strcmp(dwarf_diename(&c), q->name) && type_size(&c)) {
            q->found = c;
            q->ok = 1;
        } else if (!q->name && tag == DW_TAG_variable) {
            uint64_t a, sz;
            Dwarf_Die t;
            if (var_address(&c, &a) == 0 && type_of(&c, &t) == 0) {
                Dwarf_Die st = t;
                sz = strip(&st) == 0 ? type_size(&st) : 0;
                if (q->addr >= a && q->addr < a + (sz ? sz : 8)) {
                    q->found = t;
                    q->var_addr = a;
                    q->ok = 1;
                }
            }
        } else if (tag == DW_TAG_namespace ||
                   (q->name && (tag == DW_TAG_structure_type || tag == DW_TAG_class_type))) {
            visit(&c, q, depth + 1);
        }
    } while (!q->ok && dwarf_siblingof(&c, &c) == 0);
}

static int search_dwarf(Dwarf *dw, struct search *q)
{
    Dwarf_Off off = 0, next;
    size_t hsize;
    while (!q->ok && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu;
        if (dwarf_offdie(dw, off + hsize, &cu))
            visit(&cu, q, 0);
        off = next;
    }
    return q->ok ? 0 : -1;
}

/* ---- the two ways ---- */
static uint32_t latest_gen(const struct mvz_trace *tr)
{
    uint32_t gen = 0;
    for (size_t i = 0; i < tr->nmodules; i++)
        gen = tr->modules[i].gen_loaded > gen ? tr->modules[i].gen_loaded : gen;
    return gen;
}

static void set_type(struct mvz_typed *t, Dwarf_Die die)
{
    t->die = die;
    t->elem = type_size(&die);
    t->count = t->elem ? t->size / t->elem : 0;
    type_name(&die, t->name, sizeof(t->name), 0);
    t->type = t->elem > 0 && t->elem <= t->size;
}

/* "vtable for Foo" at the block's first word: a Foo. */
static int by_vtable(struct mvz_typed *t, struct mvz_symbols *sym, uint32_t gen, uint64_t word)
{
    uint64_t off, bias;
    const char *vt = word ? mvz_symbols_data(sym, gen, word, &off) : NULL;
    if (!vt || strncmp(vt, "vtable for ", 11) != 0)
        return -1;
    Dwarf *dw = mvz_symbols_dwarf(sym, gen, word, &bias);
    const char *cls = vt + 11, *colon = strrchr(cls, ':');
    struct search q = {.name = colon ? colon + 1 : cls};
    if (!dw || search_dwarf(dw, &q) < 0)
        return -1;
    set_type(t, q.found);
    snprintf(t->how, sizeof(t->how), "its first word points into %s", vt);
    return t->type ? 0 : -1;
}

/* The root word's variable and its pointee at the word's offset. */
static int root_pointee(struct mvz_symbols *sym, uint32_t gen, uint64_t word, Dwarf_Die *out,
                        char *var, size_t cap)
{
    uint64_t bias, off;
    Dwarf *dw = mvz_symbols_dwarf(sym, gen, word, &bias);
    struct search q = {.addr = word - bias};
    if (!dw || search_dwarf(dw, &q) < 0)
        return -1;
    const char *name = mvz_symbols_data(sym, gen, word, &off);
    snprintf(var, cap, "%s", name ? name : "a global");
    return pointee_at(q.found, word - bias - q.var_addr, out, 0);
}

/* Walks the shortest path from a global variable down to block b. */
static int by_path(struct mvz_typed *t, struct mvz_symbols *sym, uint32_t gen,
                   const struct mvz_retain *r, uint32_t b)
{
    const struct mvz_snapshot *s = r->s;
    uint32_t v[PATH_MAX_STEPS];
    size_t n = 0;
    for (uint32_t at = b; at < r->nblocks && n < PATH_MAX_STEPS; at = r->bfs_parent[at])
        v[n++] = at;
    uint32_t first = v[n - 1];
    if (n == PATH_MAX_STEPS || r->bfs_parent[first] == MVZ_DOM_NONE ||
        r->bfs_parent[first] < r->nblocks)
        return -1;
    uint64_t e = r->bfs_edge[first];
    size_t re = e >= s->nedges ? r->root_edge_of[e - s->nedges] : 0;
    const struct mvz_snap_root *root = NULL;
    for (size_t i = 0; i < s->nroots && e >= s->nedges; i++)
        if (re >= s->roots[i].first_edge && re < s->roots[i].first_edge + s->roots[i].nedges)
            root = &s->roots[i];
    if (!root || root->kind != MVZ_ROOT_GLOBAL || s->root_edges[re].kind != MVZ_EDGE_START)
        return -1;
    Dwarf_Die cur;
    char var[200];
    if (root_pointee(sym, gen, root->addr + s->root_edges[re].offset, &cur, var, sizeof(var)) < 0)
        return -1;
    for (size_t i = n - 1; i-- > 0;) { /* v[i+1] typed cur; the edge into v[i] */
        const struct mvz_snap_edge *ed = &s->edges[r->bfs_edge[v[i]]];
        uint64_t es = type_size(&cur);
        Dwarf_Die next;
        if (ed->kind != MVZ_EDGE_START || !es || pointee_at(cur, ed->offset % es, &next, 0) < 0)
            return -1;
        cur = next;
    }
    set_type(t, cur);
    snprintf(t->how, sizeof(t->how), "the types along the path from %s", var);
    return t->type ? 0 : -1;
}

void mvz_typed_find(struct mvz_typed *t, const struct mvz_trace *tr, struct mvz_symbols *sym,
                    const struct mvz_retain *r, uint32_t b, const uint8_t *bytes,
                    const uint8_t *known)
{
    memset(t, 0, sizeof(*t));
    t->size = r->s->blocks[b].size;
    uint32_t gen = latest_gen(tr);
    /* the vtable word points into a module, not a block: the snapshot's
     * edges do not have it, the stored bytes do */
    uint64_t w = 0;
    if (bytes && t->size >= 8 && known[0] && known[7])
        memcpy(&w, bytes, 8);
    if (by_vtable(t, sym, gen, w) == 0)
        return;
    memset(t, 0, sizeof(*t));
    t->size = r->s->blocks[b].size;
    if (by_path(t, sym, gen, r, b) < 0)
        t->type = 0;
}

/* ---- the block as its type ---- */
struct row {
    uint64_t off;
    char name[256], type[200], value[96];
};

typedef void (*row_fn)(const struct row *row, void *ctx);

struct walk {
    const uint8_t *bytes, *known;
    uint64_t size;
    row_fn fn;
    void *ctx;
};

static int have(const struct walk *w, uint64_t off, uint64_t n)
{
    if (!w->bytes || off + n > w->size)
        return 0;
    for (uint64_t k = off; k < off + n; k++)
        if (!w->known[k])
            return 0;
    return 1;
}

/* The value of a scalar of type t (stripped) at off, or "" when unknown. */
static void scalar(const struct walk *w, Dwarf_Die *t, uint64_t off, char *out, size_t cap)
{
    uint64_t n = type_size(t), u = 0;
    int tag = dwarf_tag(t);
    Dwarf_Attribute a;
    Dwarf_Word enc = 0;
    out[0] = 0;
    if (!n || n > 8 || !have(w, off, n))
        return;
    memcpy(&u, w->bytes + off, n);
    if (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type) {
        snprintf(out, cap, "0x%" PRIx64, u);
        return;
    }
    if (tag == DW_TAG_base_type && dwarf_attr(t, DW_AT_encoding, &a))
        dwarf_formudata(&a, &enc);
    if (enc == DW_ATE_float && n == 8) {
        double d;
        memcpy(&d, &u, 8);
        snprintf(out, cap, "%g", d);
    } else if (enc == DW_ATE_float && n == 4) {
        float f;
        memcpy(&f, &u, 4);
        snprintf(out, cap, "%g", (double)f);
    } else if (enc == DW_ATE_signed || enc == DW_ATE_signed_char ||
               tag == DW_TAG_enumeration_type) {
        int64_t v = n == 8 ? (int64_t)u : (int64_t)(u << (64 - 8 * n)) >> (64 - 8 * n);
        snprintf(out, cap, "%" PRId64, v);
    } else if (tag == DW_TAG_base_type) {
        snprintf(out, cap, "%" PRIu64, u);
    }
}

static void walk_type(const struct walk *w, Dwarf_Die t, uint64_t off, const char *name, int depth);

/* An array of chars, as a quoted string to its first NUL (at most 64
 * bytes shown); 0 when t is not one. */
static int char_string(const struct walk *w, Dwarf_Die *t, uint64_t off, char *out, size_t cap)
{
    Dwarf_Die el;
    Dwarf_Attribute a;
    Dwarf_Word enc = 0;
    if (type_of(t, &el) < 0 || strip(&el) < 0 || type_size(&el) != 1 ||
        !dwarf_attr(&el, DW_AT_encoding, &a) || dwarf_formudata(&a, &enc) != 0 ||
        (enc != DW_ATE_signed_char && enc != DW_ATE_unsigned_char))
        return 0;
    uint64_t n = type_size(t);
    size_t k = 0;
    out[0] = 0;
    if (!have(w, off, n))
        return 1;
    out[k++] = '"';
    for (uint64_t i = 0; i < n && i < 64 && w->bytes[off + i] && k + 6 < cap; i++) {
        unsigned char ch = w->bytes[off + i];
        k += (size_t)snprintf(out + k, cap - k,
                              ch >= 0x20 && ch < 0x7f && ch != '"' ? "%c" : "\\x%02x", ch);
    }
    snprintf(out + k, cap - k, "\"");
    return 1;
}

static void walk_members(const struct walk *w, Dwarf_Die *t, uint64_t off, const char *name,
                         int depth)
{
    Dwarf_Die m;
    if (dwarf_child(t, &m) != 0)
        return;
    do {
        uint64_t mo;
        Dwarf_Die mt;
        int tag = dwarf_tag(&m);
        if ((tag != DW_TAG_member && tag != DW_TAG_inheritance) || member_offset(&m, &mo) < 0 ||
            type_of(&m, &mt) < 0 || dwarf_hasattr(&m, DW_AT_bit_size))
            continue;
        char sub[256];
        Dwarf_Die bt = mt;
        const char *mn = tag != DW_TAG_inheritance ? dwarf_diename(&m)
                         : strip(&bt) == 0         ? dwarf_diename(&bt)
                                                   : NULL;
        snprintf(sub, sizeof(sub), "%s%s%s", name, *name ? "." : "", mn ? mn : "?");
        walk_type(w, mt, off + mo, sub, depth + 1);
    } while (dwarf_siblingof(&m, &m) == 0);
}

static void walk_type(const struct walk *w, Dwarf_Die t, uint64_t off, const char *name, int depth)
{
    struct row row = {.off = off};
    snprintf(row.name, sizeof(row.name), "%s", name);
    type_name(&t, row.type, sizeof(row.type), 0);
    if (strip(&t) < 0 || off >= w->size)
        return;
    int tag = dwarf_tag(&t);
    int aggregate =
        tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_union_type;
    if (aggregate && depth < MAX_NEST) {
        walk_members(w, &t, off, name, depth);
        return;
    }
    if (tag == DW_TAG_array_type && char_string(w, &t, off, row.value, sizeof(row.value))) {
        w->fn(&row, w->ctx);
        return;
    }
    if (tag == DW_TAG_array_type && depth < MAX_NEST) {
        Dwarf_Die el;
        uint64_t es, total = type_size(&t);
        if (type_of(&t, &el) == 0 && (es = type_size(&el)) > 0 && total / es <= MAX_ELEMS) {
            for (uint64_t k = 0; k < total / es; k++) {
                char sub[256];
                snprintf(sub, sizeof(sub), "%s[%" PRIu64 "]", name, k);
                walk_type(w, el, off + k * es, sub, depth + 1);
            }
            return;
        }
    }
    if (!aggregate && tag != DW_TAG_array_type)
        scalar(w, &t, off, row.value, sizeof(row.value));
    w->fn(&row, w->ctx);
}

static void walk_block(const struct mvz_typed *t, const uint8_t *bytes, const uint8_t *known,
                       row_fn fn, void *ctx)
{
    struct walk w = {bytes, known, t->size, fn, ctx};
    uint64_t n = t->count < MAX_ELEMS ? t->count : MAX_ELEMS;
    for (uint64_t k = 0; k < n; k++) {
        char name[32] = "";
        if (t->count > 1)
            snprintf(name, sizeof(name), "[%" PRIu64 "]", k);
        walk_type(&w, t->die, k * t->elem, name, 0);
    }
}

static void print_row(const struct row *row, void *ctx)
{
    FILE *out = ctx;
    fprintf(out, "  +%-6" PRIu64 " %-28s %s%s%s\n", row->off, row->type,
            *row->name ? row->name : "(the element)", *row->value ? " = " : "", row->value);
}

void mvz_typed_print(const struct mvz_typed *t, FILE *out, const uint8_t *bytes,
                     const uint8_t *known)
{
    if (t->count > 1)
        fprintf(out, "\ntype: %s [%" PRIu64 "], an array (%s):\n", t->name, t->count, t->how);
    else
        fprintf(out, "\ntype: %s (%s):\n", t->name, t->how);
    walk_block(t, bytes, known, print_row, out);
    if (t->count > MAX_ELEMS)
        fprintf(out, "  ... %" PRIu64 " more elements\n", t->count - MAX_ELEMS);
    if (!bytes)
        fprintf(out, "  (values: the bytes were not stored; memviz run --snapshot-contents)\n");
}

static void json_row(const struct row *row, void *ctx)
{
    struct mvz_json *j = ctx;
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "offset", row->off);
    mvz_json_put_string(j, "name", row->name);
    mvz_json_put_string(j, "type", row->type);
    mvz_json_put_string(j, "value", *row->value ? row->value : NULL);
    mvz_json_end_object(j);
}

void mvz_typed_json(const struct mvz_typed *t, struct mvz_json *j, const uint8_t *bytes,
                    const uint8_t *known)
{
    mvz_json_key(j, "type");
    mvz_json_begin_object(j);
    mvz_json_put_string(j, "name", t->name);
    mvz_json_put_string(j, "how", t->how);
    mvz_json_put_uint(j, "elements", t->count);
    mvz_json_put_uint(j, "element_size", t->elem);
    mvz_json_key(j, "members");
    mvz_json_begin_array(j);
    walk_block(t, bytes, known, json_row, j);
    mvz_json_end_array(j);
    mvz_json_end_object(j);
}

void mvz_typed_free(struct mvz_typed *t)
{
    memset(t, 0, sizeof(*t));
}
