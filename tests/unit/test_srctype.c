/*
 * Unit tests of the source's type and collation definitions
 * (src/ddl/srctype.c, srctype_steps.c): reading them from the capture's
 * JSON (and refusing malformed ones), writing them back, ordering types
 * after their dependencies, the steps from one enum or composite type to
 * the next, and whether two collations sort alike.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "srctype.h"
#include "strbuf.h"

static srctype
parse_type(const char *json)
{
	json_t *o = json_loads(json, 0, NULL);
	srctype t;
	tm_error err;

	assert_non_null(o);
	if (srctype_from_json(o, &t, &err) != 0)
		fail_msg("%s: %s", json, err.msg);
	json_decref(o);
	return t;
}

static int
parse_fails(const char *json, const char *why)
{
	json_t *o = json_loads(json, 0, NULL);
	srctype t;
	tm_error err;
	int rc;

	assert_non_null(o);
	rc = srctype_from_json(o, &t, &err);
	json_decref(o);
	if (rc == 0) {
		srctype_clear(&t);
		fail_msg("accepted: %s", json);
	}
	if (strstr(err.msg, why) == NULL)
		fail_msg("%s: \"%s\" does not say \"%s\"", json, err.msg, why);
	return rc;
}

/* An enum "e" of labels given as "oid:label,..." (oid 0: none). */
static srctype
enum_of(const char *labels)
{
	strbuf json = STRBUF_INIT;
	char *copy = strdup(labels), *save = NULL;
	srctype t;

	strbuf_append(&json, "{\"oid\": 7, \"schema\": \"public\", \"name\": \"e\", \"kind\": \"enum\","
	                     " \"labels\": [");
	for (char *p = strtok_r(copy, ",", &save); p != NULL; p = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(p, ':');

		*colon = '\0';
		strbuf_appendf(&json, "%s{\"oid\": %s, \"label\": \"%s\"}",
		               json.data[json.len - 1] == '[' ? "" : ", ", p, colon + 1);
	}
	strbuf_append(&json, "]}");
	t = parse_type(strbuf_str(&json));
	strbuf_free(&json);
	free(copy);
	return t;
}

/* The steps as text, one per line. */
static char *
steps_text(const srctype_steps *s)
{
	static const char *const kinds[] = {"rename value", "add value", "rename attribute",
	                                    "drop attribute", "add attribute", "alter attribute"};
	strbuf out = STRBUF_INIT;

	for (int i = 0; i < s->n; i++) {
		const srctype_step *st = &s->steps[i];

		strbuf_appendf(&out, "%s%s", i ? "\n" : "", kinds[st->kind]);
		if (st->kind == SRCTYPE_ADD_VALUE)
			strbuf_appendf(&out, " %s %s %s", st->new_name, st->before ? "before" : "after",
			               st->name ? st->name : "(end)");
		else if (st->kind == SRCTYPE_ADD_ATTR || st->kind == SRCTYPE_ALTER_ATTR)
			strbuf_appendf(&out, " %s %s", st->attr->name, st->attr->type_sql);
		else if (st->new_name != NULL)
			strbuf_appendf(&out, " %s -> %s", st->name, st->new_name);
		else
			strbuf_appendf(&out, " %s", st->name);
	}
	return strbuf_steal(&out);
}

static void
assert_enum_steps(const char *from, const char *to, const char *expected)
{
	srctype a = enum_of(from), b = enum_of(to);
	srctype_steps steps;
	tm_error err;
	char *got;

	if (srctype_enum_steps(&a, &b, &steps, &err) != 0)
		fail_msg("%s -> %s: %s", from, to, err.msg);
	got = steps_text(&steps);
	if (strcmp(got ? got : "", expected) != 0)
		fail_msg("%s -> %s:\n%s\nexpected:\n%s", from, to, got ? got : "", expected);
	free(got);
	srctype_steps_free(&steps);
	srctype_clear(&a);
	srctype_clear(&b);
}

static void
test_enum_definition(void **state)
{
	srctype t = enum_of("11:sad,12:ok,13:happy"), copy;
	json_t *j;
	char *text;

	(void) state;
	assert_int_equal(t.kind, SRCTYPE_ENUM);
	assert_int_equal(t.nlabels, 3);
	assert_string_equal(t.labels[2].label, "happy");
	assert_int_equal(t.labels[1].oid, 12);
	/* written back, read again: the same */
	j = srctype_to_json(&t);
	text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	copy = parse_type(text);
	assert_int_equal(copy.nlabels, 3);
	assert_string_equal(copy.labels[0].label, "sad");
	free(text);
	json_decref(j);
	srctype_clear(&copy);
	srctype_clear(&t);
}

