/*
 * exitcode.h: the one table of tidemark's process exit codes. The README's
 * "Exit codes" section documents the same table; keep them in step.
 */
#ifndef TIDEMARK_EXITCODE_H
#define TIDEMARK_EXITCODE_H

typedef enum tm_exit {
	TM_EXIT_OK = 0,          /* success; `verify`: source and target are equal */
	TM_EXIT_DIFFERENT = 1,   /* `verify`: differences found */
	TM_EXIT_USAGE = 2,       /* bad command line */
	TM_EXIT_CONFIG = 3,      /* configuration: wal_level, privileges, missing slot,
	                          * publication or key, bad connection string, auth */
	TM_EXIT_SOURCE = 4,      /* source: unreachable after retries, slot invalidated */
	TM_EXIT_TARGET = 5,      /* target: incompatible table, disk full, unreachable */
	TM_EXIT_POLICY = 6,      /* stopped by the `stop` schema-change policy */
	TM_EXIT_INTERNAL = 70,   /* a bug in tidemark: please report it */
} tm_exit;

/* Status codes returned through the call chain: TM_OK or an exit class.
 * Functions return `int` holding one of these; main() exits with it. */
#define TM_OK 0

const char *tm_exit_name(int code);

#endif
