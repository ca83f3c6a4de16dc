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

#include "ui/assets.h"
#include "ui/series.h"
#include "ui/sites.h"

#define MAX_FRAMES_FIRST 8000
#define MIN_FRAMES 250

struct part {
    char *key, *doc;
    size_t len;
};

static const char *const COSTS[] = {"peak", "leaked", "allocations", "bytes", "temporary"};
static const char *const GROUPINGS[] = {"site", "function", "module"};
#define SERIES_TOP 10
#define SITES_TOP 50
#define MIN_SITES 5
#define NPARTS (3 + 3 * MVZ_COST_COUNT + 3)

static void free_parts(struct part *p)
{
    for (size_t i = 0; i < NPARTS; i++) {
        free(p[i].key);
        free(p[i].doc);
    }
    memset(p, 0, NPARTS * sizeof(*p));
}

/* Every document, the flame graphs with at most max_frames frames each. */
static int make_parts(struct mvz_ui_model *m, struct part *p, size_t max_frames, size_t sites)
{
    size_t n = 0;
    p[n].key = strdup("/api/summary");
    p[n].doc = mvz_ui_summary_json(m, &m->whole, &p[n].len);
    n++;
    p[n].key = strdup("/api/timeline");
    p[n].doc = mvz_ui_timeline_json(m, &p[n].len);
    n++;
    p[n].key = strdup("/api/breakdown");
    p[n].doc = mvz_ui_breakdown_json(m, &m->whole, &p[n].len);
    n++;
    for (int c = 0; c < MVZ_COST_COUNT; c++, n++) {
        char key[96];
        /* the key the UI asks by; the list may be shorter */
        snprintf(key, sizeof(key), "/api/sites?cost=%s&top=%d", COSTS[c], SITES_TOP);
        p[n].key = strdup(key);
        p[n].doc = mvz_ui_sites_json(m, &m->whole, (enum mvz_cost)c, sites, &p[n].len);
    }
    for (int c = 0; c < MVZ_COST_COUNT; c++)
        for (int up = 0; up < 2; up++, n++) {
            char key[96];
            snprintf(key, sizeof(key), "/api/flame?cost=%s&direction=%s", COSTS[c],
                     up ? "bottom-up" : "top-down");
            p[n].key = strdup(key);
            p[n].doc =
                mvz_ui_flame_json(&m->whole, (enum mvz_cost)c, up, 0.001, max_frames, &p[n].len);
        }
    for (int b = 0; b < 3; b++, n++) {
        char key[96], err[256];
        snprintf(key, sizeof(key), "/api/series?by=%s&top=%d", GROUPINGS[b], SERIES_TOP);
        p[n].key = strdup(key);
        p[n].doc =
            mvz_ui_series_json(m, (enum mvz_ui_by)b, SERIES_TOP, &p[n].len, err, sizeof(err));
    }
    for (size_t i = 0; i < n; i++)
        if (!p[i].key || !p[i].doc)
            return -1;
    return 0;
}

static size_t parts_size(const struct part *p)
{
    size_t total = 0;
    for (size_t i = 0; i < NPARTS; i++)
        total += p[i].len + strlen(p[i].key) + 8;
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

static void put_data(FILE *out, const struct part *p)
{
    fputs("<script type=\"application/json\" id=\"memviz-data\">{", out);
    for (size_t i = 0; i < NPARTS; i++) {
        fprintf(out, "%s\"%s\":", i ? ",\n" : "", p[i].key);
        size_t len = p[i].len;
        while (len && p[i].doc[len - 1] == '\n')
            len--;
        put_json_safe(out, p[i].doc, len);
    }
    fputs("}</script>\n", out);
}

/* index.html, with the stylesheet link and the script element replaced
 * by their contents. */
static int put_page(FILE *out, const struct part *p, char *err, size_t errlen)
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
    put_data(out, p);
    fputs("<script>\n", out);
    put_js_safe(out, (const char *)js->data, js->len);
    fputs("\n</script>", out);
    const char *rest = at_script + strlen(script);
    fputs(rest, out);
    return 0;
}

int mvz_ui_html_write(struct mvz_ui_model *m, FILE *out, size_t budget, char *err, size_t errlen)
{
    struct part p[NPARTS];
    memset(p, 0, sizeof(p));
    const struct mvz_ui_asset *js = mvz_ui_asset_find("/app.js");
    size_t fixed = js ? js->len + 65536 : 0;
    /* each try halves the flame graphs' frames and the sites listed */
    for (size_t frames = MAX_FRAMES_FIRST, sites = SITES_TOP;; frames /= 2, sites /= 2) {
        if (make_parts(m, p, frames, sites < MIN_SITES ? MIN_SITES : sites) < 0) {
            free_parts(p);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (fixed + parts_size(p) <= budget || frames <= MIN_FRAMES)
            break;
        free_parts(p);
    }
    int rc = put_page(out, p, err, errlen);
    free_parts(p);
    return rc;
}