static void
test_composite_domain_extension(void **state)
{
	srctype c = parse_type(
		"{\"oid\": 20, \"schema\": \"s\", \"name\": \"pair\", \"kind\": \"composite\","
		" \"depends\": [7], \"attributes\": ["
		"  {\"attnum\": 1, \"name\": \"m\", \"type\": \"public.e\", \"type_oid\": 7, \"type_ref\": 7},"
		"  {\"attnum\": 3, \"name\": \"note\", \"type\": \"text\", \"type_oid\": 25,"
		"   \"type_ref\": null, \"collation\": {\"schema\": \"pg_catalog\", \"name\": \"C\","
		"   \"provider\": \"c\", \"collate\": \"C\", \"ctype\": \"C\", \"builtin\": true}}]}");
	srctype d = parse_type(
		"{\"oid\": 21, \"schema\": \"s\", \"name\": \"code\", \"kind\": \"domain\","
		" \"base_type\": \"character varying(10)\", \"base_type_oid\": 1043, \"base_type_ref\": null,"
		" \"not_null\": true, \"constraints\": [\"code_check\"], \"collation\": null}");
	srctype x = parse_type(
		"{\"oid\": 22, \"schema\": \"public\", \"name\": \"citext\", \"kind\": \"extension\","
		" \"extension\": \"citext\", \"extension_schema\": \"public\", \"extension_version\": \"1.6\"}");
	srctype r = parse_type("{\"oid\": 23, \"schema\": \"public\", \"name\": \"fr\", \"kind\": \"range\"}");
	srctype copy;

	(void) state;
	assert_int_equal(c.kind, SRCTYPE_COMPOSITE);
	assert_int_equal(c.nattrs, 2);
	assert_int_equal(c.attrs[0].type_ref, 7);
	assert_null(c.attrs[0].collation);
	assert_string_equal(c.attrs[1].collation->name, "C");
	assert_int_equal(c.ndeps, 1);
	assert_int_equal(d.kind, SRCTYPE_DOMAIN);
	assert_string_equal(d.base_type, "character varying(10)");
	assert_true(d.not_null);
	assert_int_equal(d.nconstraints, 1);
	assert_int_equal(x.kind, SRCTYPE_EXTENSION);
	assert_string_equal(x.extension, "citext");
	assert_int_equal(r.kind, SRCTYPE_OTHER);
	assert_string_equal(r.kind_name, "range");
	srctype_copy(&copy, &c);
	assert_string_equal(copy.attrs[1].collation->ctype, "C");
	srctype_clear(&copy);
	srctype_clear(&c);
	srctype_clear(&d);
	srctype_clear(&x);
	srctype_clear(&r);
}

static void
test_malformed_definitions(void **state)
{
	(void) state;
	parse_fails("{\"schema\": \"s\", \"name\": \"t\", \"kind\": \"enum\"}", "without oid");
	parse_fails("{\"oid\": 1, \"schema\": \"\", \"name\": \"t\", \"kind\": \"enum\"}", "without oid");
	parse_fails("{\"oid\": -4, \"schema\": \"s\", \"name\": \"t\", \"kind\": \"enum\"}",
	            "without oid");
	parse_fails("{\"oid\": 1, \"schema\": \"s\", \"name\": \"t\", \"kind\": \"enum\","
	            " \"labels\": [{\"oid\": 2, \"label\": \"a\"}, {\"oid\": 3, \"label\": \"a\"}]}",
	            "repeats");
	parse_fails("{\"oid\": 1, \"schema\": \"s\", \"name\": \"t\", \"kind\": \"enum\","
	            " \"labels\": \"a,b\"}", "not an array");
	parse_fails("{\"oid\": 1, \"schema\": \"s\", \"name\": \"t\", \"kind\": \"composite\","
	            " \"attributes\": [{\"attnum\": 0, \"name\": \"a\", \"type\": \"int\"}]}",
	            "attribute 0 is not valid");
	parse_fails("{\"oid\": 1, \"schema\": \"s\", \"name\": \"t\", \"kind\": \"composite\","
	            " \"attributes\": [{\"attnum\": 1, \"name\": \"a\", \"type\": \"int\"},"
	            " {\"attnum\": 1, \"name\": \"b\", \"type\": \"int\"}]}", "repeats");
	parse_fails("{\"oid\": 1, \"schema\": \"s\", \"name\": \"t\", \"kind\": \"domain\"}",
	            "no valid base type");
	parse_fails("{\"oid\": 1, \"schema\": \"s\", \"name\": \"t\", \"kind\": \"extension\"}",
	            "without its extension");
	parse_fails("{\"oid\": 1, \"schema\": \"s\", \"name\": \"t\", \"kind\": \"enum\","
	            " \"depends\": [0]}", "depends");
	parse_fails("{\"oid\": 1, \"schema\": \"s\", \"name\": \"t\", \"kind\": \"composite\","
	            " \"attributes\": [{\"attnum\": 1, \"name\": \"a\", \"type\": \"text\","
	            " \"collation\": {\"schema\": \"s\", \"name\": \"x\", \"provider\": \"d\"}}]}",
	            "known provider");
}

