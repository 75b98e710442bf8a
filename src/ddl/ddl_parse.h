/*
 * ddl_parse.h: what a captured DDL statement text meant, read with
 * libpg_query.
 *
 * The event trigger on the source captures current_query(): the whole
 * string the client sent. It may hold several statements (DML and DDL
 * mixed), or only "DO ..." / "SELECT f()" when the DDL ran inside a
 * function. ddl_parse_text() parses that string and lists, per DDL
 * statement, what was meant: a rename is a RENAME_COLUMN, not a drop plus
 * an add. The catalog definition sent alongside stays the authority on the
 * result; this module only tells intent, and says so (OPAQUE, UNPARSABLE)
 * when the text cannot tell.
 *
 * Names in the result are as the server sees them: unquoted, case kept
 * ("My Col" comes out as  My Col , unquoted  Total  as  total ).
 *
 * Ownership: a ddl_parse_result owns everything it points to; all of it
 * lives in the result's arena and goes with ddl_parse_result_free(). No
 * pointer taken from a result may be freed on its own or used after the
 * result is freed. The result does not keep the input string.
 *
 * Pure module: no I/O, no logging, no global state. libpg_query keeps a
 * memory context per calling thread (released when the thread exits, or by
 * pg_query_exit()); nothing here ends the process. Within the limits below
 * a parse needs well under 512 kB of C stack.
 */
#ifndef TIDEMARK_DDL_PARSE_H
#define TIDEMARK_DDL_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "strbuf.h"
#include "tm_error.h"

/*
 * Limits. A text longer than DDL_PARSE_MAX_TEXT bytes, not valid UTF-8, or
 * whose parse tree a scan estimates deeper than DDL_PARSE_MAX_DEPTH levels
 * (open brackets plus operator / UNION / JOIN chains) is not handed to the
 * parser: libpg_query recurses without a depth check when it writes a tree
 * out, and 1+1+1+... parses into a tree as deep as it is long. Such a text
 * is recorded as one UNPARSABLE change, like a syntax error; so is one whose
 * tree is too deep for jansson to load.
 */
#define DDL_PARSE_MAX_TEXT	(1024 * 1024)
#define DDL_PARSE_MAX_DEPTH 1000

typedef enum ddl_parse_kind {
	DDL_PARSE_CREATE_TABLE,
	DDL_PARSE_DROP_TABLE,		/* one change per table of the statement */
	DDL_PARSE_RENAME_TABLE,
	DDL_PARSE_SET_SCHEMA,		/* ALTER TABLE ... SET SCHEMA */
	DDL_PARSE_ADD_COLUMN,
	DDL_PARSE_DROP_COLUMN,
	DDL_PARSE_RENAME_COLUMN,
	DDL_PARSE_ALTER_COLUMN_TYPE,
	DDL_PARSE_SET_NOT_NULL,
	DDL_PARSE_DROP_NOT_NULL,
	DDL_PARSE_SET_DEFAULT,
	DDL_PARSE_DROP_DEFAULT,
	DDL_PARSE_ADD_PRIMARY_KEY,
	DDL_PARSE_DROP_CONSTRAINT,
	DDL_PARSE_REPLICA_IDENTITY,
	DDL_PARSE_ATTACH_PARTITION,	/* ALTER TABLE parent ATTACH PARTITION part */
	DDL_PARSE_DETACH_PARTITION,	/* ... DETACH PARTITION part [CONCURRENTLY | FINALIZE] */
	DDL_PARSE_OTHER,			/* DDL of no interest to the above: node says which */
	DDL_PARSE_OPAQUE,			/* DO, CALL, SELECT f(): the parse cannot see inside */
	DDL_PARSE_UNPARSABLE		/* the text (or one statement) could not be read */
} ddl_parse_kind;

#define DDL_PARSE_KIND_COUNT (DDL_PARSE_UNPARSABLE + 1)

