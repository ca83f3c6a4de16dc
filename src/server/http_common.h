/*
 * http_common.h - responses and the token check shared by the live
 * server (http.c) and the UI server (ui_http.c), both on libmicrohttpd.
 */
#ifndef MVZ_SERVER_HTTP_COMMON_H
#define MVZ_SERVER_HTTP_COMMON_H

#include <microhttpd.h>
#include <stddef.h>

enum MHD_Result mvz_http_send_text(struct MHD_Connection *c, unsigned status, const char *type,
                                   const char *body, size_t len);
/* "memviz: MSG" and a newline, as text/plain. */
enum MHD_Result mvz_http_send_error(struct MHD_Connection *c, unsigned status, const char *msg);
/* body (malloc'd) is sent with status 200, then freed. */
enum MHD_Result mvz_http_send_owned(struct MHD_Connection *c, const char *type, char *body,
                                    size_t len);
/* Starts a daemon with a thread per connection on host:port (port 0:
 * any), or on listen_fd when that is a socket listening already (>= 0);
 * handler answers with cls. The port it got in *bound. NULL with a
 * one-line reason in err. */
struct MHD_Daemon *mvz_http_listen(const char *host, int port, int listen_fd, unsigned max_conns,
                                   MHD_AccessHandlerCallback handler, void *cls, int *bound,
                                   char *err, size_t errlen);
/* A request's first calls: 1 when the caller returns MHD_YES now (the
 * headers alone are in, or a body's bytes, which are not used); 0 when
 * the request is whole and is to be answered. */
int mvz_http_not_yet(void *server, void **state, size_t *data_len);
/* The request carries token: "Authorization: Bearer TOKEN", or ?token=. */
int mvz_http_authorized(struct MHD_Connection *c, const char *token);

#endif
