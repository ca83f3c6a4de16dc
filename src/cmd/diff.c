/* diff.c - placeholder */
#include "cmd/cmd.h"
int cmd_diff(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return mvz_usage_error("diff", "not built yet");
}
