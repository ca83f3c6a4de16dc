/*
 * snaps.h - the UI's views of a trace's heap snapshots (docs/SNAPSHOTS.md):
 * their list; for one, memcheck's leak kinds with the loss records, the
 * roots and sites by retained size with the path that holds each site;
 * and the live bytes of the top growing sites across all of them.
 */
#ifndef MVZ_UI_SNAPS_H
#define MVZ_UI_SNAPS_H

#include <stddef.h>
#include <stdint.h>

#include "ui/model.h"

/* Each a malloc'd document (length in *len), or NULL with a reason in
 * err. The snapshot and growth documents are kept in the model's cache. */
char *mvz_ui_snapshots_json(struct mvz_ui_model *m, size_t *len, char *err, size_t errlen);
/* Snapshot id (as listed); with id UINT32_MAX the one taken at exit, else
 * the last complete one. */
char *mvz_ui_snapshot_json(struct mvz_ui_model *m, uint32_t id, size_t *len, char *err,
                           size_t errlen);
char *mvz_ui_growth_json(struct mvz_ui_model *m, size_t top, size_t *len, char *err, size_t errlen);

#endif
