/*
 * main.c - the memviz command line: dispatches to one subcommand.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"

static const char usage_text[] =
    "usage: memviz <command> [options] [args]\n"
    "\n"
    "commands:\n"
    "  run [-o FILE] [--depth N] [--no-follow] [--] PROG [ARGS...]\n"
    "                         run PROG with the agent preloaded and write a trace\n"
    "  report [--json] [--top N] FILE\n"
    "                         summarize a trace: peak, leaks, hot allocation sites\n"
    "  export --format F [-o OUT] FILE\n"
    "                         write FILE for another tool: collapsed, pprof, massif,\n"
    "                         callgrind, speedscope, chrome\n"
    "  timeline [--csv|--json] FILE\n"
    "                         heap and RSS over time, with the top sites\n"
    "  diff [--json] BASE NEW what grew and shrank between two runs\n"
    "  leaks [--json] [--snapshot NAME] FILE\n"
    "                         the blocks a heap snapshot found lost (memcheck's kinds)\n"
    "  snapshot PID [NAME]    take a heap snapshot of a program memviz run started\n"
    "  retain [--json] [--site GLOB | --block ADDR] FILE\n"
    "                         what keeps memory alive: roots and sites by retained size\n"
    "  growth [--json] [--by stack|function|module] FILE\n"
    "                         live bytes per site at every snapshot, steady growers first\n"
    "  inspect --block ADDR [--json] FILE\n"
    "                         one block of a snapshot: bytes, pointers, path, type\n"
    "  live [HOST:]PORT       the terminal view of a program memviz run --live serves\n"
    "  ui [--port N] FILE [NEW]\n"
    "                         the web UI on a trace (or two compared, or --live)\n"
    "  html [-o OUT] FILE     the web UI on a trace as one file to share\n"
    "  tui FILE               the terminal UI on a trace: live view, tree, snapshot\n"
    "  index FILE             write the trace's index: memviz ui opens it at once\n"
    "  callgraph [--json] [--function F] [--depth N] FILE\n"
    "                         the complete call graph of a run with --callgraph\n"
    "  help [COMMAND]         show this text, or COMMAND's options\n"
    "  version                show the version\n";

/* `memviz help CMD`: CMD's own help, as `memviz CMD --help` prints it. */
static int help_for(const char *cmd);

static int dispatch(const char *cmd, int argc, char **argv)
{
    if (!strcmp(cmd, "run"))
        return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "report"))
        return cmd_report(argc - 1, argv + 1);
    if (!strcmp(cmd, "export"))
        return cmd_export(argc - 1, argv + 1);
    if (!strcmp(cmd, "timeline"))
        return cmd_timeline(argc - 1, argv + 1);
    if (!strcmp(cmd, "diff"))
        return cmd_diff(argc - 1, argv + 1);
    if (!strcmp(cmd, "leaks"))
        return cmd_leaks(argc - 1, argv + 1);
    if (!strcmp(cmd, "snapshot"))
        return cmd_snapshot(argc - 1, argv + 1);
    if (!strcmp(cmd, "retain"))
        return cmd_retain(argc - 1, argv + 1);
    if (!strcmp(cmd, "growth"))
        return cmd_growth(argc - 1, argv + 1);
    if (!strcmp(cmd, "inspect"))
        return cmd_inspect(argc - 1, argv + 1);
    if (!strcmp(cmd, "live"))
        return cmd_live(argc - 1, argv + 1);
    if (!strcmp(cmd, "ui"))
        return cmd_ui(argc - 1, argv + 1);
    if (!strcmp(cmd, "html"))
        return cmd_html(argc - 1, argv + 1);
    if (!strcmp(cmd, "tui"))
        return cmd_tui(argc - 1, argv + 1);
    if (!strcmp(cmd, "index"))
        return cmd_index(argc - 1, argv + 1);
    if (!strcmp(cmd, "callgraph"))
        return cmd_callgraph(argc - 1, argv + 1);
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        if (argc > 2)
            return help_for(argv[2]);
        fputs(usage_text, stdout);
        return 0;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("memviz %s\n", MVZ_VERSION);
        return 0;
    }
    fprintf(stderr, "memviz: unknown command '%s'\n", cmd);
    fputs(usage_text, stderr);
    return MVZ_EXIT_USAGE;
}

static int help_for(const char *cmd)
{
    static const char *const commands[] = {
        "run",    "report",  "export", "timeline", "diff", "leaks", "snapshot", "retain",
        "growth", "inspect", "live",   "ui",       "html", "tui",   "index",    "callgraph"};
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (!strcmp(cmd, commands[i])) {
            char *argv[] = {(char *)"memviz", (char *)cmd, (char *)"--help", NULL};
            return dispatch(cmd, 3, argv);
        }
    }
    fprintf(stderr, "memviz: no help for '%s': not a command\n", cmd);
    fputs(usage_text, stderr);
    return MVZ_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return MVZ_EXIT_USAGE;
    }
    return dispatch(argv[1], argc, argv);
}
