/*
 * Unit tests of what a captured change means for a replicated partitioned
 * table (src/ddl/ddl_partition.c), and of the partition fields of the capture
 * message (src/ddl/ddl_event.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ddl_event.h"
#include "ddl_partition.h"
#include "strbuf.h"

/* The root m (100) with m_a (101), m_b (102, itself partitioned) and
 * m_b1 (103, a partition of m_b). */
#define ROOT 100

typedef struct listed {
	uint32_t relid;
	const char *name;
	uint32_t parent;   /* 0: not a partition */
} listed;

static void
root_init(ddl_part_root *r)
{
	memset(r, 0, sizeof *r);
	r->table_id = 7;
	r->relid = ROOT;
	ddl_part_root_add(r, 101, ROOT, "public", "m_a");
	ddl_part_root_add(r, 102, ROOT, "public", "m_b");
	ddl_part_root_add(r, 103, 102, "public", "m_b1");
}

/* A message of kind with these tables (all under root 100 when they have
 * a parent) and these dropped tables. */
static ddl_event *
event(const char *kind, const char *tag, const listed *tables, int n, const uint32_t *drops,
      int ndrops)
{
	strbuf sb = STRBUF_INIT;
	ddl_event *e = NULL;
	tm_error err;

	strbuf_appendf(&sb, "{\"version\": 1, \"kind\": \"%s\", \"command_tag\": \"%s\","
	               " \"statement\": null, \"xid\": 5, \"seq\": 1, \"tables\": [", kind, tag);
	for (int i = 0; i < n; i++) {
		strbuf_appendf(&sb, "%s{\"relid\": %u, \"schema\": \"public\", \"name\": \"%s\","
		               " \"relkind\": \"r\", \"replident\": \"d\",", i ? ", " : "",
		               tables[i].relid, tables[i].name);
		if (tables[i].parent != 0)
			strbuf_appendf(&sb, " \"partition_of\": %u, \"partition_root\": %u,",
			               tables[i].parent, ROOT);
		else
			strbuf_append(&sb, " \"partition_of\": null, \"partition_root\": null,");
		strbuf_append(&sb, " \"columns\": [{\"attnum\": 1, \"name\": \"id\", \"type\": \"integer\","
		              " \"type_oid\": 23, \"typmod\": -1, \"not_null\": true, \"key\": true}]}");
	}
	strbuf_append(&sb, "], \"dropped\": [");
	for (int i = 0; i < ndrops; i++)
		strbuf_appendf(&sb, "%s{\"object_type\": \"table\", \"schema\": \"public\", \"name\": \"t%u\","
		               " \"identity\": \"public.t%u\", \"objid\": %u, \"objsubid\": 0}",
		               i ? ", " : "", drops[i], drops[i], drops[i]);
	strbuf_append(&sb, "]}");
	if (ddl_event_parse(sb.data, sb.len, &e, &err) != 0)
		fail_msg("%s: %s", err.msg, sb.data);
	strbuf_free(&sb);
	return e;
}

static bool
removes(const ddl_part_plan *p, uint32_t relid)
{
	for (int i = 0; i < p->nremove; i++)
		if (p->remove[i] == relid)
			return true;
	return false;
}

static const listed whole[] = {
	{ROOT, "m", 0}, {101, "m_a", ROOT}, {102, "m_b", ROOT}, {103, "m_b1", 102},
};

/* The message's fields, and a root is never its own partition. */
static void
test_event_fields(void **state)
{
	listed self[] = {{ROOT, "m", 0}};
	ddl_event *e = event("ddl", "ALTER TABLE", whole, 4, NULL, 0);
	ddl_event *t = event("truncate", "TRUNCATE", self, 1, NULL, 0);

	(void) state;
	assert_int_equal(e->tables[0].partition_root, 0);
	assert_int_equal(e->tables[3].partition_of, 102);
	assert_int_equal(e->tables[3].partition_root, ROOT);
	assert_int_equal(t->kind, DDL_EVENT_TRUNCATE);
	ddl_event_free(e);
	ddl_event_free(t);
}

