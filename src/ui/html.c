/*
 * html.c - the web UI as one file (html.h). The page is the UI's own
 * index.html with its stylesheet and script inlined, and a JSON object
 * mapping each query the views make (path?sorted-params, as web/src/api.ts
 * spells it) to the document `memviz ui` would answer. The page then
 * opens with no server and no network.
 *
 * The flame graphs and the site lists are the parts that grow with the
 * program; they are made with fewer frames (the threshold of each
 * doubling) and fewer sites until the whole fits the budget, so that a
 * browser opens any trace's file.
 */
#include "ui/html.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/snapshot.h"

#include "ui/assets.h"
#include "ui/heapmap.h"
#include "ui/lifetimes.h"
#include "ui/places.h"
#include "ui/series.h"
#include "ui/sites.h"
#include "ui/snaps.h"

#define MAX_FRAMES_FIRST 8000
#define MIN_FRAMES 250

struct part {
    char *key, *doc;
    size_t len;
};

struct parts {
    struct part *v;
    size_t n, cap;
    int oom;
};

static const char *const COSTS[] = {"peak", "leaked", "allocations", "bytes", "temporary"};
static const char *const GROUPINGS[] = {"site", "function", "module"};
#define SERIES_TOP 10
#define SITES_TOP 50
#define MIN_SITES 5
#define MAX_SNAPSHOTS 64
#define MAX_HEAPMAPS 16 /* the last ones: a map is about 30 KB */
#define HEAPMAP_CELLS 4096
/* as web/src/heapmap.ts and heat.ts ask (a few hundred KB each) */
#define PLACE_FRAMES 40
#define FRAME_CELLS 2048
#define HEAT_SLICES 200
#define HEAT_CELLS 256

/* Keeps doc (made by the caller: NULL when it failed) under key. */
static void add(struct parts *p, const char *key, char *doc, size_t len)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 32;
        struct part *v = realloc(p->v, cap * sizeof(*v));
        if (!v) {
            free(doc);
            p->oom = 1;
            return;
        }
        p->v = v;
        p->cap = cap;
    }
    char *k = strdup(key);
    if (!k || !doc) {
        free(k);
        free(doc);
        p->oom = 1;
        return;
    }
    p->v[p->n++] = (struct part){k, doc, len};
}

static void free_parts(struct parts *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].key);
        free(p->v[i].doc);
    }
    free(p->v);
    memset(p, 0, sizeof(*p));
}

/* The documents whose size the budget sets: the flame graphs with at most
 * max_frames frames each, the lists with at most sites sites. */
static void make_sized(struct mvz_ui_model *m, struct parts *p, size_t max_frames, size_t sites)
{
    char key[96];
    size_t len = 0;
    for (int c = 0; c < MVZ_COST_COUNT; c++) {
        /* the key the UI asks by; the list may be shorter */
        snprintf(key, sizeof(key), "/api/sites?cost=%s&top=%d", COSTS[c], SITES_TOP);
        char *doc = mvz_ui_sites_json(m, &m->whole, (enum mvz_cost)c, sites, &len);
        add(p, key, doc, len);
        for (int up = 0; up < 2; up++) {
            snprintf(key, sizeof(key), "/api/flame?cost=%s&direction=%s", COSTS[c],
                     up ? "bottom-up" : "top-down");
            doc = mvz_ui_flame_json(&m->whole, (enum mvz_cost)c, up, 0.001, max_frames, &len);
            add(p, key, doc, len);
        }
    }
}

/* The rest: the summary, the timeline and its series, the breakdowns,
 * and the snapshots (the last MAX_SNAPSHOTS complete ones). */
static void make_fixed(struct mvz_ui_model *m, struct parts *p, size_t budget)
{
    char key[96], err[512];
    size_t len = 0;
    char *doc = mvz_ui_summary_json(m, &m->whole, &len);
    add(p, "/api/summary", doc, len);
    doc = mvz_ui_timeline_json(m, &len);
    add(p, "/api/timeline", doc, len);
    doc = mvz_ui_breakdown_json(m, &m->whole, &len);
    add(p, "/api/breakdown", doc, len);
    doc = mvz_ui_lifetimes_json(m, &len, err, sizeof(err));
    add(p, "/api/lifetimes", doc, len);
    /* a large program's call graph (every function and edge) is left out
     * past a quarter of the budget: the view then says memviz ui has it */
    doc = mvz_ui_callgraph_json(m, &len, err, sizeof(err));
    if (doc && len > budget / 4)
        free(doc);
    else
        add(p, "/api/callgraph", doc, len);
    for (int b = 0; b < 3; b++) {
        snprintf(key, sizeof(key), "/api/series?by=%s&top=%d", GROUPINGS[b], SERIES_TOP);
        struct mvz_ui_series_query q = {
            (enum mvz_ui_by)b, SERIES_TOP, MVZ_UI_RANK_PEAK, 0, NULL, NULL, NULL};
        doc = mvz_ui_series_json(m, &q, &len, err, sizeof(err));
        add(p, key, doc, len);
    }
    struct mvz_snap_info *list = NULL;
    size_t n = 0;
    if (mvz_ui_snap_list(m, &list, &n, err, sizeof(err)) < 0)
        return; /* a trace without snapshots: the view says so */
    doc = mvz_ui_snapshots_json(m, &len, err, sizeof(err));
    add(p, "/api/snapshots", doc, len);
    /* --addresses: the moments and the heat map; left out when the
     * addresses cannot be read (the views then say they are not here) */
    if (m->whole.p.trace.addrs_records &&
        (doc = mvz_ui_frames_json(m, PLACE_FRAMES, FRAME_CELLS, &len, err, sizeof(err)))) {
        snprintf(key, sizeof(key), "/api/heapmap/frames?cells=%d", FRAME_CELLS);
        add(p, key, doc, len);
        doc = mvz_ui_heatmap_json(m, HEAT_SLICES, HEAT_CELLS, &len, err, sizeof(err));
        snprintf(key, sizeof(key), "/api/heatmap?cells=%d&slices=%d", HEAT_CELLS, HEAT_SLICES);
        if (doc)
            add(p, key, doc, len);
    }
    size_t complete = 0;
    for (size_t i = n; i-- > 0 && complete < MAX_SNAPSHOTS;) {
        if (!list[i].complete)
            continue;
        snprintf(key, sizeof(key), "/api/snapshot?id=%u", list[i].id);
        doc = mvz_ui_snapshot_json(m, list[i].id, &len, err, sizeof(err));
        add(p, key, doc, len);
        if (complete++ < MAX_HEAPMAPS) {
            snprintf(key, sizeof(key), "/api/heapmap?cells=%d&id=%u", HEAPMAP_CELLS, list[i].id);
            doc = mvz_ui_heapmap_json(m, list[i].id, HEAPMAP_CELLS, &len, err, sizeof(err));
            add(p, key, doc, len);
        }
    }
    if (complete) {
        doc = mvz_ui_snapshot_json(m, UINT32_MAX, &len, err, sizeof(err));
        add(p, "/api/snapshot", doc, len);
        doc = mvz_ui_growth_json(m, 20, &len, err, sizeof(err));
        add(p, "/api/growth", doc, len);
        snprintf(key, sizeof(key), "/api/heapmap?cells=%d", HEAPMAP_CELLS);
        doc = mvz_ui_heapmap_json(m, UINT32_MAX, HEAPMAP_CELLS, &len, err, sizeof(err));
        add(p, key, doc, len);
    }
    mvz_snap_infos_free(list, n);
}

