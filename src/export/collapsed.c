/* collapsed.c - placeholder until the collapsed writer lands. */
#include "cmd/cmd.h"
#include "export/export.h"

int mvz_export_collapsed(const struct mvz_export *x)
{
    (void)x;
    mvz_error("export format 'collapsed' is not built yet");
    return -1;
}