/* ALTER TABLE on the root lists every partition: nothing changes. */
static void
test_schema_change_on_root(void **state)
{
	ddl_part_root r;
	ddl_part_plan p;
	ddl_event *e = event("ddl", "ALTER TABLE", whole, 4, NULL, 0);

	(void) state;
	root_init(&r);
	ddl_partition_plan(e, &r, &p);
	assert_false(p.recopy);
	assert_int_equal(p.nadd, 0);
	assert_int_equal(p.nremove, 0);
	assert_null(p.why);
	ddl_part_plan_free(&p);
	ddl_part_root_clear(&r);
	ddl_event_free(e);
}

/* CREATE TABLE ... PARTITION OF: recorded, nothing to copy. */
static void
test_partition_created(void **state)
{
	listed created[] = {{104, "m_c", ROOT}};
	ddl_part_root r;
	ddl_part_plan p;
	ddl_event *e = event("ddl", "CREATE TABLE", created, 1, NULL, 0);

	(void) state;
	root_init(&r);
	ddl_partition_plan(e, &r, &p);
	assert_false(p.recopy);
	assert_int_equal(p.nadd, 1);
	assert_int_equal(p.add[0].relid, 104);
	assert_int_equal(p.add[0].parent, ROOT);
	assert_int_equal(p.nremove, 0);
	assert_non_null(strstr(p.why, "public.m_c created"));
	ddl_part_plan_free(&p);
	ddl_part_root_clear(&r);
	ddl_event_free(e);
}

/* ATTACH PARTITION of a table (with its own partition) under m_b: the
 * rows it brings are copied with the root. */
static void
test_table_attached(void **state)
{
	listed after[] = {{102, "m_b", ROOT}, {103, "m_b1", 102}, {110, "ext", 102}, {111, "ext_1", 110}};
	ddl_part_root r;
	ddl_part_plan p;
	ddl_event *e = event("ddl", "ALTER TABLE", after, 4, NULL, 0);

	(void) state;
	root_init(&r);
	ddl_partition_plan(e, &r, &p);
	assert_true(p.recopy);
	assert_int_equal(p.nadd, 2);
	assert_int_equal(p.add[0].relid, 110);
	assert_int_equal(p.add[1].parent, 110);
	assert_int_equal(p.nremove, 0);
	assert_non_null(strstr(p.why, "public.ext attached"));
	assert_non_null(strstr(p.why, "copied again"));
	ddl_part_plan_free(&p);
	ddl_part_root_clear(&r);
	ddl_event_free(e);
}

/* DETACH of m_b: neither it nor its partition is listed any more. */
static void
test_partition_detached(void **state)
{
	listed after[] = {{ROOT, "m", 0}, {101, "m_a", ROOT}};
	ddl_part_root r;
	ddl_part_plan p;
	ddl_event *e = event("ddl", "ALTER TABLE", after, 2, NULL, 0);

	(void) state;
	root_init(&r);
	ddl_partition_plan(e, &r, &p);
	assert_true(p.recopy);
	assert_int_equal(p.nremove, 2);
	assert_true(removes(&p, 102));
	assert_true(removes(&p, 103));
	assert_false(removes(&p, 101));
	assert_non_null(strstr(p.why, "public.m_b detached"));
	ddl_part_plan_free(&p);
	ddl_part_root_clear(&r);
	ddl_event_free(e);
}

/* A command on one partition lists only it (and its partitions): the
 * others did not leave; a rename is recorded. */
static void
test_command_on_a_partition(void **state)
{
	listed one[] = {{102, "m_b_renamed", ROOT}, {103, "m_b1", 102}};
	listed leaf_out[] = {{102, "m_b", ROOT}};
	ddl_part_root r;
	ddl_part_plan p;
	ddl_event *e = event("ddl", "ALTER TABLE", one, 2, NULL, 0);
	ddl_event *d = event("ddl", "ALTER TABLE", leaf_out, 1, NULL, 0);

	(void) state;
	root_init(&r);
	ddl_partition_plan(e, &r, &p);
	assert_false(p.recopy);
	assert_int_equal(p.nremove, 0);
	assert_int_equal(p.nadd, 1);
	assert_string_equal(p.add[0].name, "m_b_renamed");
	ddl_part_plan_free(&p);
	/* m_b1 detached from m_b: the message on m_b no longer lists it */
	ddl_partition_plan(d, &r, &p);
	assert_true(p.recopy);
	assert_int_equal(p.nremove, 1);
	assert_true(removes(&p, 103));
	ddl_part_plan_free(&p);
	ddl_part_root_clear(&r);
	ddl_event_free(e);
	ddl_event_free(d);
}

