/*
 * dml_sql.h: the statements that apply row changes to a target table,
 * built with quoted identifiers and $n parameters only. Pure.
 *
 * Column lists are given as names in the order the parameters follow;
 * key columns are a subset of them, identified by index.
 */
#ifndef TIDEMARK_DML_SQL_H
#define TIDEMARK_DML_SQL_H

#include <stdbool.h>

#include "strbuf.h"

typedef struct dml_sql_table {
	const char *schema;
	const char *name;
	int ncols;
	const char *const *cols;  /* borrowed names */
	int nkeys;
	const int *key_idx;       /* indexes into cols */
	const char *const *key_types; /* per key column, the base type a key column and its
	                           * parameter are cast to where they are compared
	                           * (codec.h); NULL, or a NULL entry: none */
} dml_sql_table;

/* INSERT INTO t (c1..cn) VALUES ($1..$n)
 *   ON CONFLICT (keys) DO UPDATE SET c = EXCLUDED.c ... (DO NOTHING when
 *   every column is a key). */
void dml_sql_upsert(strbuf *sql, const dml_sql_table *t);

/* DELETE FROM t WHERE k1 = $1 AND ... (parameters: the key values in
 * key_idx order). */
void dml_sql_delete(strbuf *sql, const dml_sql_table *t);

/* UPDATE t SET c = $i ... WHERE k1 = $(n+1) ...: sets the columns with
 * present[i] (keys included when they changed), keyed by the old key
 * values passed after them. Used when some columns were not sent
 * (unchanged TOAST): those keep the target's value. */
void dml_sql_update_present(strbuf *sql, const dml_sql_table *t, const bool *present,
                            int *nparams);

/* The same update for a row whose key changed, which also asks for the
 * row to be read again from the source when the target holds no row under
 * the old key (see migrations/target/003_snapshot_rereads.sql):
 *   WITH moved AS (UPDATE ... RETURNING 1)
 *   INSERT INTO tidemark.snapshot_rereads (table_id, key, requested_lsn)
 *   SELECT $a::integer, ARRAY[$b::text, ...], $c::pg_lsn
 *   WHERE NOT EXISTS (SELECT FROM moved) ON CONFLICT ... newest position
 * Parameters: those of dml_sql_update_present, then the table id, the new
 * key's values (key_idx order) and the source commit position. */
void dml_sql_update_moved(strbuf *sql, const dml_sql_table *t, const bool *present,
                          int *nparams);

/* TRUNCATE t1, t2, ... */
void dml_sql_truncate(strbuf *sql, int ntables, const char *const *schemas,
                      const char *const *names);

#endif
