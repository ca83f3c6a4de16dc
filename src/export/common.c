/*
 * common.c - what the export writers share: how an unknown frame is named,
 * and the heap sampled over the window for the formats that draw time.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/timeline.h"
#include "cmd/cmd.h"
#include "export/export.h"
#include "util/fmt.h"

const char *mvz_export_frame_name(const struct mvz_frame *f, char *buf, size_t cap)
{
    if (strcmp(f->function, "??") != 0 || !f->module)
        return f->function;
    snprintf(buf, cap, "?? [%s]", mvz_base_name(f->module));
    return buf;
}

/* Points past the end of the run would draw a process that no longer runs,
 * and knowing the end spares the timeline a replay to find it. */
int mvz_export_heap_points(const struct mvz_export *x, size_t npoints, struct mvz_timeline *tl)
{
    uint64_t end = x->p->sum.duration_ns;
    char err[512];
    if (x->from_ns > end) {
        mvz_error("the window starts at %.3f s, after the end of the run (%.3f s)",
                  (double)x->from_ns / 1e9, (double)end / 1e9);
        return -1;
    }
    struct mvz_profile *tp = calloc(1, sizeof(*tp));
    if (!tp) {
        mvz_error("out of memory");
        return -1;
    }
    int rc = mvz_timeline_build(tl, tp, x->trace_path, x->from_ns, x->to_ns < end ? x->to_ns : end,
                                npoints, NULL, 0, 0, err, sizeof(err));
    if (rc < 0)
        mvz_error("%s", err);
    /* Only the points are needed: the window's numbers are in x->p. */
    mvz_profile_free(tp);
    free(tp);
    return rc;
}
