/*
 * catalog_part.c: the partitions of replicated partitioned tables in
 * tidemark's catalog (tidemark.partitions, migrations/target/006).
 */
#include "catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pgconn.h"
#include "strbuf.h"
#include "xalloc.h"

/* "{1,2,3}": an oid[] parameter. */
static void
oid_array(strbuf *sb, const uint32_t *relids, int n)
{
	strbuf_appendc(sb, '{');
	for (int i = 0; i < n; i++)
		strbuf_appendf(sb, "%s%u", i ? "," : "", relids[i]);
	strbuf_appendc(sb, '}');
}

static ddl_part_root *
root_of(ddl_part_root **arr, int *n, PGresult *r, int row)
{
	int table_id = atoi(PQgetvalue(r, row, 0));

	for (int i = 0; i < *n; i++)
		if ((*arr)[i].table_id == table_id)
			return &(*arr)[i];
	*arr = realloc(*arr, sizeof **arr * (size_t) (*n + 1));
	if (*arr == NULL)
		abort();
	memset(&(*arr)[*n], 0, sizeof **arr);
	(*arr)[*n].table_id = table_id;
	(*arr)[*n].relid = (uint32_t) strtoul(PQgetvalue(r, row, 1), NULL, 10);
	(*arr)[*n].schema = xstrdup(PQgetvalue(r, row, 6));
	(*arr)[*n].name = xstrdup(PQgetvalue(r, row, 7));
	return &(*arr)[(*n)++];
}

int
catalog_partition_roots(sink *s, const char *slot, const uint32_t *roots, int nroots,
                        const uint32_t *members, int nmembers, ddl_part_root **out, int *n)
{
	strbuf r_ids = STRBUF_INIT, m_ids = STRBUF_INIT;
	const char *p[3];
	PGresult *r = NULL;
	int rc;

	oid_array(&r_ids, roots, nroots);
	oid_array(&m_ids, members, nmembers);
	p[0] = slot;
	p[1] = strbuf_str(&r_ids);
	p[2] = strbuf_str(&m_ids);
	*out = NULL;
	*n = 0;
	rc = sink_query(s, "reading the partitions of replicated tables",
	                "SELECT t.table_id, t.source_relid, p.relid, p.parent_relid, p.source_schema,"
	                " p.source_table, t.source_schema, t.source_table FROM tidemark.tables t"
	                " LEFT JOIN tidemark.partitions p USING (table_id)"
	                " WHERE t.slot_name = $1 AND t.state <> 'dropped' AND t.source_relid IS NOT NULL"
	                " AND (t.source_relid = ANY ($2::oid[]) OR t.table_id IN"
	                "   (SELECT table_id FROM tidemark.partitions WHERE relid = ANY ($3::oid[])))"
	                " ORDER BY t.table_id, p.relid", 3, p, &r);
	for (int i = 0; rc == TM_OK && i < PQntuples(r); i++) {
		ddl_part_root *root = root_of(out, n, r, i);

		if (!PQgetisnull(r, i, 2))
			ddl_part_root_add(root, (uint32_t) strtoul(PQgetvalue(r, i, 2), NULL, 10),
			                  (uint32_t) strtoul(PQgetvalue(r, i, 3), NULL, 10),
			                  PQgetvalue(r, i, 4), PQgetvalue(r, i, 5));
	}
	PQclear(r);
	strbuf_free(&r_ids);
	strbuf_free(&m_ids);
	return rc;
}

void
catalog_partition_roots_free(ddl_part_root *arr, int n)
{
	for (int i = 0; arr != NULL && i < n; i++)
		ddl_part_root_clear(&arr[i]);
	free(arr);
}

int
catalog_partitions_record(sink *s, int table_id, const ddl_part_member *m, int n)
{
	char id[16], relid[16], parent[16];
	int rc = TM_OK;

	snprintf(id, sizeof id, "%d", table_id);
	for (int i = 0; rc == TM_OK && i < n; i++) {
		const char *p[] = {id, relid, parent, m[i].schema, m[i].name};

		snprintf(relid, sizeof relid, "%u", m[i].relid);
		snprintf(parent, sizeof parent, "%u", m[i].parent);
		rc = sink_command(s, "recording a partition",
		                  "INSERT INTO tidemark.partitions (table_id, relid, parent_relid,"
		                  " source_schema, source_table) VALUES ($1::int, $2::oid, $3::oid, $4, $5)"
		                  " ON CONFLICT (table_id, relid) DO UPDATE SET"
		                  " parent_relid = EXCLUDED.parent_relid,"
		                  " source_schema = EXCLUDED.source_schema,"
		                  " source_table = EXCLUDED.source_table", 5, p);
	}
	return rc;
}

int
catalog_partitions_forget(sink *s, int table_id, const uint32_t *relids, int n)
{
	strbuf ids = STRBUF_INIT;
	char id[16];
	const char *p[2];
	int rc;

	if (n == 0)
		return TM_OK;
	snprintf(id, sizeof id, "%d", table_id);
	oid_array(&ids, relids, n);
	p[0] = id;
	p[1] = strbuf_str(&ids);
	rc = sink_command(s, "forgetting partitions",
	                  "DELETE FROM tidemark.partitions WHERE table_id = $1::int"
	                  " AND relid = ANY ($2::oid[])", 2, p);
	strbuf_free(&ids);
	return rc;
}

int
catalog_partitions_replace(sink *s, int table_id, const ddl_part_member *m, int n)
{
	char id[16];
	const char *p[] = {id};
	int rc;

	snprintf(id, sizeof id, "%d", table_id);
	rc = sink_command(s, "replacing the partitions of a table",
	                  "DELETE FROM tidemark.partitions WHERE table_id = $1::int", 1, p);
	return rc == TM_OK ? catalog_partitions_record(s, table_id, m, n) : rc;
}

int
catalog_partitions_retire(sink *s, const char *slot, const ddl_part_root *tree)
{
	strbuf ids = STRBUF_INIT;
	uint32_t *relids = calloc((size_t) tree->nmembers + 1, sizeof(uint32_t));
	const char *p[3];
	PGresult *r = NULL;
	int rc;

	if (relids == NULL)
		abort();
	for (int i = 0; i < tree->nmembers; i++)
		relids[i] = tree->members[i].relid;
	oid_array(&ids, relids, tree->nmembers);
	p[0] = slot;
	p[1] = strbuf_str(&ids);
	rc = sink_query(s, "retiring tables that are partitions",
	                "UPDATE tidemark.tables SET state = 'dropped' WHERE slot_name = $1"
	                " AND state <> 'dropped' AND source_relid = ANY ($2::oid[])"
	                " RETURNING source_schema, source_table", 2, p, &r);
	for (int i = 0; rc == TM_OK && i < PQntuples(r); i++)
		log_info("target: %s.%s is a partition of %s.%s, whose rows it replicates: no longer "
		         "replicated as a table of its own (the target keeps its table as it was)",
		         PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), tree->schema ? tree->schema : "?",
		         tree->name ? tree->name : "?");
	PQclear(r);
	strbuf_free(&ids);
	free(relids);
	return rc;
}
