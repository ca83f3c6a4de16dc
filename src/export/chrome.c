/* chrome.c - placeholder until the chrome writer lands. */
#include "cmd/cmd.h"
#include "export/export.h"

int mvz_export_chrome(const struct mvz_export *x)
{
    (void)x;
    mvz_error("export format 'chrome' is not built yet");
    return -1;
}
