/*
 * ddl_parse_audit.c: a captured statement text as the audit log records
 * it (ddl_parse_audit_text in ddl_parse.h). The same rule as the source's
 * capture (migrations/source/008_capture_hardening.sql), here with the
 * parse tree: the text of table and type DDL is kept, anything else is
 * recorded by its kind. The capture has applied it already to what it
 * sends; it is applied again here to every text, including what an older
 * capture sent.
 */
#include "ddl_parse_int.h"

#include <string.h>

/* Statements whose text is kept: what they say, the catalog shows any
 * role anyway (names, types, defaults, constraints, index predicates). */
static const char *const kept_nodes[] = {
	"CreateStmt", "CreateTableAsStmt", "DropStmt", "RenameStmt", "AlterObjectSchemaStmt",
	"AlterTableStmt", "CreateSchemaStmt", "IndexStmt", "CreateEnumStmt", "AlterEnumStmt",
	"CompositeTypeStmt", "CreateRangeStmt", "CreateDomainStmt", "AlterDomainStmt", "DefineStmt",
	"CreateExtensionStmt", "AlterExtensionStmt", "AlterExtensionContentsStmt", "CreateSeqStmt",
	"AlterSeqStmt", "ViewStmt", "CreateStatsStmt", "AlterStatsStmt", "CommentStmt", "GrantStmt",
	"GrantRoleStmt", "CreateTrigStmt", "CreatePolicyStmt", "AlterPolicyStmt",
	"CreatePublicationStmt", "AlterPublicationStmt", "RefreshMatViewStmt", "RuleStmt",
	"AlterOwnerStmt", "AlterCollationStmt", "AlterTableMoveAllStmt", "AlterTypeStmt",
	"TransactionStmt", "TruncateStmt", "VacuumStmt", "ClusterStmt", "ReindexStmt", "LockStmt",
	"CheckPointStmt", NULL,
};

/* The kind a statement that is not kept is recorded by; other nodes by
 * their node name. */
static const char *const kinds[][2] = {
	{"DoStmt", "DO"}, {"CallStmt", "CALL"}, {"SelectStmt", "SELECT"}, {"InsertStmt", "INSERT"},
	{"UpdateStmt", "UPDATE"}, {"DeleteStmt", "DELETE"}, {"MergeStmt", "MERGE"},
	{"CopyStmt", "COPY"}, {"PrepareStmt", "PREPARE"}, {"ExecuteStmt", "EXECUTE"},
	{"ExplainStmt", "EXPLAIN"}, {"VariableSetStmt", "SET"}, {"DeclareCursorStmt", "DECLARE"},
	{"CreateRoleStmt", "CREATE ROLE"}, {"AlterRoleStmt", "ALTER ROLE"},
	{"AlterRoleSetStmt", "ALTER ROLE"}, {"CreateUserMappingStmt", "CREATE USER MAPPING"},
	{"AlterUserMappingStmt", "ALTER USER MAPPING"}, {"CreateForeignServerStmt", "CREATE SERVER"},
	{"AlterForeignServerStmt", "ALTER SERVER"}, {"CreateSubscriptionStmt", "CREATE SUBSCRIPTION"},
	{"AlterSubscriptionStmt", "ALTER SUBSCRIPTION"}, {"CreateFunctionStmt", "CREATE FUNCTION"},
	{"AlterFunctionStmt", "ALTER FUNCTION"}, {"AlterSystemStmt", "ALTER SYSTEM"},
	{"AlterDatabaseSetStmt", "ALTER DATABASE"}, {"CreateForeignTableStmt", "CREATE FOREIGN TABLE"},
	{"ImportForeignSchemaStmt", "IMPORT FOREIGN SCHEMA"}, {NULL, NULL},
};

/* The placeholder the capture writes for what it left out:
 * slash-star KIND ": left out by the capture" star-slash, KIND upper case. */
#define CAPTURE_MARK ": left out by the capture */"

static bool
is_capture_placeholder(const char *s, size_t n)
{
	size_t mark = strlen(CAPTURE_MARK), i = 3;

	if (n < 3 + 1 + mark || memcmp(s, "/* ", 3) != 0 || memcmp(s + n - mark, CAPTURE_MARK, mark) != 0)
		return false;
	for (; i < n - mark; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] == ' ' && i > 3)))
			return false;
	return true;
}

