/*
 * commands.h: one entry point per command (cmd_<name>.c). Each returns a
 * status from exitcode.h; main() exits with it.
 */
#ifndef TIDEMARK_COMMANDS_H
#define TIDEMARK_COMMANDS_H

#include "cli.h"

int cmd_setup(const cli_options *opts);
int cmd_run(const cli_options *opts);
int cmd_status(const cli_options *opts);
int cmd_snapshot(const cli_options *opts);
int cmd_schema(const cli_options *opts);
int cmd_ddl_log(const cli_options *opts);
int cmd_verify(const cli_options *opts);
int cmd_teardown(const cli_options *opts);
int cmd_policy(const cli_options *opts);
int cmd_mode(const cli_options *opts);
int cmd_resync(const cli_options *opts);

#endif
