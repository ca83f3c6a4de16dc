/* timeline.c - placeholder */
#include "cmd/cmd.h"
int cmd_timeline(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return mvz_usage_error("timeline", "not built yet");
}
