/*
 * doc.c - JSON documents in memory (doc.h), on open_memstream.
 */
#include "ui/doc.h"

#include <stdlib.h>
#include <string.h>

int mvz_ui_doc_open(struct mvz_ui_doc *d)
{
    memset(d, 0, sizeof(*d));
    d->f = open_memstream(&d->buf, &d->len);
    if (!d->f)
        return -1;
    mvz_json_init(&d->j, d->f);
    return 0;
}

char *mvz_ui_doc_close(struct mvz_ui_doc *d, size_t *len)
{
    fputc('\n', d->f);
    if (fclose(d->f) != 0) {
        free(d->buf);
        return NULL;
    }
    *len = d->len;
    return d->buf;
}

void mvz_ui_put_frames(struct mvz_json *j, struct mvz_symbols *sym, uint32_t stack, size_t max)
{
    struct mvz_frame f[64];
    size_t n = mvz_symbols_stack(sym, stack, f, max < 64 ? max : 64);
    mvz_json_key(j, "frames");
    mvz_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        mvz_json_begin_array(j);
        mvz_json_string(j, f[i].function);
        mvz_json_string(j, f[i].file);
        mvz_json_uint(j, f[i].line);
        mvz_json_string(j, f[i].module);
        mvz_json_end_array(j);
    }
    mvz_json_end_array(j);
}

void mvz_ui_put_site(struct mvz_json *j, struct mvz_symbols *sym, uint32_t stack, uint64_t bytes,
                     uint64_t blocks)
{
    struct mvz_frame f[2];
    size_t n = mvz_symbols_stack(sym, stack, f, 2);
    char name[600];
    snprintf(name, sizeof(name), "%s%s%s", n ? f[0].function : "??", n > 1 ? " < " : "",
             n > 1 ? f[1].function : "");
    mvz_json_begin_object(j);
    mvz_json_put_uint(j, "stack_id", stack);
    mvz_json_put_string(j, "name", name);
    mvz_json_put_uint(j, "bytes", bytes);
    mvz_json_put_uint(j, "blocks", blocks);
    mvz_json_end_object(j);
}