/* What a statement of the text was. */
typedef enum ddl_parse_stmt_class {
	DDL_PARSE_STMT_DDL,			/* gave one or more changes (OTHER included) */
	DDL_PARSE_STMT_DML,			/* INSERT, UPDATE, DELETE, MERGE, COPY, plain SELECT: skipped */
	DDL_PARSE_STMT_OPAQUE,		/* gave one OPAQUE change (DO, CALL, EXECUTE, and
								 * any SELECT that calls a function, count() too) */
	DDL_PARSE_STMT_IGNORED,		/* neither: TRUNCATE, SET, BEGIN, VACUUM, ... */
	DDL_PARSE_STMT_UNPARSABLE	/* gave one UNPARSABLE change */
} ddl_parse_stmt_class;

typedef enum ddl_parse_typmod_kind {
	DDL_PARSE_TYPMOD_INT,		/* ival */
	DDL_PARSE_TYPMOD_NUMBER,	/* text: a numeric literal that is not an int, e.g. 99999999999 */
	DDL_PARSE_TYPMOD_STRING,	/* text: a string constant, unescaped */
	DDL_PARSE_TYPMOD_IDENT		/* text: an identifier, unquoted */
} ddl_parse_typmod_kind;

typedef struct ddl_parse_typmod {
	ddl_parse_typmod_kind kind;
	int64_t ival;
	const char *text; /* NULL for INT */
} ddl_parse_typmod;

/*
 * A type as written, after the grammar's own rewriting: "int" is
 * {"pg_catalog", "int4"}, "varchar(20)" is {"pg_catalog", "varchar"} (20),
 * "double precision" is {"pg_catalog", "float8"}, "char" is
 * {"pg_catalog", "bpchar"} (1). Interval typmods are kept as the grammar
 * makes them: a field mask and then the precision ("interval day to
 * second(3)" is (7176, 3)); PostgreSQL accepts them back in that form.
 */
typedef struct ddl_parse_type {
	const char **names; /* unquoted components, 1 to 3 */
	size_t n_names;
	ddl_parse_typmod *typmods;
	size_t n_typmods;
	int *array_bounds; /* one per dimension; -1: none given ("[]", also "[0]") */
	size_t n_array_bounds;
	bool setof;
	/* Canonical SQL spelling (see ddl_parse_type_render); NULL: no type. */
	const char *canonical;
} ddl_parse_type;

/*
 * What an ALTER COLUMN ... TYPE's USING clause does to the values:
 *   NONE   no USING: PostgreSQL's own conversion to the new type
 *   PLAIN  USING c, or USING c::t (CAST(c AS t)) of the column itself to
 *          the new type, without modifiers or with the same ones (but for
 *          string and bit types, whose explicit cast cuts what the
 *          conversion without USING refuses): that conversion, spelled out
 *   EXPR   any other expression: the source computed new values
 */
typedef enum ddl_parse_using {
	DDL_PARSE_USING_NONE,
	DDL_PARSE_USING_PLAIN,
	DDL_PARSE_USING_EXPR,
} ddl_parse_using;

/* A column as declared by CREATE TABLE or ADD COLUMN. */
typedef struct ddl_parse_column {
	const char *name;
	ddl_parse_type type; /* type.canonical NULL when the statement gives none */
	const char *collation; /* COLLATE, quoted (and qualified if written so); or NULL */
	bool not_null; /* NOT NULL declared */
	bool has_default; /* DEFAULT declared */
	bool primary_key; /* PRIMARY KEY declared on the column itself */
	bool identity; /* GENERATED ... AS IDENTITY */
	bool generated; /* GENERATED ALWAYS AS (expr) STORED */
} ddl_parse_column;

/*
 * One change. Fields not listed for a kind are NULL / false / 0.
 *
 *  schema, table      the table (schema NULL when unqualified); for OTHER,
 *                     the relation the statement names if any (which may
 *                     be an index, a view, ...)
 *  column             column kinds: column.name; ADD_COLUMN: the whole
 *                     declaration; ALTER_COLUMN_TYPE: name, type, collation
 *  new_name           RENAME_TABLE, RENAME_COLUMN: the new name;
 *                     SET_SCHEMA: the new schema
 *  columns            CREATE_TABLE: the columns listed in the statement
 *  part_schema,       ATTACH_PARTITION, DETACH_PARTITION: the partition
 *  part_table         (schema NULL when unqualified); schema, table: its parent
 *  key_columns        CREATE_TABLE (primary key, inline or table
 *                     constraint), ADD_PRIMARY_KEY
 */
