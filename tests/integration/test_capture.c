/*
 * Integration tests of the DDL capture on the source
 * (migrations/source/001_capture.sql), installed the way users get it, by
 * `tidemark setup`. Each test reads what its DDL wrote to the WAL through a
 * test_decoding slot of its own and checks the messages' JSON: the catalog
 * definitions, their order among the row changes, transactions, quoting,
 * DDL inside DO blocks and functions, what is left out, and that the
 * capture never makes the DDL fail. Every message must carry the signature
 * that tidemark's C code computes with the source's capture key
 * (migrations/source/002_capture_key.sql, src/ddl/ddl_auth.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "ddl_auth.h"
#include "pgtest.h"

#define PREFIX "message: transactional: 1 prefix: tidemark.ddl, sz: "

static pgtest_cluster *cluster;
static char *src;     /* the source database: capture installed */
static char *dst;     /* the target database of the setup */
static char *src_app; /* the source as the non-superuser "app" */

/* Runs tidemark (argv: the arguments); fails the test unless it exits 0. */
static void
run_tidemark(const char *const argv[])
{
	char *out = NULL;
	int rc = pgtest_run_tidemark(argv, 60, &out);

	if (rc != 0)
		fail_msg("tidemark %s exited %d:\n%s", argv[0], rc, out ? out : "");
	free(out);
}

static int
group_setup(void **state)
{
	const char *argv[] = {"setup", NULL, NULL, NULL, NULL, "--slot", "tm_capture",
	                      "--publication", "tm_capture", "--table", "public.dummy", NULL};
	PGconn *c;

	(void) state;
	cluster = pgtest_cluster_start("capture");
	c = pgtest_connect(cluster);
	pgtest_exec(c, "CREATE DATABASE src");
	pgtest_exec(c, "CREATE DATABASE dst");
	PQfinish(c);
	src = pgtest_conninfo_db(cluster, "src");
	dst = pgtest_conninfo_db(cluster, "dst");
	if (asprintf(&src_app, "%s user=app", src) < 0)
		abort();
	c = pgtest_connect_str(src);
	pgtest_exec(c, "CREATE TABLE dummy (id int PRIMARY KEY);"
	               "CREATE ROLE app LOGIN; CREATE SCHEMA apps AUTHORIZATION app");
	argv[1] = "--source";
	argv[2] = src;
	argv[3] = "--target";
	argv[4] = dst;
	run_tidemark(argv);
	/* the setup's own slot would only hold WAL here */
	pgtest_exec(c, "SELECT pg_drop_replication_slot('tm_capture')");
	PQfinish(c);
	return 0;
}

static int
group_teardown(void **state)
{
	(void) state;
	pgtest_cluster_stop(cluster);
	free(src);
	free(dst);
	free(src_app);
	return 0;
}

/* ---- the decoded stream ---- */

typedef struct capture {
	PGconn *conn;      /* superuser connection to the source */
	char slot[64];
	json_t *stream;    /* everything decoded: a message as its JSON object,
	                    * any other line (BEGIN, a row change) as a string */
	json_t *msgs;      /* the capture messages only */
} capture;

/* Runs setup_sql (may be NULL), then makes the test's slot: the stream
 * starts after it. */
static capture *
capture_start(const char *name, const char *setup_sql)
{
	capture *cap = calloc(1, sizeof *cap);

	cap->conn = pgtest_connect_str(src);
	if (setup_sql != NULL)
		pgtest_exec(cap->conn, "%s", setup_sql);
	snprintf(cap->slot, sizeof cap->slot, "cap_%s", name);
	pgtest_exec(cap->conn, "SELECT pg_create_logical_replication_slot('%s', 'test_decoding')",
	            cap->slot);
	return cap;
}

/* The message's JSON, once its signature is checked against the key. */
static json_t *
signed_json(capture *cap, const char *line, const char *content)
{
	char *hex = pgtest_query_value(cap->conn, "SELECT encode(key, 'hex') FROM tidemark.capture_key");
	uint8_t key[DDL_AUTH_KEY_MAX];
	int key_len = hex ? ddl_auth_key_parse(hex, key, sizeof key) : -1;
	const char *body;
	size_t len;
	json_error_t err;
	json_t *msg;

	free(hex);
	assert_int_equal(key_len, 32);
	if (ddl_auth_check(key, (size_t) key_len, content, strlen(content), &body, &len) !=
	    DDL_AUTH_SIGNED)
		fail_msg("message not signed with the capture key: %s", line);
	if ((msg = json_loadb(body, len, 0, &err)) == NULL)
		fail_msg("message content is not JSON (%s): %s", err.text, line);
	return msg;
}

/* Decodes everything committed since the slot was made (or last read). */
static void
capture_read(capture *cap)
{
	char sql[160];
	PGresult *r;

	json_decref(cap->stream);
	json_decref(cap->msgs);
	cap->stream = json_array();
	cap->msgs = json_array();
	snprintf(sql, sizeof sql, "SELECT data FROM pg_logical_slot_get_changes('%s', NULL, NULL)",
	         cap->slot);
	r = PQexec(cap->conn, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("reading slot %s: %s", cap->slot, PQerrorMessage(cap->conn));
	for (int i = 0; i < PQntuples(r); i++) {
		const char *line = PQgetvalue(r, i, 0);
		const char *content = strstr(line, " content:");

		if (strncmp(line, "message:", 8) != 0) {
			json_array_append_new(cap->stream, json_string(line));
			continue;
		}
		if (strncmp(line, PREFIX, strlen(PREFIX)) != 0 || content == NULL)
			fail_msg("not a transactional tidemark.ddl message: %s", line);
		json_t *msg = signed_json(cap, line, content + strlen(" content:"));

		json_array_append(cap->msgs, msg);
		json_array_append_new(cap->stream, msg);
	}
	PQclear(r);
}

static void
capture_end(capture *cap)
{
	pgtest_exec(cap->conn, "SELECT pg_drop_replication_slot('%s')", cap->slot);
	PQfinish(cap->conn);
	json_decref(cap->stream);
	json_decref(cap->msgs);
	free(cap);
}

/* ---- reading a message ---- */

static const char *
str(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (v == NULL)
		fail_msg("key \"%s\" missing", key);
	return json_string_value(v); /* NULL for a JSON null */
}

static json_int_t
num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("key \"%s\" is not an integer", key);
	return json_integer_value(v);
}

