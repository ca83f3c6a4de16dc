/*
 * lifetimes.h - how long blocks live, by their size: a density of the
 * run's blocks over size classes (powers of two) and lifetime classes
 * (decades of time, and "never freed"), for the UI.
 */
#ifndef MVZ_UI_LIFETIMES_H
#define MVZ_UI_LIFETIMES_H

#include <stddef.h>

#include "ui/model.h"

/* A replay of the trace the first time (then cached). A malloc'd
 * document, or NULL with a reason in err. */
char *mvz_ui_lifetimes_json(struct mvz_ui_model *m, size_t *len, char *err, size_t errlen);

#endif
