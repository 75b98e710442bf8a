/*
 * fuzz_sqltype_cast.c: type names (src/cast/sqltype.c) and the casting matrix
 * (src/cast/cast.c, cast_value.c, cast_time.c).
 *
 * Input: a mode byte, then two types, a column name and a value. Even
 * mode: the types are text lines (parsed with sqltype_parse), then a line
 * for the column, the rest is the value. Odd mode: the types are built
 * field by field from the bytes, as a caller may build one by hand.
 *
 * Invariants:
 *   - a parsed type is well-formed; a well-formed type renders to text
 *     that parses back to the same type, and renders again the same;
 *   - cast_classify is reflexive and sees the re-parsed type as the same;
 *   - the common type of a and b holds both (or is text), holds and is
 *     held by the common type of b and a, and renders to a type that
 *     parses back;
 *   - cast_value_fits writes a reason within its buffer when it says no,
 *     and agrees with cast_value_fits_from and with the classification (a
 *     value that fits a type fits every type it widens to);
 *   - cast_alter_using appends nothing on failure, else TYPE, the type, and
 *     USING the column quoted; read by libpg_query after ALTER TABLE ...
 *     ALTER COLUMN, the clause is one ALTER COLUMN TYPE of that column,
 *     whatever the column's name: nothing from the input leaks out of its
 *     quotes.
 */
#include "fuzz_common.h"

#include "cast.h"
#include "ddl_parse.h"
#include "sqltype.h"
#include "strbuf.h"

static const char *const interval_fields[] = {
	"", "year to month", "day to hour", "day to minute", "day to second", "hour to minute",
	"hour to second", "minute to second", "year", "month", "day", "hour", "minute", "second",
};

#define N_FIELDS (sizeof interval_fields / sizeof interval_fields[0])

static bool
same_sqltype(const sqltype *a, const sqltype *b)
{
	if (strcmp(a->schema, b->schema) != 0 || strcmp(a->name, b->name) != 0 ||
		a->quoted != b->quoted || a->schema_quoted != b->schema_quoted || a->nmods != b->nmods ||
		strcmp(a->fields, b->fields) != 0 || a->ndims != b->ndims)
		return false;
	for (int i = 0; i < a->nmods; i++)
		if (a->mods[i] != b->mods[i])
			return false;
	return true;
}

static void
print_type(const char *label, const sqltype *t)
{
	fprintf(stderr, "%s: schema \"%s\"%s name \"%s\"%s fields \"%s\" ndims %d mods", label,
			t->schema, t->schema_quoted ? " (quoted)" : "", t->name, t->quoted ? " (quoted)" : "",
			t->fields, t->ndims);
	for (int i = 0; i < t->nmods; i++)
		fprintf(stderr, " %d", t->mods[i]);
	fputc('\n', stderr);
}

/* Renders t, parses that and renders again: the same type, the same text.
 * *again gets the re-parsed type. */
static void
check_round_trip(const sqltype *t, sqltype *again)
{
	strbuf r1 = STRBUF_INIT, r2 = STRBUF_INIT;
	tm_error err;

	sqltype_render(t, &r1);
	if (sqltype_parse(strbuf_str(&r1), again, &err) != 0 || !same_sqltype(t, again)) {
		print_type("type", t);
		fprintf(stderr, "rendered as: %s\n", strbuf_str(&r1));
		FUZZ_REQUIRE(false, "a well-formed type renders to text that parses back to it");
	}
	sqltype_render(again, &r2);
	FUZZ_REQUIRE(strcmp(strbuf_str(&r1), strbuf_str(&r2)) == 0, "rendering is stable");
	FUZZ_REQUIRE(cast_classify(t, again) == CAST_SAME && cast_classify(t, t) == CAST_SAME,
				 "a type is the same as itself");
	strbuf_free(&r1);
	strbuf_free(&r2);
}