static bool
flag(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_boolean(v))
		fail_msg("key \"%s\" is not a boolean", key);
	return json_is_true(v);
}

static json_t *
msg_at(const capture *cap, size_t i)
{
	json_t *m = json_array_get(cap->msgs, i);

	if (m == NULL)
		fail_msg("no message %zu (%zu decoded)", i, json_array_size(cap->msgs));
	return m;
}

/* Every message has every key of the format, with the right types. */
static void
assert_envelope(const json_t *m, const char *kind)
{
	const char *time = str(m, "time");

	assert_int_equal(num(m, "version"), 1);
	assert_string_equal(str(m, "kind"), kind);
	assert_non_null(str(m, "command_tag"));
	assert_non_null(str(m, "user"));
	assert_non_null(str(m, "role"));
	assert_non_null(str(m, "timezone"));
	assert_int_equal(strlen(time), strlen("2024-05-01T12:00:00.123456Z"));
	assert_int_equal(time[10], 'T');
	assert_int_equal(time[26], 'Z');
	assert_true(num(m, "xid") > 0);
	assert_true(num(m, "seq") >= 1);
	assert_true(num(m, "statement_seq") >= 1);
	assert_true(json_is_array(json_object_get(m, "commands")));
	assert_true(json_is_array(json_object_get(m, "tables")));
	assert_true(json_is_array(json_object_get(m, "dropped")));
	assert_non_null(json_object_get(m, "rewrite"));
	assert_non_null(json_object_get(m, "error"));
	if (strcmp(kind, "rewrite") != 0)
		assert_true(json_is_null(json_object_get(m, "rewrite")));
	if (!json_is_null(json_object_get(m, "error")))
		fail_msg("capture error: %s", str(m, "error"));
}

static json_t *
find_named(const json_t *arr, const char *name)
{
	size_t i;
	json_t *v;

	json_array_foreach(arr, i, v)
		if (strcmp(str(v, "name"), name) == 0)
			return v;
	return NULL;
}

/* The table of a ddl message, by name (fails if absent). */
static json_t *
msg_table(const json_t *m, const char *name)
{
	json_t *t = find_named(json_object_get(m, "tables"), name);

	if (t == NULL)
		fail_msg("table %s not in the message", name);
	return t;
}

/* A column of a table of a message, by name; NULL if absent. */
static json_t *
table_column(const json_t *t, const char *name)
{
	return find_named(json_object_get(t, "columns"), name);
}

static long
table_oid(PGconn *c, const char *regclass)
{
	return pgtest_query_long(c, "SELECT '%s'::regclass::oid::bigint", regclass);
}

/* ---- the tests ---- */

/* A type change: the rewrite message first, then the new definition. */
static void
test_alter_column_type(void **state)
{
	capture *cap;
	json_t *m, *t, *col, *rw;
	const char *ddl = "ALTER TABLE orders ALTER COLUMN total TYPE numeric(12,2)";

	(void) state;
	cap = capture_start("alter_type",
	                    "CREATE TABLE orders (id int PRIMARY KEY, total float8, note text);"
	                    "INSERT INTO orders VALUES (1, 2.345, 'x')");
	pgtest_exec(cap->conn, "%s", ddl);
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 2);

	m = msg_at(cap, 0);
	assert_envelope(m, "rewrite");
	assert_int_equal(num(m, "seq"), 1);
	rw = json_object_get(m, "rewrite");
	assert_int_equal(num(rw, "relid"), table_oid(cap->conn, "orders"));
	assert_string_equal(str(rw, "schema"), "public");
	assert_string_equal(str(rw, "name"), "orders");
	assert_true(num(rw, "reason") & 4); /* values converted */
	assert_int_equal(json_array_size(json_object_get(m, "tables")), 0);

	m = msg_at(cap, 1);
	assert_envelope(m, "ddl");
	assert_int_equal(num(m, "seq"), 2);
	assert_int_equal(num(m, "xid"), num(msg_at(cap, 0), "xid"));
	assert_string_equal(str(m, "command_tag"), "ALTER TABLE");
	assert_string_equal(str(m, "statement"), ddl);
	assert_string_equal(str(m, "user"), "postgres");
	assert_string_equal(str(m, "role"), "postgres");
	assert_string_equal(str(json_array_get(json_object_get(m, "commands"), 0), "identity"),
	                    "public.orders");
	assert_int_equal(json_array_size(json_object_get(m, "tables")), 1);
	t = msg_table(m, "orders");
	assert_int_equal(num(t, "relid"), table_oid(cap->conn, "orders"));
	assert_string_equal(str(t, "relkind"), "r");
	assert_string_equal(str(t, "replident"), "d");
	assert_int_equal(json_array_size(json_object_get(t, "columns")), 3);
	col = table_column(t, "total");
	assert_non_null(col);
	assert_int_equal(num(col, "attnum"), 2);
	assert_string_equal(str(col, "type"), "numeric(12,2)");
	assert_string_equal(str(col, "target_type"), "numeric(12,2)");
	assert_int_equal(num(col, "type_oid"), 1700);
	assert_int_equal(num(col, "typmod"), (12 << 16 | 2) + 4);
	assert_false(flag(col, "key"));
	assert_false(flag(col, "not_null"));
	col = table_column(t, "id");
	assert_true(flag(col, "key"));
	assert_true(flag(col, "not_null"));
	assert_string_equal(str(col, "type"), "integer");
	capture_end(cap);
}

