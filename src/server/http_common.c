/*
 * http_common.c - what the live server and the UI server answer alike
 * (http_common.h): plain responses, and the token check.
 */
#include "server/http_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum MHD_Result mvz_http_send_text(struct MHD_Connection *c, unsigned status, const char *type,
                                   const char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result mvz_http_send_error(struct MHD_Connection *c, unsigned status, const char *msg)
{
    char line[256];
    int n = snprintf(line, sizeof(line), "memviz: %s\n", msg);
    return mvz_http_send_text(c, status, "text/plain; charset=utf-8", line, (size_t)n);
}

/* Owned buffers: sent, then freed. */
enum MHD_Result mvz_http_send_owned(struct MHD_Connection *c, const char *type, char *body,
                                    size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

/* Constant time: the comparison takes as long whatever prefix matches. */
static int same_token(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    unsigned char diff = na != nb;
    for (size_t i = 0; i < na; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (nb ? nb : 1)]);
    return diff == 0;
}

int mvz_http_authorized(struct MHD_Connection *c, const char *token)
{
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
    if (auth && !strncmp(auth, "Bearer ", 7) && same_token(auth + 7, token))
        return 1;
    return q && same_token(q, token);
}

int mvz_http_not_yet(void *server, void **state, size_t *data_len)
{
    if (!*state) { /* headers only so far: answer when the body (if any) is in */
        *state = server;
        return 1;
    }
    if (*data_len) {
        *data_len = 0; /* bodies are not used */
        return 1;
    }
    return 0;
}