static bool
listed(const char *node, const char *const *list)
{
	for (; node != NULL && *list != NULL; list++)
		if (strcmp(node, *list) == 0)
			return true;
	return false;
}

static const char *
kind_of(const char *node)
{
	for (size_t i = 0; node != NULL && kinds[i][0] != NULL; i++)
		if (strcmp(node, kinds[i][0]) == 0)
			return kinds[i][1];
	return node != NULL ? node : "statement";
}

/* Is the statement's text kept? *mask: with its string constants written
 * '?' (a USING expression and a query are not in the catalog). */
static bool
kept(const ddl_parse_result *pr, const ddl_parse_stmt *st, bool *mask)
{
	*mask = false;
	if (st->cls == DDL_PARSE_STMT_UNPARSABLE || !listed(st->node, kept_nodes))
		return false;
	*mask = strcmp(st->node, "CreateTableAsStmt") == 0;
	for (size_t i = st->first_change; i < st->first_change + st->n_changes; i++)
		*mask |= pr->changes[i].has_using;
	return true;
}

/* A statement's bytes [start, end) of sql: its comments left out (one
 * space for each inside it), with mask its string constants written '?'. */
static void
append_text(strbuf *out, const char *sql, size_t start, size_t end, bool mask)
{
	strbuf piece = STRBUF_INIT;
	size_t pos = start, from = start, a = 0, b;

	while (pos < end) {
		ddl_scan_tok tok;
		size_t next = ddl_scan_token(sql, end, pos, &tok);

		if (tok == DDL_TOK_COMMENT || (tok == DDL_TOK_STRING && mask)) {
			strbuf_appendn(&piece, sql + from, pos - from);
			strbuf_append(&piece, tok == DDL_TOK_COMMENT ? " " : "'?'");
			from = next;
		}
		pos = next;
	}
	strbuf_appendn(&piece, sql + from, end - from);
	b = piece.len;
	ddl_scan_trim(strbuf_str(&piece), &a, &b);
	strbuf_appendn(out, strbuf_str(&piece) + a, b - a);
	strbuf_free(&piece);
}

/* Bytes [start, end) of sql between statements: white space, semicolons
 * and the capture's placeholders; anything else is left out. */
static void
append_gap(strbuf *out, const char *sql, size_t start, size_t end)
{
	for (size_t pos = start; pos < end;) {
		ddl_scan_tok tok;
		size_t next = ddl_scan_token(sql, end, pos, &tok);

		if (tok == DDL_TOK_SPACE || (tok == DDL_TOK_OTHER && sql[pos] == ';') ||
			(tok == DDL_TOK_COMMENT && is_capture_placeholder(sql + pos, next - pos)))
			strbuf_appendn(out, sql + pos, next - pos);
		pos = next;
	}
}

void
ddl_parse_audit_text(const char *sql, const ddl_parse_result *pr, strbuf *text,
					 strbuf *fingerprints)
{
	size_t pos = 0, len = strlen(sql);

	if (pr->n_stmts == 1 && pr->stmts[0].node == NULL) {
		strbuf_append(text, "/* statement not recorded: it could not be parsed */");
		return;
	}
	for (size_t i = 0; i < pr->n_stmts; i++) {
		const ddl_parse_stmt *st = &pr->stmts[i];
		bool mask;

		append_gap(text, sql, pos, st->offset);
		pos = st->offset + st->length;
		if (!kept(pr, st, &mask)) {
			strbuf_appendf(text, "/* %s: not recorded (it may hold a secret) */", kind_of(st->node));
			continue;
		}
		append_text(text, sql, st->offset, pos, mask);
		if (st->cls != DDL_PARSE_STMT_DDL || st->fingerprint[0] == '\0')
			continue;
		if (fingerprints->len > 0)
			strbuf_appendc(fingerprints, ',');
		strbuf_append(fingerprints, st->fingerprint);
	}
	append_gap(text, sql, pos, len);
}