/* A constant default is a "missing" value of the old rows; a volatile one
 * rewrites the table (which also writes the missing values out). */
static void
test_add_column_defaults(void **state)
{
	capture *cap = capture_start("defaults", NULL);
	json_t *m, *col;

	(void) state;
	pgtest_exec(cap->conn, "CREATE TABLE items (id int PRIMARY KEY); INSERT INTO items VALUES (1)");
	pgtest_exec(cap->conn, "ALTER TABLE items ADD COLUMN status text NOT NULL DEFAULT 'it''s new'");
	pgtest_exec(cap->conn, "SET TimeZone = 'Asia/Tokyo'; SET DateStyle = 'SQL, DMY';"
	                       " ALTER TABLE items ADD COLUMN plain int,"
	                       " ADD COLUMN since timestamptz DEFAULT '2024-02-29 09:30:00+09';"
	                       " RESET TimeZone; RESET DateStyle");
	pgtest_exec(cap->conn, "ALTER TABLE items ADD COLUMN r float8 DEFAULT random()");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 5);

	m = msg_at(cap, 1);
	assert_envelope(m, "ddl");
	col = table_column(msg_table(m, "items"), "status");
	assert_true(flag(col, "has_missing"));
	assert_string_equal(str(col, "missing"), "it's new");
	assert_true(flag(col, "default"));
	assert_true(flag(col, "not_null"));

	m = msg_at(cap, 2);
	assert_string_equal(str(m, "timezone"), "Asia/Tokyo");
	col = table_column(msg_table(m, "items"), "since");
	assert_string_equal(str(col, "missing"), "2024-02-29 00:30:00+00");
	col = table_column(msg_table(m, "items"), "plain");
	assert_false(flag(col, "has_missing"));
	assert_null(str(col, "missing"));
	assert_false(flag(col, "default"));

	m = msg_at(cap, 3);
	assert_envelope(m, "rewrite");
	assert_int_equal(num(m, "seq"), 1);
	assert_true(num(json_object_get(m, "rewrite"), "reason") & 2); /* default per row */

	m = msg_at(cap, 4);
	assert_envelope(m, "ddl");
	assert_int_equal(num(m, "seq"), 2);
	col = table_column(msg_table(m, "items"), "r");
	assert_true(flag(col, "default"));
	assert_false(flag(col, "has_missing"));
	col = table_column(msg_table(m, "items"), "status");
	assert_false(flag(col, "has_missing")); /* the rewrite stored it in the rows */
	capture_end(cap);
}

/* A rename keeps the attnum; a dropped column is announced, then gone. */
static void
test_rename_and_drop_column(void **state)
{
	capture *cap;
	json_t *m, *t, *d, *cmd;
	long oid;

	(void) state;
	cap = capture_start("rename_drop",
	                    "CREATE TABLE people (id int PRIMARY KEY, nick text, age int)");
	oid = table_oid(cap->conn, "people");
	pgtest_exec(cap->conn, "ALTER TABLE people RENAME COLUMN nick TO handle");
	pgtest_exec(cap->conn, "ALTER TABLE people DROP COLUMN age");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 3);

	m = msg_at(cap, 0);
	assert_envelope(m, "ddl");
	cmd = json_array_get(json_object_get(m, "commands"), 0);
	assert_string_equal(str(cmd, "object_type"), "table column");
	assert_int_equal(num(cmd, "objid"), oid);
	assert_int_equal(num(cmd, "objsubid"), 2);
	t = msg_table(m, "people");
	assert_null(table_column(t, "nick"));
	assert_int_equal(num(table_column(t, "handle"), "attnum"), 2);

	m = msg_at(cap, 1);
	assert_envelope(m, "drop");
	assert_int_equal(num(m, "seq"), 1);
	assert_string_equal(str(m, "command_tag"), "ALTER TABLE");
	assert_int_equal(json_array_size(json_object_get(m, "dropped")), 1);
	assert_int_equal(json_array_size(json_object_get(m, "tables")), 0);
	d = json_array_get(json_object_get(m, "dropped"), 0);
	assert_string_equal(str(d, "object_type"), "table column");
	assert_string_equal(str(d, "schema"), "public");
	assert_string_equal(str(d, "identity"), "public.people.age");
	assert_int_equal(num(d, "objid"), oid);
	assert_int_equal(num(d, "objsubid"), 3);
	assert_string_equal(json_string_value(json_array_get(json_object_get(d, "address_names"), 2)),
	                    "age");

	m = msg_at(cap, 2);
	assert_envelope(m, "ddl");
	assert_int_equal(num(m, "seq"), 2);
	t = msg_table(m, "people");
	assert_int_equal(json_array_size(json_object_get(t, "columns")), 2);
	assert_null(table_column(t, "age"));

	/* the table itself renamed and moved: same relid */
	pgtest_exec(cap->conn, "ALTER TABLE people RENAME TO persons;"
	                       " ALTER TABLE persons SET SCHEMA apps");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 2);
	t = msg_table(msg_at(cap, 0), "persons");
	assert_int_equal(num(t, "relid"), oid);
	assert_string_equal(str(t, "schema"), "public");
	t = msg_table(msg_at(cap, 1), "persons");
	assert_int_equal(num(t, "relid"), oid);
	assert_string_equal(str(t, "schema"), "apps");
	capture_end(cap);
}

