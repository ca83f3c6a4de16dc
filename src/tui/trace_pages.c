/*
 * trace_pages.c - `memviz tui`'s trace pages (trace_pages.h). The summary
 * and the snapshot page read the same JSON documents the web UI gets
 * (src/ui/), so the two UIs show the same numbers; the tree page walks the
 * model's top-down call tree, re-sorted by the chosen cost, keeping which
 * nodes are open.
 */
#include "tui/trace_pages.h"

#include <curses.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/snapshot.h"
#include "trace/format.h"
#include "ui/heapmap.h"
#include "ui/sites.h"
#include "ui/snaps.h"
#include "util/fmt.h"

enum { PAGE_SUMMARY, PAGE_TREE, PAGE_SNAPSHOT, PAGE_HEAPMAP, PAGE_TIMELINE, NPAGES };
static const char *const NAMES[NPAGES] = {"summary", "tree", "snapshot", "heap map", "timeline"};
/* A heap map's cells, a character each: the top sites' letters, '+' for
 * another site, '.' for an empty cell. */
static const char SITE_CHARS[] = "ABCDEFGHIJKLMNO";

struct trace_pages {
    struct tui_pages pages;
    struct mvz_ui_model *m;
    enum mvz_cost cost;
    json_t *sites;          /* the top sites by cost, as /api/sites */
    json_t *snapshot;       /* the snapshot shown, as /api/snapshot; NULL if none */
    uint32_t *snap_ids;     /* the complete snapshots, in file order */
    size_t nsnaps, snap_at; /* snap_at: the one shown (the exit's, else the last) */
    json_t *heapmap;        /* its heap map, as /api/heapmap, for the screen's size */
    size_t heapmap_cells;
    char snap_error[256];
    /* the tree page */
    uint8_t *open;  /* per node */
    uint32_t *rows; /* the nodes shown, in order */
    size_t nrows, cursor, scroll;
};

/* doc (freed here) parsed; NULL when there is none. The caller makes doc
 * first: an argument that sets len is not done before a sibling reads it. */
static json_t *parse(char *doc, size_t len)
{
    json_t *j = doc ? json_loadb(doc, len, 0, NULL) : NULL;
    free(doc);
    return j;
}

static void load_sites(struct trace_pages *t)
{
    size_t len = 0;
    json_decref(t->sites);
    char *doc = mvz_ui_sites_json(t->m, &t->m->whole, t->cost, 50, &len);
    t->sites = parse(doc, len);
}

static uint64_t num(json_t *o, const char *k)
{
    return (uint64_t)json_integer_value(json_object_get(o, k));
}

/* ---- summary ---- */
static void draw_summary(struct trace_pages *t, int top, int bottom)
{
    const struct mvz_summary *s = &t->m->whole.p.sum;
    char a[32], b[32], c[32];
    int r = top + 1;
    mvprintw(r++, 0, "duration %s   threads %zu   peak RSS %s",
             mvz_fmt_duration(s->duration_ns, a, sizeof(a)), t->m->whole.p.nthreads,
             mvz_fmt_bytes(t->m->whole.p.trace.peak_rss, b, sizeof(b)));
    mvprintw(r++, 0, "allocation calls %s   frees %s   bytes allocated %s",
             mvz_fmt_count(s->allocations, a, sizeof(a)), mvz_fmt_count(s->frees, b, sizeof(b)),
             mvz_fmt_bytes(s->allocated_bytes, c, sizeof(c)));
    mvprintw(r++, 0, "peak heap %s at %s", mvz_fmt_bytes(s->peak_bytes, a, sizeof(a)),
             mvz_fmt_duration(s->peak_time_ns, b, sizeof(b)));
    mvprintw(r++, 0, "not freed %s in %s blocks   temporary %s",
             mvz_fmt_bytes(s->leaked_bytes, a, sizeof(a)),
             mvz_fmt_count(s->leaked_blocks, b, sizeof(b)),
             mvz_fmt_count(s->temporary, c, sizeof(c)));
    r++;
    mvprintw(r++, 0, "Top sites by %s (c: another cost):", mvz_cost_name(t->cost));
    json_t *list = json_object_get(t->sites, "sites");
    int bytes = json_is_true(json_object_get(t->sites, "bytes"));
    for (size_t i = 0; i < json_array_size(list) && r < bottom; i++) {
        json_t *site = json_array_get(list, i),
               *f0 = json_array_get(json_object_get(site, "frames"), 0);
        uint64_t v = num(site, "cost");
        const char *file = json_string_value(json_array_get(f0, 1));
        mvprintw(r++, 0, "  %3zu %12s  %10s calls  %s%s%s:%lld", i + 1,
                 bytes ? mvz_fmt_bytes(v, a, sizeof(a)) : mvz_fmt_count(v, a, sizeof(a)),
                 mvz_fmt_count(num(site, "allocations"), b, sizeof(b)),
                 f0 ? json_string_value(json_array_get(f0, 0)) : "??", file ? "  " : "",
                 file ? file : "", file ? (long long)json_integer_value(json_array_get(f0, 2)) : 0);
    }
}

