/*
 * trace_pages.h - `memviz tui`'s pages on a trace, after the live view:
 * the summary with the top sites, the call tree (expandable, by any cost),
 * the heap snapshot's leaks and retention, and its heap map in
 * characters, from the web UI's model of the trace (src/ui/).
 */
#ifndef MVZ_TUI_TRACE_PAGES_H
#define MVZ_TUI_TRACE_PAGES_H

#include "tui/view.h"
#include "ui/model.h"

struct trace_pages;

/* NULL when out of memory. m must outlive it. */
struct trace_pages *trace_pages_new(struct mvz_ui_model *m);
const struct tui_pages *trace_pages_get(struct trace_pages *t);
void trace_pages_free(struct trace_pages *t);

#endif