/* The key: the primary key, else the replica identity index; CREATE TABLE
 * AS is a new table like any other. */
static void
test_key_changes(void **state)
{
	capture *cap = capture_start("keys", NULL);
	json_t *t;

	(void) state;
	pgtest_exec(cap->conn, "CREATE TABLE loose (a int NOT NULL, b int NOT NULL, c text)");
	pgtest_exec(cap->conn, "ALTER TABLE loose ADD PRIMARY KEY (a)");
	pgtest_exec(cap->conn, "CREATE UNIQUE INDEX loose_b ON loose (b)");
	pgtest_exec(cap->conn, "ALTER TABLE loose REPLICA IDENTITY USING INDEX loose_b");
	pgtest_exec(cap->conn, "CREATE TABLE loose_copy AS SELECT a, c FROM loose");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 5);
	t = msg_table(msg_at(cap, 0), "loose");
	assert_false(flag(table_column(t, "a"), "key"));
	t = msg_table(msg_at(cap, 1), "loose");
	assert_true(flag(table_column(t, "a"), "key"));
	assert_false(flag(table_column(t, "b"), "key"));
	assert_string_equal(str(msg_at(cap, 2), "command_tag"), "CREATE INDEX");
	t = msg_table(msg_at(cap, 3), "loose");
	assert_string_equal(str(t, "replident"), "i");
	assert_false(flag(table_column(t, "a"), "key"));
	assert_true(flag(table_column(t, "b"), "key"));
	assert_string_equal(str(msg_at(cap, 4), "command_tag"), "CREATE TABLE AS");
	t = msg_table(msg_at(cap, 4), "loose_copy");
	assert_int_equal(json_array_size(json_object_get(t, "columns")), 2);
	capture_end(cap);
}

/* Changes that reach a table through another object: an inheritance child
 * of an altered parent, a renamed type of a column, a renamed schema. */
static void
test_indirect_changes(void **state)
{
	capture *cap;
	json_t *m;

	(void) state;
	cap = capture_start("indirect",
	                    "CREATE TABLE base (id int); CREATE TABLE derived (x int) INHERITS (base);"
	                    "CREATE TYPE mood AS ENUM ('ok'); CREATE TABLE feelings (m mood);"
	                    "CREATE SCHEMA old_ns; CREATE TABLE old_ns.inside (a int)");
	pgtest_exec(cap->conn, "ALTER TABLE base ADD COLUMN added int");
	pgtest_exec(cap->conn, "ALTER TYPE mood RENAME TO humour");
	pgtest_exec(cap->conn, "ALTER SCHEMA old_ns RENAME TO new_ns");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 3);
	m = msg_at(cap, 0);
	assert_int_equal(json_array_size(json_object_get(m, "tables")), 2);
	assert_int_equal(num(table_column(msg_table(m, "derived"), "added"), "attnum"), 3);
	m = msg_at(cap, 1);
	assert_string_equal(str(m, "command_tag"), "ALTER TYPE");
	assert_string_equal(str(table_column(msg_table(m, "feelings"), "m"), "type"),
	                    "public.humour");
	assert_string_equal(str(table_column(msg_table(m, "feelings"), "m"), "target_type"),
	                    "public.humour");
	/* the type itself, under its new name and its old oid */
	assert_string_equal(str(find_named(json_object_get(m, "types"), "humour"), "kind"), "enum");
	assert_int_equal(num(find_named(json_object_get(m, "types"), "humour"), "oid"),
	                 num(table_column(msg_table(m, "feelings"), "m"), "type_oid"));
	m = msg_at(cap, 2);
	assert_string_equal(str(msg_table(m, "inside"), "schema"), "new_ns");
	capture_end(cap);
}

/* Types (migrations/source/004_target_types.sql): a command on a type
 * sends its definition, also when no table uses it; a table's definition
 * carries the types its columns need, their collations and generated
 * columns. */