/* ---- the call tree ---- */
static const struct mvz_calltree *tree(struct trace_pages *t)
{
    return &t->m->whole.top_down;
}

static void add_rows(struct trace_pages *t, uint32_t id)
{
    t->rows[t->nrows++] = id;
    if (!t->open[id])
        return;
    const struct mvz_calltree *tr = tree(t);
    for (uint32_t k = tr->nodes[id].first_child; k; k = tr->nodes[k].next_sibling)
        if (tr->nodes[k].incl[t->cost])
            add_rows(t, k);
}

static size_t depth_of(const struct mvz_calltree *tr, uint32_t id)
{
    size_t d = 0;
    for (; id; id = tr->nodes[id].parent)
        d++;
    return d;
}

static void draw_tree(struct trace_pages *t, int top, int bottom)
{
    const struct mvz_calltree *tr = tree(t);
    t->nrows = 0;
    if (tr->n)
        add_rows(t, 0);
    if (t->cursor >= t->nrows)
        t->cursor = t->nrows ? t->nrows - 1 : 0;
    int height = bottom - top - 2;
    if (height < 1)
        return;
    if (t->cursor < t->scroll)
        t->scroll = t->cursor;
    if (t->cursor >= t->scroll + (size_t)height)
        t->scroll = t->cursor - (size_t)height + 1;
    uint64_t total = tr->n ? tr->nodes[0].incl[t->cost] : 0;
    int bytes = mvz_cost_is_bytes(t->cost);
    mvprintw(top + 1, 0,
             "Call tree by %s, callers first (c: cost, enter/right: open, left: close, "
             "x: open the heaviest path)",
             mvz_cost_name(t->cost));
    for (size_t i = t->scroll; i < t->nrows && (int)(i - t->scroll) < height; i++) {
        uint32_t id = t->rows[i];
        const struct mvz_tree_node *n = &tr->nodes[id];
        char a[32];
        size_t d = depth_of(tr, id);
        if (i == t->cursor)
            attron(A_REVERSE);
        mvprintw(top + 2 + (int)(i - t->scroll), 0, "%12s %5.1f%%  %*s%s %.*s",
                 bytes ? mvz_fmt_bytes(n->incl[t->cost], a, sizeof(a))
                       : mvz_fmt_count(n->incl[t->cost], a, sizeof(a)),
                 total ? 100.0 * (double)n->incl[t->cost] / (double)total : 0.0,
                 (int)(d > 40 ? 40 : d), "", n->first_child ? (t->open[id] ? "-" : "+") : " ",
                 COLS > 70 ? COLS - 70 : 10, id ? mvz_strtab_get(&tr->names, n->func) : "all");
        if (i == t->cursor)
            attroff(A_REVERSE);
    }
}

/* Opens the heaviest child from the cursor down, and moves there. */
static void open_heaviest(struct trace_pages *t)
{
    const struct mvz_calltree *tr = tree(t);
    uint32_t id = t->nrows ? t->rows[t->cursor] : 0;
    while (tr->nodes[id].first_child) {
        t->open[id] = 1;
        id = tr->nodes[id].first_child; /* sorted: the heaviest first */
    }
    t->nrows = 0;
    add_rows(t, 0);
    for (size_t i = 0; i < t->nrows; i++)
        if (t->rows[i] == id)
            t->cursor = i;
}

