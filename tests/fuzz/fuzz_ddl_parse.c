/*
 * fuzz_ddl_parse.c: the statement text of captured DDL, read with
 * libpg_query (ddl/ddl_parse*.c).
 *
 * Input: the text (up to its first NUL). It is parsed on a thread with the
 * 512 kB of stack that ddl_parse.h promises is enough, so that a text deep
 * enough to need more (the depth scan should have refused it) crashes here.
 *
 * Invariants:
 *   - statements are the text's own slices, in order; their changes are
 *     contiguous and point back at them; parsed statements have a node and
 *     a fingerprint; DML and ignored statements have no change; the counts
 *     and the unparsable flag agree with the changes;
 *   - a change's description is one line, with no control character;
 *   - a type's canonical spelling is what ddl_parse_type_render writes, and
 *     read again as a column's type it is the same type;
 *   - the same text as a generated column's expression
 *     (ddl_parse_generation_expr): when accepted, its rendering is accepted
 *     again and rendered the same, with no NUL.
 */
#include "fuzz_common.h"

#include <pthread.h>

#include "../unit/ddl_parse_check.h"
#include "ddl_parse.h"
#include "strbuf.h"

#define PARSE_STACK (512 * 1024)

static void
check_type(const ddl_parse_type *t)
{
	strbuf sb = STRBUF_INIT;
	tm_error err;

	if (t->canonical == NULL)
		return;
	FUZZ_REQUIRE(ddl_parse_type_render(t, &sb, &err) == 0 &&
				 strcmp(strbuf_str(&sb), t->canonical) == 0,
				 "the canonical spelling is the rendered type");
	FUZZ_REQUIRE(ddl_check_type_round_trips(t),
				 "the canonical spelling reads back as the same type");
	strbuf_free(&sb);
}

/* Descriptions and types of the changes. */
static void
check_changes(const ddl_parse_result *res)
{
	for (size_t i = 0; i < res->n_changes; i++) {
		const ddl_parse_change *ch = &res->changes[i];
		strbuf sb = STRBUF_INIT;

		ddl_parse_change_describe(ch, &sb);
		for (size_t k = 0; k < sb.len; k++)
			FUZZ_REQUIRE((unsigned char) sb.data[k] >= 0x20 && sb.data[k] != 0x7f,
						 "a description is one line without control characters");
		strbuf_free(&sb);
		check_type(&ch->column.type);
		for (size_t k = 0; k < ch->n_columns; k++)
			check_type(&ch->columns[k].type);
	}
}

static void
check_generation_expr(const char *sql)
{
	strbuf once = STRBUF_INIT, twice = STRBUF_INIT;
	tm_error err;

	if (ddl_parse_generation_expr(sql, &once, &err) == 0) {
		FUZZ_REQUIRE(ddl_parse_generation_expr(strbuf_str(&once), &twice, &err) == 0 &&
		             strcmp(strbuf_str(&once), strbuf_str(&twice)) == 0,
		             "an accepted expression's rendering renders the same");
		FUZZ_REQUIRE(strlen(strbuf_str(&once)) == once.len, "a rendering has no NUL");
	}
	strbuf_free(&once);
	strbuf_free(&twice);
}

static void *
parse_and_check(void *arg)
{
	const char *sql = arg;
	ddl_parse_result res;
	tm_error err;

	check_generation_expr(sql);
	if (ddl_parse_text(sql, &res, &err) == 0) {
		const char *broken = ddl_check_invariants(sql, &res);

		if (broken != NULL)
			fuzz_broken(__FILE__, __LINE__, "ddl_check_invariants", broken);
		check_changes(&res);
	}
	ddl_parse_result_free(&res);
	return NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_input in = {data, size};
	size_t len;
	char *sql = fuzz_take(&in, size, &len);
	pthread_attr_t attr;
	pthread_t thread;

	FUZZ_REQUIRE(pthread_attr_init(&attr) == 0 &&
				 pthread_attr_setstacksize(&attr, PARSE_STACK) == 0 &&
				 pthread_create(&thread, &attr, parse_and_check, sql) == 0 &&
				 pthread_join(thread, NULL) == 0, "a parse thread runs");
	pthread_attr_destroy(&attr);
	free(sql);
	return 0;
}
