/*
 * ddl_parse_describe.c: one line per change, for logs and the test corpus.
 *
 *   KIND [schema.table[.column]] [-> new] [field=value | flag]...
 *
 * Fields come in a fixed order and only when set; detail= is last (it may
 * hold spaces). Not SQL: names are shown plain when they are plain
 * lower-case identifiers, quoted otherwise, with control characters and
 * backslashes escaped so that one change is always one line.
 */
#include "ddl_parse_int.h"

#include <string.h>

static bool
is_plain_name(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || *s == '_'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '$'))
			return false;
	return true;
}

/* s with control characters escaped, and backslashes unless keep_backslash
 * (SQL, whose E'' strings double them already); quote doubled. */
static void
append_escaped_as(strbuf *out, const char *s, char quote, bool keep_backslash)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		if (c == '\\' && !keep_backslash)
			strbuf_append(out, "\\\\");
		else if (c < 0x20 || c == 0x7f)
			strbuf_appendf(out, "\\x%02x", c);
		else {
			if (c == (unsigned char) quote)
				strbuf_appendc(out, *s);
			strbuf_appendc(out, *s);
		}
	}
}

static void
append_escaped(strbuf *out, const char *s, char quote)
{
	append_escaped_as(out, s, quote, false);
}

static void
append_name(strbuf *out, const char *name)
{
	if (is_plain_name(name)) {
		strbuf_append(out, name);
		return;
	}
	strbuf_appendc(out, '"');
	append_escaped(out, name, '"');
	strbuf_appendc(out, '"');
}

static void
append_qualified(strbuf *out, const char *schema, const char *name)
{
	if (schema != NULL) {
		append_name(out, schema);
		strbuf_appendc(out, '.');
	}
	append_name(out, name);
}

static void
append_flag(strbuf *out, bool set, const char *flag)
{
	if (set) {
		strbuf_appendc(out, ' ');
		strbuf_append(out, flag);
	}
}

/* " key=value" with value as text (escaped), when value is set. */
static void
append_field(strbuf *out, const char *key, const char *value)
{
	if (value == NULL)
		return;
	strbuf_appendf(out, " %s=", key);
	append_escaped(out, value, '\0');
}

static void
append_name_list(strbuf *out, const char *key, const char **names, size_t n)
{
	if (n == 0)
		return;
	strbuf_appendf(out, " %s=(", key);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			strbuf_appendc(out, ',');
		append_name(out, names[i]);
	}
	strbuf_appendc(out, ')');
}

/* What a column declaration declares, after its name. The type and the
 * collation are SQL: only their control characters are escaped. */
static void
append_column_decl(strbuf *out, const ddl_parse_column *col, bool typed_field)
{
	if (col->type.canonical != NULL) {
		strbuf_append(out, typed_field ? " type=" : " ");
		append_escaped_as(out, col->type.canonical, '\0', true);
	}
	if (col->collation != NULL) {
		strbuf_append(out, " collate=");
		append_escaped_as(out, col->collation, '\0', true);
	}
	append_flag(out, col->not_null, "not_null");
	append_flag(out, col->has_default, "default");
	append_flag(out, col->primary_key, "pk");
	append_flag(out, col->identity, "identity");
	append_flag(out, col->generated, "generated");
}

static void
append_columns(strbuf *out, const ddl_parse_change *ch)
{
	if (ch->n_columns == 0)
		return;
	strbuf_append(out, " cols=(");
	for (size_t i = 0; i < ch->n_columns; i++) {
		if (i > 0)
			strbuf_append(out, ", ");
		append_name(out, ch->columns[i].name);
		append_column_decl(out, &ch->columns[i], false);
	}
	strbuf_appendc(out, ')');
}

static const char *
identity_name(char c)
{
	switch (c) {
	case 'd': return "default";
	case 'f': return "full";
	case 'i': return "index";
	case 'n': return "nothing";
	}
	return NULL;
}

static void
append_target(strbuf *out, const ddl_parse_change *ch)
{
	if (ch->table == NULL)
		return;
	strbuf_appendc(out, ' ');
	append_qualified(out, ch->schema, ch->table);
	if (ch->column.name != NULL) {
		strbuf_appendc(out, '.');
		append_name(out, ch->column.name);
	}
	if (ch->new_name != NULL) {
		strbuf_append(out, " -> ");
		append_name(out, ch->new_name);
	}
}

static void
append_create_table(strbuf *out, const ddl_parse_change *ch)
{
	append_flag(out, ch->persistence == 't', "temp");
	append_flag(out, ch->persistence == 'u', "unlogged");
	append_flag(out, ch->like, "like");
	append_flag(out, ch->columns_from_catalog, "from_catalog");
	append_flag(out, ch->partitioned, "partitioned");
	if (ch->parent_table != NULL) {
		strbuf_append(out, " partition_of=");
		append_qualified(out, ch->parent_schema, ch->parent_table);
	}
	append_columns(out, ch);
}

void
ddl_parse_change_describe(const ddl_parse_change *ch, strbuf *out)
{
	strbuf_append(out, ddl_parse_kind_name(ch->kind));
	append_target(out, ch);
	append_field(out, "node", ch->node);
	if (ch->kind == DDL_PARSE_ADD_COLUMN || ch->kind == DDL_PARSE_ALTER_COLUMN_TYPE)
		append_column_decl(out, &ch->column, true);
	if (ch->kind == DDL_PARSE_ALTER_COLUMN_TYPE)
		strbuf_append(out, !ch->has_using                               ? " using=no"
		                   : ch->using_kind == DDL_PARSE_USING_PLAIN ? " using=plain"
		                                                             : " using=expr");
	append_flag(out, ch->only, "only");
	append_flag(out, ch->if_exists, "if_exists");
	append_flag(out, ch->cascade, "cascade");
	if (ch->kind == DDL_PARSE_CREATE_TABLE)
		append_create_table(out, ch);
	append_name_list(out, "pk", ch->key_columns, ch->n_key_columns);
	if (ch->constraint_name != NULL) {
		strbuf_append(out, " name=");
		append_name(out, ch->constraint_name);
	}
	if (ch->index_name != NULL) {
		strbuf_append(out, " index=");
		append_name(out, ch->index_name);
	}
	append_field(out, "identity", identity_name(ch->replica_identity));
	if (ch->part_table != NULL) {
		strbuf_append(out, " partition=");
		append_qualified(out, ch->part_schema, ch->part_table);
	}
	append_flag(out, ch->concurrently, "concurrently");
	append_flag(out, ch->finalize, "finalize");
	if (ch->kind == DDL_PARSE_UNPARSABLE)
		strbuf_appendf(out, " cursor=%d", ch->cursor_pos);
	append_field(out, "detail", ch->detail);
}
