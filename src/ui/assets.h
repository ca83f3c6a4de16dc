/*
 * assets.h - the web UI's files (web/, bundled by esbuild), compiled
 * into the memviz binary by scripts/embed_assets.py, so that `memviz ui`
 * and `memviz html` need neither node nor network where they run.
 */
#ifndef MVZ_UI_ASSETS_H
#define MVZ_UI_ASSETS_H

#include <stddef.h>

struct mvz_ui_asset {
    const char *path; /* as requested: "/", "/app.js", ... */
    const char *type; /* Content-Type */
    const unsigned char *data;
    size_t len;
};

extern const struct mvz_ui_asset mvz_ui_assets[];
extern const size_t mvz_ui_nassets;

/* The asset served at path, or NULL. */
const struct mvz_ui_asset *mvz_ui_asset_find(const char *path);

#endif