/* Types come after those they depend on; a cycle is refused. */
static void
test_order(void **state)
{
	const char *json =
		"[{\"oid\": 3, \"schema\": \"s\", \"name\": \"dom\", \"kind\": \"domain\","
		"  \"base_type\": \"s.pair\", \"base_type_oid\": 2, \"base_type_ref\": 2, \"depends\": [2]},"
		" {\"oid\": 2, \"schema\": \"s\", \"name\": \"pair\", \"kind\": \"composite\","
		"  \"depends\": [1, 99], \"attributes\": []},"
		" {\"oid\": 1, \"schema\": \"s\", \"name\": \"e\", \"kind\": \"enum\", \"labels\": []},"
		" {\"oid\": 1, \"schema\": \"s\", \"name\": \"e\", \"kind\": \"enum\", \"labels\": []}]";
	json_t *arr = json_loads(json, 0, NULL);
	srctype_list l = {0, NULL};
	tm_error err;

	(void) state;
	assert_int_equal(srctype_list_from_json(&l, arr, &err), 0);
	assert_int_equal(l.n, 3); /* the repeated one once */
	assert_int_equal(srctype_list_order(&l, &err), 0);
	assert_int_equal(l.types[0].oid, 1);
	assert_int_equal(l.types[1].oid, 2);
	assert_int_equal(l.types[2].oid, 3);
	assert_non_null(srctype_list_find(&l, 2));
	assert_null(srctype_list_find(&l, 99));
	/* 1 depending on 3 closes a cycle */
	l.types[0].deps = realloc(l.types[0].deps, sizeof(uint32_t));
	l.types[0].deps[0] = 3;
	l.types[0].ndeps = 1;
	assert_int_equal(srctype_list_order(&l, &err), -1);
	assert_non_null(strstr(err.msg, "cycle"));
	srctype_list_clear(&l);
	json_decref(arr);
}

static void
test_enum_steps(void **state)
{
	(void) state;
	assert_enum_steps("1:a,2:c", "1:a,2:c", "");
	assert_enum_steps("1:a,2:c", "1:a,3:b,2:c", "add value b after a");
	assert_enum_steps("1:a,2:c", "3:z,1:a,2:c", "add value z before a");
	assert_enum_steps("1:a,2:c", "3:y,4:z,1:a,2:c", "add value y before a\nadd value z after y");
	assert_enum_steps("1:a,2:c", "1:a,2:c,3:d", "add value d after c");
	assert_enum_steps("", "1:a,2:b", "add value a after (end)\nadd value b after a");
	assert_enum_steps("1:a,2:c", "1:aa,2:c", "rename value a -> aa");
	/* a swap goes through temporary names */
	assert_enum_steps("1:a,2:b", "1:b,2:a",
	                  "rename value a -> tidemark renaming 0\nrename value b -> tidemark renaming 1\n"
	                  "rename value tidemark renaming 0 -> b\nrename value tidemark renaming 1 -> a");
	/* without oids (the target's own enum), labels match by text */
	assert_enum_steps("0:a,0:c", "1:a,2:b,3:c", "add value b after a");
}

