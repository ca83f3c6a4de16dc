/*
 * cmd.h - the subcommands of the memviz CLI, one file each, and the small
 * conventions they share: errors are one line on stderr prefixed "memviz:",
 * bad usage exits with status 2.
 */
#ifndef MVZ_CMD_H
#define MVZ_CMD_H

#include <stdint.h>

#define MVZ_VERSION "0.1.0"
#define MVZ_EXIT_USAGE 2

int cmd_run(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_diff(int argc, char **argv);

void mvz_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int mvz_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses a non-negative decimal integer option value; -1 if malformed. */
long mvz_parse_count(const char *s, long max);
/* Parses a time in seconds ("1.5") into ns; -1 if malformed or negative. */
int mvz_parse_seconds(const char *s, uint64_t *ns);

#endif
