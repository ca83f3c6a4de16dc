/* massif.c - placeholder until the massif writer lands. */
#include "cmd/cmd.h"
#include "export/export.h"

int mvz_export_massif(const struct mvz_export *x)
{
    (void)x;
    mvz_error("export format 'massif' is not built yet");
    return -1;
}
