/*
 * cmd_stubs.c: commands whose implementation has not landed yet. Each says
 * so plainly and exits with the usage code.
 */
#include <stdio.h>

#include "commands.h"
#include "exitcode.h"

static int
not_yet(const cli_options *o)
{
	fprintf(stderr, "tidemark %s: not available in this version yet\n",
	        cli_command_name(o->command));
	return TM_EXIT_USAGE;
}

int cmd_verify(const cli_options *o) { return not_yet(o); }