static void tree_key(struct trace_pages *t, int ch)
{
    const struct mvz_calltree *tr = tree(t);
    uint32_t id = t->nrows ? t->rows[t->cursor] : 0;
    if ((ch == KEY_DOWN || ch == 'j') && t->cursor + 1 < t->nrows)
        t->cursor++;
    else if ((ch == KEY_UP || ch == 'k') && t->cursor)
        t->cursor--;
    else if (ch == KEY_NPAGE)
        t->cursor += 20;
    else if (ch == KEY_PPAGE)
        t->cursor = t->cursor > 20 ? t->cursor - 20 : 0;
    else if (ch == KEY_RIGHT || ch == 'l' || ch == '\n' || ch == KEY_ENTER)
        t->open[id] = 1;
    else if ((ch == KEY_LEFT || ch == 'h') && t->open[id] && tr->nodes[id].first_child)
        t->open[id] = 0;
    else if (ch == KEY_LEFT || ch == 'h') /* closed already: to the parent */
        for (size_t i = 0; i < t->nrows; i++)
            if (id && t->rows[i] == tr->nodes[id].parent)
                t->cursor = i;
    if (ch == 'x')
        open_heaviest(t);
}

/* ---- the snapshot ---- */
static void draw_snapshot(struct trace_pages *t, int top, int bottom)
{
    if (!t->snapshot) {
        mvprintw(top + 1, 0, "No heap snapshot: %s", t->snap_error);
        return;
    }
    json_t *info = json_object_get(t->snapshot, "snapshot");
    char a[32], b[32];
    int r = top + 1;
    mvprintw(r++, 0, "Snapshot \"%s\" at %s: %s blocks (%zu of %zu; [ and ]: another)",
             json_string_value(json_object_get(info, "name")),
             mvz_fmt_duration(num(info, "time_ns"), a, sizeof(a)),
             mvz_fmt_count(num(info, "blocks"), b, sizeof(b)), t->snap_at + 1, t->nsnaps);
    r++;
    json_t *leaks = json_object_get(t->snapshot, "leaks");
    const char *kind;
    json_t *v;
    mvprintw(r++, 0, "Leak kinds (memcheck's):");
    json_object_foreach(leaks, kind, v)
    {
        mvprintw(r++, 2, "%-10s %12s in %s blocks", kind,
                 mvz_fmt_bytes(num(v, "bytes"), a, sizeof(a)),
                 mvz_fmt_count(num(v, "blocks"), b, sizeof(b)));
    }
    r++;
    mvprintw(r++, 0, "Roots by retained size:");
    json_t *roots = json_object_get(t->snapshot, "roots");
    for (size_t i = 0; i < json_array_size(roots) && i < 8 && r < bottom; i++) {
        json_t *x = json_array_get(roots, i);
        mvprintw(r++, 2, "%12s  %s", mvz_fmt_bytes(num(x, "retained_bytes"), a, sizeof(a)),
                 json_string_value(json_object_get(x, "label")));
    }
    r++;
    mvprintw(r++, 0, "Sites by retained size, and the path that holds the first:");
    json_t *sites = json_object_get(t->snapshot, "sites");
    for (size_t i = 0; i < json_array_size(sites) && r < bottom; i++) {
        json_t *x = json_array_get(sites, i), *f0 = json_array_get(json_object_get(x, "frames"), 0);
        mvprintw(r++, 2, "%12s  %s", mvz_fmt_bytes(num(x, "retained_bytes"), a, sizeof(a)),
                 f0 ? json_string_value(json_array_get(f0, 0)) : "??");
        json_t *path = json_object_get(x, "path");
        for (size_t k = 0; i == 0 && k < json_array_size(path) && r < bottom; k++)
            mvprintw(r++, 6, "%s%s", k ? "-> " : "", json_string_value(json_array_get(path, k)));
    }
}

/* ---- the heap map, in characters ---- */
static void draw_heapmap(struct trace_pages *t, int top, int bottom)
{
    int width = COLS > 8 ? COLS - 2 : 8, rows = bottom - top - 4 - 8;
    size_t want = (size_t)width * (size_t)(rows > 4 ? rows : 4);
    if (!t->heapmap || t->heapmap_cells != want) {
        size_t len = 0;
        char err[256];
        json_decref(t->heapmap);
        pthread_mutex_lock(&t->m->build_lock);
        uint32_t id = t->nsnaps ? t->snap_ids[t->snap_at] : UINT32_MAX;
        char *doc = mvz_ui_heapmap_json(t->m, id, want, &len, err, sizeof(err));
        pthread_mutex_unlock(&t->m->build_lock);
        t->heapmap = parse(doc, len);
        t->heapmap_cells = want;
        if (!t->heapmap) {
            mvprintw(top + 1, 0, "No heap map: %s", err);
            return;
        }
    }
    json_t *hm = t->heapmap, *colour = json_object_get(hm, "colour");
    char a[32], b[32];
    mvprintw(top + 1, 0, "Heap map of \"%s\": %s blocks in address order, %s a character",
             json_string_value(json_object_get(hm, "name")),
             mvz_fmt_count(num(hm, "blocks"), a, sizeof(a)),
             mvz_fmt_bytes(num(hm, "cell_bytes"), b, sizeof(b)));
    size_t n = json_array_size(colour);
    int r = top + 3;
    for (size_t i = 0; i < n && r < bottom - 8; r++)
        for (int x = 0; x < width && i < n; x++, i++) {
            json_int_t c = json_integer_value(json_array_get(colour, i));
            mvaddch(r, 1 + x,
                    c == 0                                      ? '.'
                    : c <= (json_int_t)(sizeof(SITE_CHARS) - 1) ? SITE_CHARS[c - 1]
                                                                : '+');
        }
    json_t *sites = json_object_get(hm, "sites");
    for (size_t k = 0; k < json_array_size(sites) && r + 1 < bottom; k++) {
        json_t *x = json_array_get(sites, k);
        if (k % 2 == 0)
            r++;
        mvprintw(r, k % 2 ? COLS / 2 : 0, "%c %10s  %.*s", SITE_CHARS[k],
                 mvz_fmt_bytes(num(x, "bytes"), a, sizeof(a)), COLS / 2 - 16,
                 json_string_value(json_object_get(x, "name")));
    }
}