static void
test_type_messages(void **state)
{
	capture *cap;
	json_t *m, *types, *mood, *t;

	(void) state;
	cap = capture_start("types", "CREATE TYPE mood AS ENUM ('low', 'high');"
	                    "CREATE TYPE pair AS (m mood, note text COLLATE \"C\");"
	                    "CREATE TABLE uses (id int PRIMARY KEY, p pair,"
	                    "  twice int GENERATED ALWAYS AS (id * 2) STORED)");
	pgtest_exec(cap->conn, "CREATE TYPE lonely AS ENUM ('a')");
	pgtest_exec(cap->conn, "ALTER TYPE mood ADD VALUE 'mid' BEFORE 'high'");
	pgtest_exec(cap->conn, "ALTER TYPE pair ADD ATTRIBUTE extra int");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 3);
	m = msg_at(cap, 0);
	assert_envelope(m, "ddl");
	assert_int_equal(json_array_size(json_object_get(m, "tables")), 0);
	assert_string_equal(str(find_named(json_object_get(m, "types"), "lonely"), "kind"), "enum");
	m = msg_at(cap, 1);
	assert_string_equal(str(m, "command_tag"), "ALTER TYPE");
	mood = find_named(json_object_get(m, "types"), "mood");
	types = json_object_get(mood, "labels");
	assert_int_equal(json_array_size(types), 3);
	assert_string_equal(str(json_array_get(types, 1), "label"), "mid");
	/* ALTER TYPE ... ATTRIBUTE: the type, with the mood it needs, and its table */
	m = msg_at(cap, 2);
	types = json_object_get(m, "types");
	assert_int_equal(json_array_size(types), 2);
	assert_int_equal(json_array_size(json_object_get(find_named(types, "pair"), "attributes")), 3);
	assert_int_equal(json_integer_value(json_array_get(
	                     json_object_get(find_named(types, "pair"), "depends"), 0)),
	                 num(find_named(types, "mood"), "oid"));
	assert_string_equal(str(json_object_get(json_array_get(json_object_get(
	                        find_named(types, "pair"), "attributes"), 1), "collation"), "name"), "C");
	t = msg_table(m, "uses");
	assert_int_equal(json_array_size(json_object_get(t, "types")), 2);
	assert_string_equal(str(table_column(t, "twice"), "generated"), "(id * 2)");
	assert_false(flag(table_column(t, "twice"), "default"));
	assert_string_equal(str(table_column(t, "p"), "target_type"), "public.pair");
	capture_end(cap);
}

/* A composite primary key; DROP TABLE sends the table's identity. */
static void
test_create_and_drop_table(void **state)
{
	capture *cap = capture_start("create_drop", NULL);
	json_t *m, *t, *d;
	long oid;

	(void) state;
	pgtest_exec(cap->conn, "CREATE TABLE lines (order_id bigint, line_no int, qty int,"
	                       " PRIMARY KEY (order_id, line_no))");
	oid = table_oid(cap->conn, "lines");
	pgtest_exec(cap->conn, "DROP TABLE lines");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 2);

	m = msg_at(cap, 0);
	assert_envelope(m, "ddl");
	assert_string_equal(str(m, "command_tag"), "CREATE TABLE");
	assert_int_equal(json_array_size(json_object_get(m, "commands")), 2); /* table, index */
	assert_string_equal(str(json_array_get(json_object_get(m, "commands"), 1), "command_tag"),
	                    "CREATE INDEX");
	t = msg_table(m, "lines");
	assert_int_equal(num(t, "relid"), oid);
	assert_true(flag(table_column(t, "order_id"), "key"));
	assert_true(flag(table_column(t, "line_no"), "key"));
	assert_false(flag(table_column(t, "qty"), "key"));
	assert_true(flag(table_column(t, "line_no"), "not_null"));
	assert_string_equal(str(table_column(t, "order_id"), "type"), "bigint");

	m = msg_at(cap, 1);
	assert_envelope(m, "drop");
	assert_string_equal(str(m, "command_tag"), "DROP TABLE");
	assert_int_equal(json_array_size(json_object_get(m, "dropped")), 1);
	d = json_array_get(json_object_get(m, "dropped"), 0);
	assert_string_equal(str(d, "object_type"), "table");
	assert_string_equal(str(d, "identity"), "public.lines");
	assert_string_equal(str(d, "name"), "lines");
	assert_int_equal(num(d, "objid"), oid);
	assert_int_equal(num(d, "objsubid"), 0);
	capture_end(cap);
}

/* DDL inside a DO block and a function: the statement is the outer text
 * by its kind only (a DO block or a call may hold a secret: 008), the
 * catalog still tells what happened. */
static void
test_do_block_and_function(void **state)
{
	capture *cap;
	const char *block = "DO $$BEGIN EXECUTE 'ALTER TABLE acc ADD COLUMN via_do int'; END$$";
	json_t *m;

	(void) state;
	cap = capture_start("do_function",
	                    "CREATE TABLE acc (id int PRIMARY KEY);"
	                    "CREATE FUNCTION add_col() RETURNS void LANGUAGE plpgsql AS"
	                    " $$BEGIN ALTER TABLE acc ADD COLUMN via_fn text; END$$");
	pgtest_exec(cap->conn, "%s", block);
	pgtest_exec(cap->conn, "SELECT add_col()");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 2);

	m = msg_at(cap, 0);
	assert_envelope(m, "ddl");
	assert_string_equal(str(m, "statement"), "/* DO: left out by the capture */");
	assert_string_equal(str(m, "command_tag"), "ALTER TABLE");
	assert_non_null(table_column(msg_table(m, "acc"), "via_do"));

	m = msg_at(cap, 1);
	assert_envelope(m, "ddl");
	assert_string_equal(str(m, "statement"), "/* SELECT: left out by the capture */");
	assert_string_equal(str(table_column(msg_table(m, "acc"), "via_fn"), "type"), "text");
	assert_int_equal(num(table_column(msg_table(m, "acc"), "via_fn"), "attnum"), 3);
	capture_end(cap);
}

/* One string of DML and DDL: the message sits between the row changes, in
 * one transaction; its statement holds the DDL, the DML by its kind. */
