/*
 * view.h - `memviz live`'s terminal view of a live client (client.h).
 */
#ifndef MVZ_TUI_VIEW_H
#define MVZ_TUI_VIEW_H

#include "tui/client.h"

/* Runs the view until the user quits; 0, or -1 when the terminal cannot
 * be used. */
int live_view_run(struct live_client *c);

#endif