/* ---- the heap over the whole run ---- */
/* Column x of width covers the model's points [x * n / width, (x + 1) *
 * n / width): its bar is the highest heap among them. */
static uint64_t column_max(const struct mvz_timeline *tl, int x, int width)
{
    size_t a = (size_t)x * tl->npoints / (size_t)width,
           b = (size_t)(x + 1) * tl->npoints / (size_t)width;
    uint64_t most = 0;
    for (size_t i = a; i < b || i == a; i++)
        if (i < tl->npoints && tl->heap_max[i] > most)
            most = tl->heap_max[i];
    return most;
}

static void draw_timeline(struct trace_pages *t, int top, int bottom)
{
    const struct mvz_timeline *tl = &t->m->tl;
    const struct mvz_summary *s = &t->m->whole.p.sum;
    int width = COLS - 12, height = bottom - top - 6;
    char a[32], b[32], c[32];
    mvprintw(top + 1, 0, "Heap over the whole run (%s): the peak, %s at %s, is the ^",
             mvz_fmt_duration(s->duration_ns, a, sizeof(a)),
             mvz_fmt_bytes(s->peak_bytes, b, sizeof(b)),
             mvz_fmt_duration(s->peak_time_ns, c, sizeof(c)));
    if (width < 10 || height < 3 || !tl->npoints || !s->peak_bytes)
        return;
    int base = top + 2 + height;
    mvprintw(top + 2, 0, "%10s", mvz_fmt_bytes(s->peak_bytes, a, sizeof(a)));
    mvprintw(base - 1, 0, "%10s", "0");
    for (int x = 0; x < width; x++) {
        uint64_t h = column_max(tl, x, width);
        int bar = (int)((h * (uint64_t)height + s->peak_bytes - 1) / s->peak_bytes);
        for (int r = 0; r < bar && r < height; r++)
            mvaddch(base - 1 - r, 11 + x, '#');
    }
    uint64_t span = tl->to_ns > tl->from_ns ? tl->to_ns - tl->from_ns : 1;
    int px = (int)((double)(s->peak_time_ns - tl->from_ns) / (double)span * width);
    mvaddch(base, 11 + (px < width ? px : width - 1), '^');
    /* the program's phases under the axis, each at its time */
    const struct mvz_user *u = &t->m->whole.p.trace.user;
    for (size_t i = 0; i < u->nphases; i++) {
        int x = (int)((double)(u->phases[i].ts - tl->from_ns) / (double)span * width);
        if (x >= 0 && x < width)
            mvprintw(base + 1, 11 + x, "|%.*s", width - x - 1, u->phases[i].text);
    }
    mvprintw(base + 2, 11, "0%*s", width - 1, mvz_fmt_duration(s->duration_ns, a, sizeof(a)));
}

/* ---- which snapshot ---- */
static void list_snapshots(struct trace_pages *t)
{
    struct mvz_snap_info *list = NULL;
    size_t n = 0;
    char err[256];
    if (mvz_ui_snap_list(t->m, &list, &n, err, sizeof(err)) < 0)
        return;
    t->snap_ids = calloc(n + 1, sizeof(*t->snap_ids));
    long at_exit = -1;
    for (size_t i = 0; t->snap_ids && i < n; i++)
        if (list[i].complete) {
            if (list[i].trigger == MVZ_SNAP_EXIT)
                at_exit = (long)t->nsnaps;
            t->snap_ids[t->nsnaps++] = list[i].id;
        }
    t->snap_at = at_exit >= 0 ? (size_t)at_exit : t->nsnaps ? t->nsnaps - 1 : 0;
    mvz_snap_infos_free(list, n);
}