static void
test_multi_statement_order(void **state)
{
	capture *cap;
	const char *sql = "INSERT INTO mix VALUES (1, 1); ALTER TABLE mix ADD COLUMN w int;"
	                  " UPDATE mix SET w = 2";
	long insert_at = -1, message_at = -1, update_at = -1, begins = 0;
	size_t i;
	json_t *v;

	(void) state;
	cap = capture_start("multi", "CREATE TABLE mix (id int PRIMARY KEY, v int)");
	pgtest_exec(cap->conn, "%s", sql);
	capture_read(cap);
	json_array_foreach(cap->stream, i, v) {
		if (json_is_object(v)) {
			message_at = (long) i;
			assert_envelope(v, "ddl");
			assert_string_equal(str(v, "statement"),
			                    "/* INSERT: left out by the capture */; ALTER TABLE mix ADD "
			                    "COLUMN w int; /* UPDATE: left out by the capture */");
			assert_non_null(table_column(msg_table(v, "mix"), "w"));
		} else if (strncmp(json_string_value(v), "BEGIN", 5) == 0) {
			begins++;
		} else if (strstr(json_string_value(v), "table public.mix: INSERT:") != NULL) {
			insert_at = (long) i;
		} else if (strstr(json_string_value(v), "table public.mix: UPDATE:") != NULL) {
			update_at = (long) i;
		}
	}
	assert_int_equal(begins, 1);
	assert_int_equal(json_array_size(cap->msgs), 1);
	assert_true(insert_at >= 0 && insert_at < message_at && message_at < update_at);
	capture_end(cap);
}

/* Messages are transactional: gone with a rollback, also of a savepoint;
 * seq counts the messages that stay, in one transaction. */
static void
test_transactions_and_seq(void **state)
{
	capture *cap;
	json_t *m;
	size_t i;

	(void) state;
	cap = capture_start("xact", "CREATE TABLE tx (id int PRIMARY KEY, gone int)");
	pgtest_exec(cap->conn, "BEGIN; ALTER TABLE tx ADD COLUMN never int; ROLLBACK");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 0);

	pgtest_exec(cap->conn, "BEGIN; ALTER TABLE tx ADD COLUMN a int;"
	                       " SAVEPOINT s; ALTER TABLE tx ADD COLUMN undone int; ROLLBACK TO s;"
	                       " ALTER TABLE tx DROP COLUMN gone;"
	                       " ALTER TABLE tx ALTER COLUMN a TYPE text; COMMIT");
	capture_read(cap);
	/* add a; drop: sql_drop, ddl; type change: rewrite, ddl */
	assert_int_equal(json_array_size(cap->msgs), 5);
	json_array_foreach(cap->msgs, i, m) {
		assert_int_equal(num(m, "seq"), (json_int_t) i + 1);
		assert_int_equal(num(m, "xid"), num(msg_at(cap, 0), "xid"));
	}
	assert_null(table_column(msg_table(msg_at(cap, 4), "tx"), "undone"));
	assert_string_equal(str(msg_at(cap, 1), "kind"), "drop");
	assert_string_equal(str(msg_at(cap, 3), "kind"), "rewrite");
	assert_string_equal(str(table_column(msg_table(msg_at(cap, 4), "tx"), "a"), "type"), "text");
	capture_end(cap);
}

/* A client string longer than 4096 bytes is written once per transaction;
 * later messages of the same string point to it. */
static void
test_long_statement_once(void **state)
{
	capture *cap;
	char *sql = malloc(64 * 1024);
	size_t n = 0;

	(void) state;
	cap = capture_start("long", "CREATE TABLE wide (id int PRIMARY KEY)");
	for (int i = 0; i < 200; i++)
		n += (size_t) sprintf(sql + n, "ALTER TABLE wide ADD COLUMN c%03d int;", i);
	pgtest_exec(cap->conn, "%s", sql);
	pgtest_exec(cap->conn, "ALTER TABLE wide ADD COLUMN short_one int");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 201);
	assert_string_equal(str(msg_at(cap, 0), "statement"), sql);
	assert_int_equal(num(msg_at(cap, 0), "statement_seq"), 1);
	for (size_t i = 1; i < 200; i++) {
		assert_null(str(msg_at(cap, i), "statement"));
		assert_int_equal(num(msg_at(cap, i), "statement_seq"), 1);
		assert_int_equal(num(msg_at(cap, i), "seq"), (json_int_t) i + 1);
	}
	assert_int_equal(json_array_size(json_object_get(msg_table(msg_at(cap, 199), "wide"),
	                                                 "columns")), 201);
	/* the next transaction carries its own text */
	assert_string_equal(str(msg_at(cap, 200), "statement"),
	                    "ALTER TABLE wide ADD COLUMN short_one int");
	assert_int_equal(num(msg_at(cap, 200), "seq"), 1);
	free(sql);
	capture_end(cap);
}

/* Names with quotes, spaces, commas and keywords come out exactly. */
static void
test_quoted_names(void **state)
{
	capture *cap = capture_start("quoted", NULL);
	json_t *m, *t;

	(void) state;
	pgtest_exec(cap->conn, "CREATE SCHEMA \"My Schema\";"
	                       "CREATE TABLE \"My Schema\".\"select\" (\"my \"\"col\"\", x\" int"
	                       " PRIMARY KEY, \"Weird Name\" text)");
	pgtest_exec(cap->conn, "ALTER TABLE \"My Schema\".\"select\" RENAME COLUMN \"Weird Name\""
	                       " TO \"from\"");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 2);
	m = msg_at(cap, 0);
	assert_envelope(m, "ddl");
	assert_string_equal(str(json_array_get(json_object_get(m, "commands"), 0), "identity"),
	                    "\"My Schema\".\"select\"");
	t = msg_table(m, "select");
	assert_string_equal(str(t, "schema"), "My Schema");
	assert_true(flag(table_column(t, "my \"col\", x"), "key"));
	assert_non_null(table_column(t, "Weird Name"));
	t = msg_table(msg_at(cap, 1), "select");
	assert_int_equal(num(table_column(t, "from"), "attnum"), 2);
	capture_end(cap);
}