static bool
holds(const sqltype *from, const sqltype *to)
{
	cast_kind k = cast_classify(from, to);

	return k == CAST_SAME || k == CAST_WIDEN;
}

static bool
is_text(const sqltype *t)
{
	return strcmp(t->name, "text") == 0 && t->schema[0] == '\0' && !t->quoted && t->nmods == 0;
}

static void
check_common(const sqltype *a, const sqltype *b)
{
	sqltype ab, ba, again;
	tm_error err;

	if (cast_common_type(a, b, &ab, &err) != 0) {
		FUZZ_REQUIRE(cast_common_type(b, a, &ba, &err) != 0, "common types fail in both orders");
		return;
	}
	FUZZ_REQUIRE(cast_common_type(b, a, &ba, &err) == 0, "common types exist in both orders");
	FUZZ_REQUIRE((holds(a, &ab) && holds(b, &ab)) || is_text(&ab),
				 "the common type holds both types, or is text");
	/* timestamp and timestamp(6), varchar and text: either is right */
	FUZZ_REQUIRE(holds(&ab, &ba) && holds(&ba, &ab), "the common type ignores the order");
	FUZZ_REQUIRE(sqltype_is_wellformed(&ab), "the common type is well-formed");
	check_round_trip(&ab, &again);
}

/* cast_value_fits into a reason buffer of reason_size bytes exactly. */
static bool
fits(const sqltype *t, const char *v, size_t len, size_t reason_size)
{
	char *reason = malloc(reason_size ? reason_size : 1);
	bool ok = cast_value_fits(t, v, len, reason_size ? reason : NULL, reason_size);

	if (reason_size > 0)
		FUZZ_REQUIRE(memchr(reason, '\0', reason_size) != NULL, "the reason is NUL-terminated");
	if (!ok && reason_size > 1)
		FUZZ_REQUIRE(reason[0] != '\0', "a value that does not fit has a reason");
	free(reason);
	return ok;
}

static void
check_values(const sqltype *a, const sqltype *b, const char *v, size_t len, size_t reason_size)
{
	bool fits_a = fits(a, v, len, reason_size);
	bool fits_b = fits(b, v, len, 256);

	FUZZ_REQUIRE(cast_value_fits_from(a, b, v, len, NULL, 0) == (holds(a, b) || fits_b),
				 "cast_value_fits_from is fits unless the types widen");
	FUZZ_REQUIRE(!fits_a || cast_classify(a, b) != CAST_WIDEN || fits_b,
				 "a value that fits a type fits every type it widens to");
}

/* ALTER TABLE t ALTER COLUMN "c" <clause>, read by libpg_query. */
static void
check_clause_parse(const char *column, const char *clause)
{
	strbuf sql = STRBUF_INIT;
	ddl_parse_result res;
	tm_error err;
	const ddl_parse_change *ch;

	strbuf_append(&sql, "ALTER TABLE t ALTER COLUMN ");
	strbuf_append_ident(&sql, column);
	strbuf_appendc(&sql, ' ');
	strbuf_append(&sql, clause);
	FUZZ_REQUIRE(ddl_parse_text(strbuf_str(&sql), &res, &err) == 0, "the statement is read");
	if (!res.unparsable) {
		FUZZ_REQUIRE(res.n_stmts == 1 && res.n_changes == 1, "the clause is one change");
		ch = &res.changes[0];
		FUZZ_REQUIRE(ch->kind == DDL_PARSE_ALTER_COLUMN_TYPE && ch->has_using,
					 "the clause changes the column's type with USING");
		FUZZ_REQUIRE(ch->column.name != NULL && strcmp(ch->column.name, column) == 0,
					 "the clause names the column, quoted");
	}
	ddl_parse_result_free(&res);
	strbuf_free(&sql);
}