typedef struct ddl_parse_change {
	ddl_parse_kind kind;
	size_t stmt_index; /* into ddl_parse_result.stmts */
	const char *schema;
	const char *table;
	ddl_parse_column column;
	const char *new_name;
	bool has_using; /* ALTER_COLUMN_TYPE ... USING expr */
	ddl_parse_using using_kind; /* ALTER_COLUMN_TYPE: what the USING does */
	const char *using_text; /* ALTER_COLUMN_TYPE: the USING expression as
	                         * written (source text, for the audit log only) */
	bool if_exists; /* IF [NOT] EXISTS on the statement or the subcommand */
	bool only; /* ONLY: inheritance children / partitions not included */
	bool cascade; /* DROP ... CASCADE */

	/* CREATE_TABLE */
	ddl_parse_column *columns;
	size_t n_columns;
	bool like; /* a LIKE clause supplies columns */
	/* Columns not (all) in the statement, the catalog has them: LIKE, AS /
	 * SELECT INTO, OF type, PARTITION OF, INHERITS. */
	bool columns_from_catalog;
	bool partitioned; /* PARTITION BY */
	const char *parent_schema; /* PARTITION OF: the parent */
	const char *parent_table;
	char persistence; /* 'p' permanent, 'u' unlogged, 't' temporary */

	/* ATTACH_PARTITION, DETACH_PARTITION */
	const char *part_schema;
	const char *part_table;
	bool concurrently; /* DETACH ... CONCURRENTLY (the first of its two transactions) */
	bool finalize; /* DETACH ... FINALIZE (ends an interrupted CONCURRENTLY) */

	const char **key_columns;
	size_t n_key_columns;
	const char *constraint_name; /* ADD_PRIMARY_KEY (if named), DROP_CONSTRAINT */
	const char *index_name; /* ADD_PRIMARY_KEY / REPLICA_IDENTITY ... USING INDEX */
	char replica_identity; /* 'd', 'f', 'i', 'n' as pg_class.relreplident */

	/* OTHER, OPAQUE: the parse node ("IndexStmt", "DoStmt") */
	const char *node;

	/*
	 * OTHER: what it was beyond the node (ALTER TABLE subcommand, object
	 * type); OPAQUE: the function called, quoted; UNPARSABLE: the message.
	 */
	const char *detail;
	/*
	 * UNPARSABLE: 1-based character (not byte) position in the whole text,
	 * counted as PostgreSQL counts cursors; 0 when unknown.
	 */
	int cursor_pos;
} ddl_parse_change;

typedef struct ddl_parse_stmt {
	ddl_parse_stmt_class cls;
	const char *node; /* parse node name; NULL when UNPARSABLE as a whole */
	const char *text; /* the statement's own text, surrounding white space trimmed */
	size_t offset; /* byte offset of text in the input */
	size_t length; /* strlen(text) */
	/* libpg_query fingerprint of text, 16 hex digits; "" when none. */
	char fingerprint[17];
	size_t first_change; /* its changes: changes[first_change ..] */
	size_t n_changes;
} ddl_parse_stmt;

typedef struct ddl_parse_result {
	ddl_parse_stmt *stmts; /* in text order */
	size_t n_stmts;
	ddl_parse_change *changes; /* in text order, subcommands in order */
	size_t n_changes;
	size_t n_dml; /* statements skipped as DML */
	bool unparsable; /* some change is UNPARSABLE */
	arena mem; /* owns everything above */
} ddl_parse_result;

/*
 * Parses sql (NUL-terminated, UTF-8) and fills *out, which the caller
 * later passes to ddl_parse_result_free (also after a failure; *out is
 * always initialised). A text the parser rejects is not a failure: it gives
 * one UNPARSABLE change covering the whole text, with the parser's message
 * and cursor. Returns 0, or -1 with err set when sql or out is NULL or
 * libpg_query's output cannot be read at all.
 */
int ddl_parse_text(const char *sql, ddl_parse_result *out, tm_error *err);

/* Frees everything the result owns and empties it. NULL, an emptied or a
 * zero-filled result are accepted. */
void ddl_parse_result_free(ddl_parse_result *res);