/* ALTER TABLE on a partitioned table reports only the parent; the message
 * lists the partitions too, and each rewritten partition sends a rewrite. */
static void
test_partitioned_table(void **state)
{
	capture *cap;
	json_t *m;

	(void) state;
	cap = capture_start("partitioned",
	                    "CREATE TABLE meas (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);"
	                    "CREATE TABLE meas_a PARTITION OF meas FOR VALUES FROM (0) TO (100);"
	                    "CREATE TABLE meas_b PARTITION OF meas FOR VALUES FROM (100) TO (200)");
	pgtest_exec(cap->conn, "ALTER TABLE meas ALTER COLUMN v TYPE varchar(20)");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 3);
	assert_envelope(msg_at(cap, 0), "rewrite");
	assert_envelope(msg_at(cap, 1), "rewrite");
	assert_string_equal(str(json_object_get(msg_at(cap, 0), "rewrite"), "name"), "meas_a");
	assert_string_equal(str(json_object_get(msg_at(cap, 1), "rewrite"), "name"), "meas_b");
	m = msg_at(cap, 2);
	assert_envelope(m, "ddl");
	assert_int_equal(json_array_size(json_object_get(m, "commands")), 1);
	assert_int_equal(json_array_size(json_object_get(m, "tables")), 3);
	assert_string_equal(str(json_array_get(json_object_get(m, "tables"), 0), "name"), "meas");
	assert_string_equal(str(json_array_get(json_object_get(m, "tables"), 0), "relkind"), "p");
	assert_string_equal(str(table_column(msg_table(m, "meas_b"), "v"), "type"),
	                    "character varying(20)");
	capture_end(cap);
}

/* Temporary tables, tidemark's own schema, and DDL on other objects than
 * tables and types (the types an extension creates included) send
 * nothing, and none of it fails. */
static void
test_not_captured(void **state)
{
	capture *cap = capture_start("not_captured", NULL);

	(void) state;
	pgtest_exec(cap->conn, "CREATE TEMP TABLE scratch (a int); ALTER TABLE scratch ADD b int;"
	                       " DROP TABLE scratch");
	pgtest_exec(cap->conn, "CREATE TABLE tidemark.own (a int); ALTER TABLE tidemark.own ADD b int;"
	                       " ALTER TABLE tidemark.own DROP COLUMN a; DROP TABLE tidemark.own");
	pgtest_exec(cap->conn, "CREATE EXTENSION hstore");
	pgtest_exec(cap->conn, "CREATE FUNCTION one() RETURNS int LANGUAGE sql AS 'SELECT 1'");
	pgtest_exec(cap->conn, "CREATE MATERIALIZED VIEW mv AS SELECT 1 AS a;"
	                       " CREATE INDEX ON mv (a); CREATE VIEW v AS SELECT 1 AS a;"
	                       " CREATE SEQUENCE sq");
	pgtest_exec(cap->conn, "COMMENT ON TABLE dummy IS 'a comment'");
	pgtest_exec(cap->conn, "DROP MATERIALIZED VIEW mv; DROP VIEW v; DROP FUNCTION one();"
	                       " DROP EXTENSION hstore");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 0);
	capture_end(cap);
}

static void
rename_function(PGconn *c, const char *from, const char *to)
{
	pgtest_exec(c, "ALTER FUNCTION tidemark.%s RENAME TO %s", from, to);
}

/* A non-superuser's DDL is captured; a capture that breaks still sends
 * what it gathered, with the error; one that cannot even do that sends
 * nothing: the DDL itself never fails. */
static void
test_never_fails_ddl(void **state)
{
	capture *cap = capture_start("never_fails", NULL);
	PGconn *app = pgtest_connect_str(src_app);
	char *err;
	json_t *m;

	(void) state;
	pgtest_exec(app, "CREATE TABLE apps.mine (id int PRIMARY KEY)");
	pgtest_exec(app, "ALTER TABLE apps.mine ADD COLUMN v text DEFAULT 'x'");
	pgtest_exec(app, "CREATE INDEX ON apps.mine (v)");

	/* a broken capture: a function it needs is missing */
	rename_function(cap->conn, "capture_tables(oid[])", "capture_tables_off");
	err = pgtest_exec_error(app, "ALTER TABLE apps.mine ADD COLUMN w int");
	rename_function(cap->conn, "capture_envelope(text, text, json, json, json, json, text)",
	                "capture_envelope_off");
	if (err == NULL)
		err = pgtest_exec_error(app, "ALTER TABLE apps.mine ADD COLUMN z int");
	rename_function(cap->conn, "capture_tables_off(oid[])", "capture_tables");
	rename_function(cap->conn, "capture_envelope_off(text, text, json, json, json, json, text)",
	                "capture_envelope");
	if (err != NULL)
		fail_msg("DDL failed while the capture was broken: %s", err);
	assert_int_equal(pgtest_query_long(app, "SELECT count(*) FROM pg_attribute WHERE attrelid ="
	                                        " 'apps.mine'::regclass AND attname IN ('w', 'z')"), 2);

	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 4);
	m = msg_at(cap, 0);
	assert_envelope(m, "ddl");
	assert_string_equal(str(m, "user"), "app");
	assert_string_equal(str(m, "role"), "app");
	assert_true(flag(table_column(msg_table(m, "mine"), "id"), "key"));
	m = msg_at(cap, 1);
	assert_true(flag(table_column(msg_table(m, "mine"), "v"), "has_missing"));
	m = msg_at(cap, 2);
	assert_string_equal(str(m, "command_tag"), "CREATE INDEX");
	assert_non_null(msg_table(m, "mine"));
	/* the broken one: commands gathered, tables not, the error said */
	m = msg_at(cap, 3);
	assert_string_equal(str(m, "kind"), "ddl");
	assert_string_equal(str(m, "statement"), "ALTER TABLE apps.mine ADD COLUMN w int");
	assert_string_equal(str(json_array_get(json_object_get(m, "commands"), 0), "identity"),
	                    "apps.mine");
	assert_int_equal(json_array_size(json_object_get(m, "tables")), 0);
	assert_non_null(str(m, "error"));
	assert_non_null(strstr(str(m, "error"), "capture_tables"));

	/* repaired */
	pgtest_exec(app, "ALTER TABLE apps.mine DROP COLUMN z");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 2);
	assert_envelope(msg_at(cap, 1), "ddl");
	PQfinish(app);
	capture_end(cap);
}