static void load_snapshot(struct trace_pages *t)
{
    size_t len = 0;
    uint32_t id = t->nsnaps ? t->snap_ids[t->snap_at] : UINT32_MAX;
    json_decref(t->snapshot);
    char *doc = mvz_ui_snapshot_json(t->m, id, &len, t->snap_error, sizeof(t->snap_error));
    t->snapshot = parse(doc, len);
    json_decref(t->heapmap);
    t->heapmap = NULL;
}

/* [ and ]: the snapshot before or after the one shown. */
static void snapshot_key(struct trace_pages *t, int ch)
{
    if (ch == '[' && t->snap_at > 0)
        t->snap_at--;
    else if (ch == ']' && t->snap_at + 1 < t->nsnaps)
        t->snap_at++;
    else
        return;
    load_snapshot(t);
}

/* ---- the pages ---- */
static void draw(void *ctx, int page, int top, int bottom)
{
    struct trace_pages *t = ctx;
    if (page == PAGE_SUMMARY)
        draw_summary(t, top, bottom);
    else if (page == PAGE_TREE)
        draw_tree(t, top, bottom);
    else if (page == PAGE_SNAPSHOT)
        draw_snapshot(t, top, bottom);
    else if (page == PAGE_HEAPMAP)
        draw_heapmap(t, top, bottom);
    else
        draw_timeline(t, top, bottom);
}

static void key(void *ctx, int page, int ch)
{
    struct trace_pages *t = ctx;
    if (ch == 'c' && page != PAGE_SNAPSHOT) {
        t->cost = (enum mvz_cost)((t->cost + 1) % MVZ_COST_COUNT);
        mvz_calltree_sort(&t->m->whole.top_down, t->cost);
        load_sites(t);
    } else if (page == PAGE_TREE) {
        tree_key(t, ch);
    } else if (page == PAGE_SNAPSHOT || page == PAGE_HEAPMAP) {
        snapshot_key(t, ch);
    }
}

static const char *help(void *ctx, int page)
{
    (void)ctx;
    if (page == PAGE_SUMMARY)
        return "c        rank the sites by the next cost (peak, leaked, allocations,\n"
               "         bytes, temporary)\n";
    if (page == PAGE_TREE)
        return "up, down (k, j)  move; page up, page down: 20 lines\n"
               "enter, right, l  open the frame: its callees\n"
               "left, h          close it, or go to its caller\n"
               "x                open the heaviest path from here\n"
               "c                the next cost\n";
    if (page == PAGE_SNAPSHOT)
        return "[ and ]  the snapshot before, after (first: the one at exit)\n"
               "memviz leaks and memviz retain say more\n";
    if (page == PAGE_TIMELINE)
        return "the heap over the whole run, the highest it reached in each column;\n"
               "^ marks the peak, | the program's phases (page 1 moves through time)\n";
    return "[ and ]  the snapshot before, after\n"
           "the snapshot's blocks in address order, a character a cell:\n"
           "a letter for each of the top sites (listed under the map), + another\n"
           "site, . an empty cell\n";
}

struct trace_pages *trace_pages_new(struct mvz_ui_model *m)
{
    struct trace_pages *t = calloc(1, sizeof(*t));
    size_t n = m->whole.top_down.n + 1;
    if (!t || !(t->open = calloc(n, 1)) || !(t->rows = calloc(n, sizeof(*t->rows)))) {
        trace_pages_free(t);
        return NULL;
    }
    t->m = m;
    t->cost = MVZ_COST_PEAK;
    t->open[0] = 1;
    mvz_calltree_sort(&m->whole.top_down, t->cost);
    load_sites(t);
    list_snapshots(t);
    load_snapshot(t);
    t->pages = (struct tui_pages){NPAGES, NAMES, draw, key, help, t};
    return t;
}

const struct tui_pages *trace_pages_get(struct trace_pages *t)
{
    return &t->pages;
}

void trace_pages_free(struct trace_pages *t)
{
    if (!t)
        return;
    json_decref(t->sites);
    json_decref(t->snapshot);
    json_decref(t->heapmap);
    free(t->snap_ids);
    free(t->open);
    free(t->rows);
    free(t);
}
