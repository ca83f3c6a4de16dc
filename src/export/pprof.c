/* pprof.c - placeholder until the pprof writer lands. */
#include "cmd/cmd.h"
#include "export/export.h"

int mvz_export_pprof(const struct mvz_export *x)
{
    (void)x;
    mvz_error("export format 'pprof' is not built yet");
    return -1;
}