/* TRUNCATE of a partition (which pgoutput does not publish through its
 * root) sends a truncate message naming it and its root; a TRUNCATE of the
 * root sends the root's first. Partitions created or attached later get
 * the trigger too; an application's TRUNCATE never fails for it. */
static void
test_truncate_of_partition(void **state)
{
	capture *cap;
	json_t *m, *t;

	(void) state;
	cap = capture_start("truncate",
	                    "CREATE TABLE tr (id int, k int, PRIMARY KEY (id, k)) PARTITION BY LIST (k);"
	                    "CREATE TABLE tr_1 PARTITION OF tr FOR VALUES IN (1) PARTITION BY HASH (id);"
	                    "CREATE TABLE tr_1a PARTITION OF tr_1 FOR VALUES WITH (MODULUS 1, REMAINDER 0);"
	                    "CREATE TABLE tr_2 (id int, k int, PRIMARY KEY (id, k));"
	                    "ALTER TABLE tr ATTACH PARTITION tr_2 FOR VALUES IN (2);"
	                    "CREATE TABLE plain_t (id int PRIMARY KEY)");
	assert_int_equal(pgtest_query_long(cap->conn, "SELECT count(*) FROM pg_trigger"
	                                              " WHERE tgname = 'tidemark_truncate'"
	                                              " AND tgrelid::regclass::text LIKE 'tr%%'"), 4);
	assert_int_equal(pgtest_query_long(cap->conn, "SELECT count(*) FROM pg_trigger WHERE"
	                                              " tgrelid = 'plain_t'::regclass"), 0);
	pgtest_exec(cap->conn, "TRUNCATE tr_2");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 1);
	m = msg_at(cap, 0);
	assert_envelope(m, "truncate");
	assert_string_equal(str(m, "command_tag"), "TRUNCATE TABLE");
	t = msg_table(m, "tr_2");
	assert_non_null(t);
	assert_int_equal(num(t, "partition_root"),
	                 pgtest_query_long(cap->conn, "SELECT 'tr'::regclass::oid::bigint"));
	pgtest_exec(cap->conn, "TRUNCATE tr; TRUNCATE plain_t");
	capture_read(cap);
	assert_int_equal(json_array_size(cap->msgs), 4);
	assert_true(json_is_null(json_object_get(msg_table(msg_at(cap, 0), "tr"), "partition_root")));
	assert_non_null(msg_table(msg_at(cap, 3), "tr_1a"));
	capture_end(cap);
}

/* teardown removes the four event triggers (and the schema, with the
 * truncate triggers of partitioned tables). Last. */
static void
test_teardown_removes_capture(void **state)
{
	const char *argv[] = {"teardown", "--source", src, "--slot", "tm_capture", "--publication",
	                      "tm_capture", NULL};
	PGconn *c = pgtest_connect_str(src);

	(void) state;
	assert_int_equal(pgtest_query_long(c, "SELECT count(*) FROM pg_event_trigger"
	                                      " WHERE evtname LIKE 'tidemark%%'"), 4);
	assert_true(pgtest_query_long(c, "SELECT count(*) FROM pg_trigger"
	                                 " WHERE tgname = 'tidemark_truncate'") > 0);
	run_tidemark(argv);
	assert_int_equal(pgtest_query_long(c, "SELECT count(*) FROM pg_event_trigger"
	                                      " WHERE evtname LIKE 'tidemark%%'"), 0);
	assert_int_equal(pgtest_query_long(c, "SELECT count(*) FROM pg_trigger"
	                                      " WHERE tgname = 'tidemark_truncate'"), 0);
	pgtest_exec(c, "ALTER TABLE dummy ADD COLUMN after_teardown int");
	PQfinish(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alter_column_type),
		cmocka_unit_test(test_add_column_defaults),
		cmocka_unit_test(test_rename_and_drop_column),
		cmocka_unit_test(test_create_and_drop_table),
		cmocka_unit_test(test_key_changes),
		cmocka_unit_test(test_indirect_changes),
		cmocka_unit_test(test_type_messages),
		cmocka_unit_test(test_do_block_and_function),
		cmocka_unit_test(test_multi_statement_order),
		cmocka_unit_test(test_transactions_and_seq),
		cmocka_unit_test(test_long_statement_once),
		cmocka_unit_test(test_quoted_names),
		cmocka_unit_test(test_partitioned_table),
		cmocka_unit_test(test_truncate_of_partition),
		cmocka_unit_test(test_not_captured),
		cmocka_unit_test(test_never_fails_ddl),
		cmocka_unit_test(test_teardown_removes_capture),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
