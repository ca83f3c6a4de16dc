/*
 * view.h - `memviz live`'s terminal view of a live client (client.h).
 */
#ifndef MVZ_TUI_VIEW_H
#define MVZ_TUI_VIEW_H

#include "tui/client.h"

/* More pages after the live view (memviz tui: the trace's summary, call
 * tree, snapshots), each drawn between the page bar (line 0) and the key
 * line, and given the keys the view does not take itself. */
struct tui_pages {
    int n;
    const char *const *names;
    void (*draw)(void *ctx, int page, int top, int bottom);
    void (*key)(void *ctx, int page, int ch);
    const char *(*help)(void *ctx, int page); /* the page's keys, one per line */
    void *ctx;
};

/* Runs the view until the user quits; pages may be NULL. 0, or -1 when
 * the terminal cannot be used. */
int live_view_run(struct live_client *c, const struct tui_pages *pages);

#endif
