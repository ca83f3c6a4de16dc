/*
 * html.h - `memviz html`: the web UI as one self-contained file, its
 * views' documents computed ahead and carried inside it (docs/UI.md).
 */
#ifndef MVZ_UI_HTML_H
#define MVZ_UI_HTML_H

#include <stdio.h>

#include "ui/model.h"

/* Writes the page for m to out, at most about budget bytes (the flame
 * graphs lose their smallest frames until it fits). 0, or -1 with a
 * one-line reason in err. */
int mvz_ui_html_write(struct mvz_ui_model *m, FILE *out, size_t budget, char *err, size_t errlen);

#endif