static void
check_using(const sqltype *a, const sqltype *b, const char *column)
{
	strbuf sb = STRBUF_INIT, expect = STRBUF_INIT;
	tm_error err;

	strbuf_append(&sb, "X");
	if (cast_alter_using(a, b, column, &sb, &err) != 0) {
		FUZZ_REQUIRE(strcmp(strbuf_str(&sb), "X") == 0, "a failure appends nothing");
		strbuf_free(&sb);
		return;
	}
	FUZZ_REQUIRE(sqltype_is_wellformed(a) && sqltype_is_wellformed(b) && column[0] != '\0',
				 "USING clauses only for well-formed types and a column");
	strbuf_append(&expect, "XTYPE ");
	sqltype_render(b, &expect);
	strbuf_append(&expect, " USING ");
	strbuf_append_ident(&expect, column);
	strbuf_append(&expect, "::");
	FUZZ_REQUIRE(strncmp(strbuf_str(&sb), strbuf_str(&expect), expect.len) == 0,
				 "TYPE, the type, USING, the column quoted, a cast");
	check_clause_parse(column, strbuf_str(&sb) + 1);
	strbuf_free(&sb);
	strbuf_free(&expect);
}

/* A name of up to SQLTYPE_NAME_MAX - 1 bytes (cut at a NUL). */
static void
read_name(fuzz_input *in, char *out)
{
	size_t len;
	char *s = fuzz_take(in, fuzz_byte(in) % SQLTYPE_NAME_MAX, &len);

	snprintf(out, SQLTYPE_NAME_MAX, "%s", s);
	free(s);
}

/* A type built field by field: flags, modifiers, fields, schema, name. */
static void
build_type(fuzz_input *in, sqltype *t)
{
	uint8_t flags = fuzz_byte(in);

	memset(t, 0, sizeof *t);
	t->quoted = flags & 1;
	t->schema_quoted = (flags >> 1) & 1;
	t->nmods = ((flags >> 2) & 7) % (SQLTYPE_MAX_MODS + 1);
	t->ndims = (flags >> 5) & 3;
	for (int i = 0; i < t->nmods; i++) {
		uint32_t m = 0;

		for (int k = 0; k < 4; k++)
			m = m << 8 | fuzz_byte(in);
		t->mods[i] = (int32_t) m;
	}
	snprintf(t->fields, sizeof t->fields, "%s", interval_fields[fuzz_byte(in) % N_FIELDS]);
	read_name(in, t->schema);
	read_name(in, t->name);
}

/* Reads a type; false when there is none to check. */
static bool
read_type(fuzz_input *in, bool built, sqltype *t)
{
	sqltype again;
	tm_error err;
	size_t len;
	char *text;
	bool ok;

	if (built) {
		build_type(in, t);
		ok = sqltype_is_wellformed(t);
	} else {
		text = fuzz_line(in, &len);
		ok = sqltype_parse(text, t, &err) == 0;
		FUZZ_REQUIRE(!ok || sqltype_is_wellformed(t), "a parsed type is well-formed");
		free(text);
	}
	if (ok)
		check_round_trip(t, &again);
	return ok;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_input in = {data, size};
	uint8_t mode = fuzz_byte(&in);
	bool built = mode & 1;
	size_t reason_size = mode >> 1;
	sqltype a, b;
	bool ok_a = read_type(&in, built, &a), ok_b = read_type(&in, built, &b);
	size_t len;
	char *column = fuzz_line(&in, &len);
	char *value = fuzz_take(&in, in.left, &len);

	fuzz_clip_identifier(column);	/* catalog names are no longer */

	if (ok_a && ok_b) {
		FUZZ_REQUIRE((unsigned) cast_classify(&a, &b) <= CAST_INCOMPATIBLE, "a known kind");
		FUZZ_REQUIRE((cast_session_needs(&a, &b) & ~0x1fu) == 0, "known session settings");
		check_common(&a, &b);
		check_values(&a, &b, value, len, reason_size);
		check_using(&a, &b, column);
	}
	free(column);
	free(value);
	return 0;
}