/*
 * The text of a captured statement as the DDL audit log records it: the
 * client's string may hold more than DDL (DO, CALL p('...'), SELECT f(),
 * DML, ALTER ROLE ... PASSWORD, user mappings, servers, subscriptions,
 * SET, CREATE FUNCTION bodies, in a DO block or beside an ALTER TABLE), and
 * none of that may reach the log. For each statement of sql (as parsed
 * into pr, which sql was parsed into):
 *   - table and type DDL (CREATE / ALTER / DROP of tables, indexes, types,
 *     domains, schemas, extensions, sequences, views, triggers, policies,
 *     publications, statistics, rules; COMMENT, GRANT, REVOKE, TRUNCATE,
 *     LOCK, VACUUM, CLUSTER, REINDEX, REFRESH, transaction control) is
 *     kept as written, its comments left out; the string constants of an
 *     ALTER TABLE with a USING clause and of a CREATE TABLE ... AS are
 *     written '?' (neither the expression nor the query is kept in the
 *     catalog: pgp_sym_decrypt(c, 'key'), dblink('password=...'));
 *   - any other statement, and one that could not be read, is replaced by
 *     slash-star KIND ": not recorded (it may hold a secret)" star-slash
 *     (DO, CALL, SELECT, ALTER ROLE, CREATE USER MAPPING, ...);
 *   - between statements only white space, semicolons and the capture's
 *     own placeholders for what it left out (slash-star KIND ": left out by
 *     the capture" star-slash, KIND in upper case) remain.
 * A text that could not be parsed at all is recorded as a note saying so.
 * fingerprints gets the libpg_query fingerprints of the kept DDL
 * statements, comma-separated: a fingerprint hashes the values that are
 * not A_Const (the password of ALTER ROLE, a user mapping's options), so
 * one of a statement that is not kept could confirm a guessed secret.
 */
void ddl_parse_audit_text(const char *sql, const ddl_parse_result *pr, strbuf *text,
						  strbuf *fingerprints);

/* "ADD_COLUMN", ...; "?" for a value out of range. Static strings. */
const char *ddl_parse_kind_name(ddl_parse_kind kind);
const char *ddl_parse_stmt_class_name(ddl_parse_stmt_class cls);

/*
 * Appends the canonical SQL spelling of a type to out: every name component
 * quoted ("pg_catalog"."numeric"), typmods in parentheses (integers,
 * numbers, string literals, quoted identifiers), then "[]" per array
 * dimension (bounds are dropped: PostgreSQL ignores them), SETOF first when
 * set. The result is what target DDL is built from: it never holds source
 * text unquoted. Returns 0, or -1 with err set (out unchanged) when the
 * type has no name or a typmod cannot be spelled safely.
 */
int ddl_parse_type_render(const ddl_parse_type *type, strbuf *out, tm_error *err);

/*
 * A stored generated column's expression, as the source's pg_get_expr()
 * wrote it, written again for target DDL from libpg_query's parse tree
 * (its protobuf deparse), never copied. Accepted: exactly one expression
 * (parsed as SELECT <expr>) of constants, columns of the same row,
 * operators, casts, CASE, COALESCE, NULLIF, IS [NOT] NULL, arrays, rows,
 * COLLATE and calls of functions that are not known to return a set or to
 * be volatile; refused: subqueries, aggregates and windows, parameters,
 * qualified column references, anything else, and texts over
 * DDL_PARSE_MAX_EXPR bytes. The target still refuses any expression that
 * is not immutable. Returns 0 with the expression appended to out, or -1
 * with err saying why it is refused (out unchanged).
 */
#define DDL_PARSE_MAX_EXPR (16 * 1024)
/* Deeper than this (the scan's estimate) is refused too: writing the tree
 * back recurses further per level than parsing it (a chain of 630 "+ 1"
 * overflowed a 512 kB stack in the sanitizer build). */
#define DDL_PARSE_MAX_EXPR_DEPTH 200
int ddl_parse_generation_expr(const char *expr, strbuf *out, tm_error *err);

/*
 * Appends a one-line description of a change, for logs and tests, e.g.
 *   ALTER_COLUMN_TYPE public.orders.total type="pg_catalog"."numeric"(12,2) using=no
 * Names that are not plain lower-case identifiers are shown quoted, control
 * characters escaped. Not SQL.
 */
void ddl_parse_change_describe(const ddl_parse_change *ch, strbuf *out);

#endif
