/*
 * cast_using: prints the USING clause cast_alter_using writes, for
 * tests/tools/check_cast_matrix.sh to run on a server; with --widen-table,
 * the README's table of what the widen policy does.
 *
 *   cast_using < pairs
 *   cast_using --widen-table < fixtures/cast/widen_table.txt
 *
 * Each input line is "from | to" (--widen-table skips blank lines and
 * lines starting with #); each
 * output line is the clause for a column named c ("TYPE to USING
 * "c"::to"), or the table's row (ddl_track_widen_row), or "ERROR: why".
 */
#include <stdio.h>
#include <string.h>

#include "cast.h"
#include "ddl_track.h"

static void
print_widen_row(char *line)
{
	char *sep = strstr(line, " | ");
	strbuf sb = STRBUF_INIT;
	tm_error err;

	if (sep == NULL) {
		printf("ERROR: want from | to\n");
		return;
	}
	*sep = '\0';
	if (ddl_track_widen_row(line, sep + 3, &sb, &err) != 0)
		printf("ERROR: %s\n", err.msg);
	else
		printf("%s\n", strbuf_str(&sb));
	strbuf_free(&sb);
}

static void
print_using(char *line)
{
	char *sep = strstr(line, " | ");
	sqltype from, to;
	strbuf sb = STRBUF_INIT;
	tm_error err;

	if (sep == NULL) {
		printf("ERROR: want from | to\n");
		return;
	}
	*sep = '\0';
	if (sqltype_parse(line, &from, &err) != 0 || sqltype_parse(sep + 3, &to, &err) != 0 ||
		cast_alter_using(&from, &to, "c", &sb, &err) != 0)
		printf("ERROR: %s\n", err.msg);
	else
		printf("%s\n", strbuf_str(&sb));
	strbuf_free(&sb);
}

int
main(int argc, char **argv)
{
	bool widen = argc > 1 && strcmp(argv[1], "--widen-table") == 0;
	char line[1024];

	if (widen)
		printf("%s\n%s\n", DDL_TRACK_WIDEN_HEADER, DDL_TRACK_WIDEN_RULE);
	while (fgets(line, sizeof line, stdin) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (!widen)
			print_using(line);
		else if (line[0] != '#' && line[0] != '\0')
			print_widen_row(line);
	}
	return 0;
}
