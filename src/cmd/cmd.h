/*
 * cmd.h - the subcommands of the memviz CLI, one file each, and the small
 * conventions they share: errors are one line on stderr prefixed "memviz:",
 * bad usage exits with status 2.
 */
#ifndef MVZ_CMD_H
#define MVZ_CMD_H

#include <stddef.h>
#include <stdint.h>

#define MVZ_VERSION "0.1.0"
#define MVZ_EXIT_USAGE 2

int cmd_run(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_leaks(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_retain(int argc, char **argv);
int cmd_growth(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_live(int argc, char **argv);
int cmd_ui(int argc, char **argv);
int cmd_html(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_tui(int argc, char **argv);
int cmd_callgraph(int argc, char **argv);

void mvz_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int mvz_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* --debug-dir DIR of the analysis commands: where separate debug files
 * also are. 0, or the exit status of a usage error. */
int mvz_cmd_debug_dir(const char *cmd, const char *dir);
/* In a command's getopt loop, what no command handles itself: --debug-dir
 * (0, or the usage error), or an unknown option (its usage error). */
int mvz_cmd_shared_option(const char *cmd, int opt, char **argv);
#define MVZ_OPT_DEBUG_DIR 0x1000
/* Parses a non-negative decimal integer option value; -1 if malformed. */
long mvz_parse_count(const char *s, long max);
/* Parses a percentage, 0 to 100; -1 if malformed or out of range. */
int mvz_parse_percent(const char *s, double *out);
/* Parses a time in seconds ("1.5") into ns; -1 if malformed or negative. */
int mvz_parse_seconds(const char *s, uint64_t *ns);
/* snapshot.c: the image of pid that is tracing, in memviz run's page, or
 * NULL; and a snapshot request to it, waited for (0, or -1), with a line
 * saying how it went in msg. */
struct mvz_run_page;
struct mvz_run_image;
struct mvz_run_image *mvz_run_image_of(struct mvz_run_page *pg, int pid);
int mvz_snapshot_request(struct mvz_run_image *im, int pid, const char *name, char *msg,
                         size_t cap);
/* Whether two paths name one file (the same path, or device and inode). */
int mvz_same_file(const char *a, const char *b);

#endif
