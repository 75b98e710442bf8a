/*
 * cast_using: prints the USING clause cast_alter_using writes, for
 * tests/tools/check_cast_matrix.sh to run on a server.
 *
 *   cast_using < pairs
 *
 * Each input line is "from | to"; each output line is the clause for a
 * column named c ("TYPE to USING "c"::to"), or "ERROR: why".
 */
#include <stdio.h>
#include <string.h>

#include "cast.h"

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
main(void)
{
	char line[1024];

	while (fgets(line, sizeof line, stdin) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		print_using(line);
	}
	return 0;
}