/* A partition listed as no partition any more (detached, then altered in
 * the same transaction) left too. */
static void
test_listed_as_plain_table(void **state)
{
	listed plain[] = {{101, "m_a", 0}};
	ddl_part_root r;
	ddl_part_plan p;
	ddl_event *e = event("ddl", "ALTER TABLE", plain, 1, NULL, 0);

	(void) state;
	root_init(&r);
	ddl_partition_plan(e, &r, &p);
	assert_true(p.recopy);
	assert_int_equal(p.nremove, 1);
	assert_true(removes(&p, 101));
	ddl_part_plan_free(&p);
	ddl_part_root_clear(&r);
	ddl_event_free(e);
}

/* DROP TABLE of a partition: copied again; of the root: nothing. */
static void
test_dropped(void **state)
{
	uint32_t leaf[] = {103};
	uint32_t all[] = {ROOT, 101, 102, 103};
	uint32_t other[] = {999};
	ddl_part_root r;
	ddl_part_plan p;
	ddl_event *e = event("drop", "DROP TABLE", NULL, 0, leaf, 1);
	ddl_event *d = event("drop", "DROP TABLE", NULL, 0, all, 4);
	ddl_event *o = event("drop", "DROP TABLE", NULL, 0, other, 1);

	(void) state;
	root_init(&r);
	ddl_partition_plan(e, &r, &p);
	assert_true(p.recopy);
	assert_int_equal(p.nremove, 1);
	assert_non_null(strstr(p.why, "m_b1 dropped"));
	ddl_part_plan_free(&p);
	ddl_partition_plan(d, &r, &p);
	assert_false(p.recopy);
	assert_int_equal(p.nremove, 0);
	ddl_part_plan_free(&p);
	ddl_partition_plan(o, &r, &p);
	assert_false(p.recopy);
	assert_null(p.why);
	ddl_part_plan_free(&p);
	ddl_part_root_clear(&r);
	ddl_event_free(e);
	ddl_event_free(d);
	ddl_event_free(o);
}

/* ADD COLUMN ... DEFAULT on the root: the value existing rows read is
 * stored in the leaves only; the root's columns take it from them. */
static void
test_root_columns_missing(void **state)
{
	const char *msg =
		"{\"version\": 1, \"kind\": \"ddl\", \"command_tag\": \"ALTER TABLE\", \"tables\": ["
		"{\"relid\": 100, \"schema\": \"public\", \"name\": \"m\", \"relkind\": \"p\","
		" \"partition_of\": null, \"partition_root\": null, \"columns\": ["
		"  {\"attnum\": 1, \"name\": \"id\", \"type\": \"integer\", \"key\": true},"
		"  {\"attnum\": 2, \"name\": \"note\", \"type\": \"text\", \"has_missing\": false,"
		"   \"missing\": null, \"default\": true}]},"
		"{\"relid\": 102, \"schema\": \"public\", \"name\": \"m_b\", \"relkind\": \"p\","
		" \"partition_of\": 100, \"partition_root\": 100, \"columns\": ["
		"  {\"attnum\": 1, \"name\": \"id\", \"type\": \"integer\", \"key\": true},"
		"  {\"attnum\": 2, \"name\": \"note\", \"type\": \"text\", \"has_missing\": false}]},"
		"{\"relid\": 103, \"schema\": \"public\", \"name\": \"m_b1\", \"relkind\": \"r\","
		" \"partition_of\": 102, \"partition_root\": 100, \"columns\": ["
		"  {\"attnum\": 1, \"name\": \"id\", \"type\": \"integer\", \"key\": true},"
		"  {\"attnum\": 3, \"name\": \"note\", \"type\": \"text\", \"has_missing\": true,"
		"   \"missing\": \"n\", \"default\": true}]}]}";
	ddl_event *e = NULL;
	ddl_event_column *cols;
	tm_error err;

	(void) state;
	assert_int_equal(ddl_event_parse(msg, strlen(msg), &e, &err), 0);
	cols = ddl_partition_root_columns(e, &e->tables[0]);
	assert_false(cols[0].has_missing);
	assert_true(cols[1].has_missing);
	assert_string_equal(cols[1].missing, "n");
	assert_true(cols[1].has_default);
	free(cols);
	/* a partitioned partition (replicated by itself when its root is not)
	 * takes it from its own leaves */
	cols = ddl_partition_root_columns(e, &e->tables[1]);
	assert_true(cols[1].has_missing);
	free(cols);
	/* a leaf keeps its own */
	cols = ddl_partition_root_columns(e, &e->tables[2]);
	assert_string_equal(cols[1].missing, "n");
	free(cols);
	ddl_event_free(e);
}

