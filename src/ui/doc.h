/*
 * doc.h - a JSON document built in memory, for the UI's queries: open,
 * write through j, close to get the text (malloc'd) and its length.
 */
#ifndef MVZ_UI_DOC_H
#define MVZ_UI_DOC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/symbols.h"
#include "util/json.h"

struct mvz_ui_doc {
    char *buf;
    size_t len;
    FILE *f;
    struct mvz_json j;
};

/* 0, or -1 when out of memory. */
int mvz_ui_doc_open(struct mvz_ui_doc *d);
/* The text, ending in a newline, or NULL when out of memory. */
char *mvz_ui_doc_close(struct mvz_ui_doc *d, size_t *len);
/* "frames": stack's frames, innermost first, at most max (64 at the
 * most), each [function, file, line, module]. */
void mvz_ui_put_frames(struct mvz_json *j, struct mvz_symbols *sym, uint32_t stack, size_t max);
/* A site as the heap maps list it: {stack_id, name (its function and the
 * caller's: an allocating function is often a wrapper many sites share),
 * bytes, blocks}. */
void mvz_ui_put_site(struct mvz_json *j, struct mvz_symbols *sym, uint32_t stack, uint64_t bytes,
                     uint64_t blocks);

#endif
