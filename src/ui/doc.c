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

void mvz_ui_put_u(struct mvz_json *j, const char *k, uint64_t v)
{
    mvz_json_key(j, k);
    mvz_json_uint(j, v);
}

void mvz_ui_put_s(struct mvz_json *j, const char *k, const char *v)
{
    mvz_json_key(j, k);
    mvz_json_string(j, v);
}