/* A recorded cycle (a corrupt catalog) ends the walk. */
static void
test_cycle_ends(void **state)
{
	listed other[] = {{500, "x", 0}};
	ddl_part_root r = {0};
	ddl_part_plan p;
	ddl_event *e = event("ddl", "ALTER TABLE", other, 1, NULL, 0);

	(void) state;
	r.relid = ROOT;
	ddl_part_root_add(&r, 201, 202, "public", "a");
	ddl_part_root_add(&r, 202, 201, "public", "b");
	ddl_partition_plan(e, &r, &p);
	assert_false(p.recopy);
	ddl_part_plan_free(&p);
	ddl_part_root_clear(&r);
	ddl_event_free(e);
}

/* A table's persistence (source migration 011): 'u' for an unlogged
 * table, 'p' when the message says so or says nothing (an older capture),
 * and kept by tabledef_copy. */
static void
test_persistence(void **state)
{
	const char *msg =
		"{\"version\": 1, \"kind\": \"ddl\", \"command_tag\": \"CREATE TABLE\", \"tables\": ["
		"{\"relid\": 200, \"schema\": \"public\", \"name\": \"u\", \"relkind\": \"r\","
		" \"persistence\": \"u\", \"columns\": ["
		"  {\"attnum\": 1, \"name\": \"id\", \"type\": \"integer\", \"key\": true}]},"
		"{\"relid\": 201, \"schema\": \"public\", \"name\": \"l\", \"relkind\": \"r\","
		" \"persistence\": \"p\", \"columns\": ["
		"  {\"attnum\": 1, \"name\": \"id\", \"type\": \"integer\", \"key\": true}]},"
		"{\"relid\": 202, \"schema\": \"public\", \"name\": \"old\", \"relkind\": \"r\","
		" \"columns\": ["
		"  {\"attnum\": 1, \"name\": \"id\", \"type\": \"integer\", \"key\": true}]}]}";
	ddl_event *e = NULL;
	tabledef *copy;
	tm_error err;

	(void) state;
	assert_int_equal(ddl_event_parse(msg, strlen(msg), &e, &err), 0);
	assert_int_equal(e->ntables, 3);
	assert_int_equal(e->tables[0].def->persistence, 'u');
	assert_int_equal(e->tables[1].def->persistence, 'p');
	assert_int_equal(e->tables[2].def->persistence, 'p');
	copy = tabledef_copy(e->tables[0].def);
	assert_int_equal(copy->persistence, 'u');
	tabledef_free(copy);
	ddl_event_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_fields),
		cmocka_unit_test(test_schema_change_on_root),
		cmocka_unit_test(test_partition_created),
		cmocka_unit_test(test_table_attached),
		cmocka_unit_test(test_partition_detached),
		cmocka_unit_test(test_command_on_a_partition),
		cmocka_unit_test(test_listed_as_plain_table),
		cmocka_unit_test(test_dropped),
		cmocka_unit_test(test_root_columns_missing),
		cmocka_unit_test(test_persistence),
		cmocka_unit_test(test_cycle_ends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
