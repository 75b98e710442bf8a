/*
 * keyless_sql.h: the statements that apply row changes to a target table
 * without a key (a source table with REPLICA IDENTITY FULL and no key at
 * all), built with quoted identifiers and $n parameters only. Pure.
 *
 * Such a table is a multiset: rows may be exact duplicates. An insert is a
 * plain INSERT. An update or a delete changes ONE row equal to the old row
 * the stream sent, as PostgreSQL's own replication does:
 *   DELETE FROM t WHERE ctid = (SELECT ctid FROM t WHERE <match> LIMIT 1)
 * where <match> compares every column with the old row's value:
 *   a NULL            c IS NULL (no parameter)
 *   KEYLESS_MATCH_IMAGE  c = $n (equal values are identical: any index on
 *                        c serves the match)
 *   KEYLESS_MATCH_EQUAL  c = $n AND concat(c) = concat($n) (equal values may
 *                        differ, 1.0 and 1.00: the output texts decide)
 *   KEYLESS_MATCH_TEXT   concat(c) = concat($n::type) (no equality: json,
 *                        xml, point, ...; the source's text read as the
 *                        target's type, so both are spelled by the target)
 * The statement varies with which old values are NULL (c IS NULL can use
 * an index, c IS NOT DISTINCT FROM $n cannot): one statement per pattern.
 */
#ifndef TIDEMARK_KEYLESS_SQL_H
#define TIDEMARK_KEYLESS_SQL_H

#include <stdbool.h>

#include "strbuf.h"

typedef enum keyless_match {
	KEYLESS_MATCH_IMAGE,
	KEYLESS_MATCH_EQUAL,
	KEYLESS_MATCH_TEXT,
} keyless_match;

/* What tidemark.column_match() returned ('image', 'equal', 'text'); any
 * other word is TEXT, which is always right. */
keyless_match keyless_sql_match_parse(const char *word);

typedef struct keyless_sql_table {
	const char *schema;
	const char *name;
	int ncols;
	const char *const *cols;      /* borrowed names, in the parameters' order */
	const keyless_match *match;   /* per column */
	const char *const *types;     /* per column: the target's type as SQL, rendered
	                               * from its parse (for TEXT); entries may be NULL:
	                               * the source's text is compared as is */
} keyless_sql_table;

/* "c1", "c2", ...: a column list. */
void keyless_sql_columns(strbuf *sql, int ncols, const char *const *cols);
/* The same in parentheses after a space, for INSERT and COPY; nothing for
 * a table without columns (whose rows are all alike) */
void keyless_sql_column_list(strbuf *sql, int ncols, const char *const *cols);

/* INSERT INTO t (c1, ..., cn) VALUES ($1, ..., $n) */
void keyless_sql_insert(strbuf *sql, const keyless_sql_table *t);

/* The delete of one row equal to the old row. old: per column, 'v' (the
 * old row's value, a parameter), 'n' (NULL) or '-' (not sent: not
 * compared). Parameters: the 'v' values, in column order. */
void keyless_sql_delete(strbuf *sql, const keyless_sql_table *t, const char *old, int *nparams);

/* The update of one row equal to the old row: the columns with set[i]
 * take $1, $2, ... (the others, unchanged TOAST, keep the row's value),
 * then the match's parameters as for keyless_sql_delete. */
void keyless_sql_update(strbuf *sql, const keyless_sql_table *t, const bool *set,
                        const char *old, int *nparams);

/* Does the target table have every column read? Parameters: the table
 * (a quoted qualified name, keyless_sql_has_columns_params) and the names as
 * a JSON array; one row: true when it has them all. */
#define KEYLESS_SQL_HAS_COLUMNS                                                             \
	"SELECT NOT EXISTS (SELECT FROM jsonb_array_elements_text($2::jsonb) c(name)"            \
	"   WHERE NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = $1::regclass"       \
	"     AND a.attname = c.name AND a.attnum > 0 AND NOT a.attisdropped))"

/* KEYLESS_SQL_HAS_COLUMNS's parameters: *table and *names new strings. */
void keyless_sql_has_columns_params(const char *schema, const char *name, int ncols,
                                    const char *const *cols, char **table, char **names);

/* The staging table of a table's copy: tidemark."keyless <table_id>". */
void keyless_sql_stage_name(strbuf *sql, int table_id);

/* INSERT INTO t (cols) SELECT cols FROM the staging table. */
void keyless_sql_load(strbuf *sql, const char *schema, const char *name, int ncols,
                      const char *const *cols, int table_id);

/*
 * A change kept for later in tidemark.keyless_pending (migrations/target/
 * 008_keyless.sql): op 'i', 'u', 'd' or 't'. Parameters: table id, commit
 * position, xid, then the old row's ncols values (update, delete), the new
 * row's (insert, update), and for an update the unchanged columns as an
 * int2[] literal (or NULL).
 */
void keyless_sql_record(strbuf *sql, int ncols, char op, int *nparams);

#endif
