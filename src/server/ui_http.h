/*
 * ui_http.h - the web UI's server (`memviz ui`, docs/UI.md): the UI's
 * files, and the JSON queries its views make of a trace's model; or, on a
 * running program, the live server's API passed through.
 */
#ifndef MVZ_SERVER_UI_HTTP_H
#define MVZ_SERVER_UI_HTTP_H

#include "server/proxy.h"
#include "ui/model.h"

struct mvz_ui_http_options {
    const char *host; /* an IPv4 address */
    int port;         /* 0: any free port */
    const char *token;
    int need_token;                  /* every request needs the token (not on loopback) */
    struct mvz_ui_model *model;      /* its cache changes; NULL with live */
    const struct mvz_upstream *live; /* memviz ui --live: the live server, else NULL */
    struct mvz_ui_model *base;       /* memviz ui BASE NEW: the base run (model is NEW) */
};

struct mvz_ui_http;

/* Listens; the port it got in *port. NULL with a one-line reason. */
struct mvz_ui_http *mvz_ui_http_start(const struct mvz_ui_http_options *o, int *port, char *err,
                                      size_t errlen);
void mvz_ui_http_stop(struct mvz_ui_http *h);

#endif