static size_t parts_size(const struct parts *p)
{
    size_t total = 0;
    for (size_t i = 0; i < p->n; i++)
        total += p->v[i].len + strlen(p->v[i].key) + 8;
    return total;
}

/* JSON inside a script element: a '<' can only be in a string there, and
 * as \u003c it cannot end the element ("</script") or open a comment. */
static void put_json_safe(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '<')
            fputs("\\u003c", out);
        else
            fputc(s[i], out);
    }
}

/* The script itself: "</script" can only be in a string, a template or a
 * regular expression there, where "<\/script" means the same. */
static void put_js_safe(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '<' && i + 8 <= len && !strncasecmp(s + i, "</script", 8)) {
            fputs("<\\/", out);
            i++;
        } else {
            fputc(s[i], out);
        }
    }
}

static void put_data(FILE *out, const struct parts *fixed, const struct parts *sized)
{
    fputs("<script type=\"application/json\" id=\"memviz-data\">{", out);
    const struct parts *all[2] = {fixed, sized};
    int first = 1;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < all[k]->n; i++, first = 0) {
            const struct part *p = &all[k]->v[i];
            fprintf(out, "%s\"%s\":", first ? "" : ",\n", p->key);
            size_t len = p->len;
            while (len && p->doc[len - 1] == '\n')
                len--;
            put_json_safe(out, p->doc, len);
        }
    fputs("}</script>\n", out);
}

/* index.html, with the stylesheet link and the script element replaced
 * by their contents. */
static int put_page(FILE *out, const struct parts *fixed, const struct parts *sized, char *err,
                    size_t errlen)
{
    const struct mvz_ui_asset *html = mvz_ui_asset_find("/"), *css = mvz_ui_asset_find("/app.css"),
                              *js = mvz_ui_asset_find("/app.js");
    static const char link[] = "<link rel=\"stylesheet\" href=\"app.css\">";
    static const char script[] = "<script src=\"app.js\"></script>";
    const char *page = html ? (const char *)html->data : NULL;
    const char *at_link = page ? strstr(page, link) : NULL;
    const char *at_script = page ? strstr(page, script) : NULL;
    if (!css || !js || !at_link || !at_script || at_script < at_link) {
        snprintf(err, errlen, "this memviz was built without its web UI");
        return -1;
    }
    fwrite(page, 1, (size_t)(at_link - page), out);
    fputs("<style>\n", out);
    fwrite(css->data, 1, css->len, out);
    fputs("</style>", out);
    const char *after_link = at_link + strlen(link);
    fwrite(after_link, 1, (size_t)(at_script - after_link), out);
    put_data(out, fixed, sized);
    fputs("<script>\n", out);
    put_js_safe(out, (const char *)js->data, js->len);
    fputs("\n</script>", out);
    const char *rest = at_script + strlen(script);
    fputs(rest, out);
    return 0;
}

int mvz_ui_html_write(struct mvz_ui_model *m, FILE *out, size_t budget, char *err, size_t errlen)
{
    struct parts fixed = {0}, sized = {0};
    make_fixed(m, &fixed, budget);
    const struct mvz_ui_asset *js = mvz_ui_asset_find("/app.js");
    size_t base = (js ? js->len : 0) + 65536 + parts_size(&fixed);
    /* each try halves the flame graphs' frames and the sites listed */
    for (size_t frames = MAX_FRAMES_FIRST, sites = SITES_TOP; !fixed.oom; frames /= 2, sites /= 2) {
        make_sized(m, &sized, frames, sites < MIN_SITES ? MIN_SITES : sites);
        if (sized.oom || base + parts_size(&sized) <= budget || frames <= MIN_FRAMES)
            break;
        free_parts(&sized);
    }
    int rc = -1;
    if (fixed.oom || sized.oom)
        snprintf(err, errlen, "out of memory");
    else
        rc = put_page(out, &fixed, &sized, err, errlen);
    free_parts(&fixed);
    free_parts(&sized);
    return rc;
}