static void
test_enum_steps_refused(void **state)
{
	srctype a = enum_of("1:a,2:b"), gone = enum_of("1:a"), swapped = enum_of("2:b,1:a");
	srctype_steps steps;
	tm_error err;

	(void) state;
	assert_int_equal(srctype_enum_steps(&a, &gone, &steps, &err), -1);
	assert_non_null(strstr(err.msg, "value 'b' of public.e is gone"));
	assert_int_equal(srctype_enum_steps(&a, &swapped, &steps, &err), -1);
	assert_non_null(strstr(err.msg, "another order"));
	srctype_clear(&a);
	srctype_clear(&gone);
	srctype_clear(&swapped);
}

static srctype
composite_of(const char *attrs)
{
	strbuf json = STRBUF_INIT;
	srctype t;

	strbuf_appendf(&json, "{\"oid\": 9, \"schema\": \"public\", \"name\": \"c\","
	                      " \"kind\": \"composite\", \"attributes\": [%s]}", attrs);
	t = parse_type(strbuf_str(&json));
	strbuf_free(&json);
	return t;
}

#define ATTR(n, name, type, oid, ref)                                                       \
	"{\"attnum\": " #n ", \"name\": \"" name "\", \"type\": \"" type "\", \"type_oid\": " #oid \
	", \"type_ref\": " #ref "}"

static void
test_composite_steps(void **state)
{
	srctype from = composite_of(ATTR(1, "street", "text", 25, 0) ", " ATTR(2, "zip", "integer", 23, 0)
	                            ", " ATTR(3, "m", "public.mood", 70, 70));
	srctype to = composite_of(ATTR(1, "road", "text", 25, 0) ", " ATTR(3, "m", "public.feeling", 70, 70)
	                          ", " ATTR(4, "city", "text", 25, 0) ", "
	                          ATTR(5, "n", "numeric(5,1)", 1700, 0));
	srctype to2 = composite_of(ATTR(1, "zip", "text", 25, 0) ", " ATTR(2, "street", "bigint", 20, 0)
	                           ", " ATTR(3, "m", "public.mood[]", 69, 70));
	srctype_steps steps;
	tm_error err;
	char *got;

	(void) state;
	assert_int_equal(srctype_composite_steps(&from, &to, &steps, &err), 0);
	got = steps_text(&steps);
	/* the renamed type of m is the same type (same oid) */
	assert_string_equal(got, "drop attribute zip\nrename attribute street -> road\n"
	                         "add attribute city text\nadd attribute n numeric(5,1)");
	free(got);
	srctype_steps_free(&steps);
	/* a swap of names, and other types */
	assert_int_equal(srctype_composite_steps(&from, &to2, &steps, &err), 0);
	got = steps_text(&steps);
	assert_string_equal(got, "rename attribute street -> tidemark renaming 0\n"
	                         "rename attribute zip -> tidemark renaming 1\n"
	                         "rename attribute tidemark renaming 0 -> zip\n"
	                         "rename attribute tidemark renaming 1 -> street\n"
	                         "alter attribute street bigint\nalter attribute m public.mood[]");
	free(got);
	srctype_steps_free(&steps);
	srctype_clear(&from);
	srctype_clear(&to);
	srctype_clear(&to2);
}

static void
test_collation_json(void **state)
{
	json_t *o = json_loads("{\"schema\": \"public\", \"name\": \"ci\", \"default\": false,"
	                       " \"builtin\": false, \"provider\": \"i\", \"collate\": null,"
	                       " \"ctype\": null, \"locale\": \"und-u-ks-level2\", \"rules\": null,"
	                       " \"deterministic\": false, \"version\": \"153.120\"}", 0, NULL);
	srctype_collation *c = NULL, *copy;
	json_t *back;
	tm_error err;

	(void) state;
	assert_int_equal(srctype_collation_from_json(o, &c, &err), 0);
	assert_false(c->deterministic);
	assert_string_equal(c->locale, "und-u-ks-level2");
	copy = srctype_collation_copy(c);
	back = srctype_collation_to_json(copy);
	assert_true(json_equal(o, back));
	srctype_collation_free(c);
	assert_int_equal(srctype_collation_from_json(json_null(), &c, &err), 0);
	assert_null(c);
	json_decref(back);
	json_decref(o);
	srctype_collation_free(copy);
	srctype_collation_free(srctype_collation_copy(NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enum_definition),
		cmocka_unit_test(test_composite_domain_extension),
		cmocka_unit_test(test_malformed_definitions),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_enum_steps),
		cmocka_unit_test(test_enum_steps_refused),
		cmocka_unit_test(test_composite_steps),
		cmocka_unit_test(test_collation_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
