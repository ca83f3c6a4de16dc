/*
 * growth.h - the live blocks and bytes of every allocation stack at each
 * heap snapshot of a trace, read in one pass over its BLOCKS records: what
 * grows across a run (`memviz growth`), the leak that is still reachable.
 */
#ifndef MVZ_ANALYSIS_GROWTH_H
#define MVZ_ANALYSIS_GROWTH_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/snapshot.h"

struct mvz_growth {
    struct mvz_snap_info *snaps; /* the complete snapshots, in file order */
    size_t nsnaps;
    uint32_t nstacks;         /* stack ids below this */
    uint64_t *bytes, *blocks; /* [stack * nsnaps + k]: live at snapshot k */
    /* private: every snapshot of the file, complete or not */
    struct mvz_snap_info *all;
    size_t nall;
};

/* Returns 0, or -1 with a one-line reason in err. */
int mvz_growth_load(const char *path, struct mvz_growth *g, char *err, size_t errlen);
void mvz_growth_free(struct mvz_growth *g);

#endif
