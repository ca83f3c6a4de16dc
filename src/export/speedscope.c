/* speedscope.c - placeholder until the speedscope writer lands. */
#include "cmd/cmd.h"
#include "export/export.h"

int mvz_export_speedscope(const struct mvz_export *x)
{
    (void)x;
    mvz_error("export format 'speedscope' is not built yet");
    return -1;
}
