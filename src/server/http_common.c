/*
 * http_common.c - what the live server and the UI server answer alike
 * (http_common.h): plain responses, and the token check.
 */
#include "server/http_common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
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

struct MHD_Daemon *mvz_http_listen(const char *host, int port, int listen_fd, unsigned max_conns,
                                   MHD_AccessHandlerCallback handler, void *cls, int *bound,
                                   char *err, size_t errlen)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        snprintf(err, errlen, "'%s' is not an IPv4 address", host);
        return NULL;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    struct MHD_Daemon *d =
        listen_fd >= 0
            ? MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handler, cls,
                               MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_CONNECTION_LIMIT,
                               max_conns, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
                               MHD_OPTION_END)
            : MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handler, cls,
                               MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                               MHD_OPTION_CONNECTION_LIMIT, max_conns,
                               MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
    if (!d) {
        snprintf(err, errlen, "cannot listen on %s:%d (in use, or not an address here)", host,
                 port);
        return NULL;
    }
    struct sockaddr_in got;
    socklen_t glen = sizeof(got);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (listen_fd >= 0 && getsockname(listen_fd, (struct sockaddr *)&got, &glen) == 0)
        *bound = ntohs(got.sin_port);
    else
        *bound = info ? info->port : port;
    return d;
}
