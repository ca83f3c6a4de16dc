/* callgrind.c - placeholder until the callgrind writer lands. */
#include "cmd/cmd.h"
#include "export/export.h"

int mvz_export_callgrind(const struct mvz_export *x)
{
    (void)x;
    mvz_error("export format 'callgrind' is not built yet");
    return -1;
}
