/*
 * test_prom.c: the metrics registry and its text exposition format
 * (Prometheus 0.0.4): the exact text of a registry, escaping, values in
 * their scale, staged counts, and the listen address.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "prom.h"

static char *
render(prom_registry *r)
{
	strbuf sb = STRBUF_INIT;

	prom_render(r, &sb);
	return strbuf_steal(&sb);
}

static void
test_exact_text(void **state)
{
	prom_registry *r = prom_new();
	prom_family *rows = prom_family_new(r, "tidemark_rows_applied_total", "Rows applied, by kind.",
	                                    PROM_COUNTER, "kind", 1);
	prom_family *lag = prom_family_new(r, "tidemark_lag_seconds", "Lag.", PROM_GAUGE, NULL,
	                                   1000000);
	prom_family *tables = prom_family_new(r, "tidemark_snapshot_rows_total",
	                                      "Rows copied, by table.", PROM_COUNTER, "table", 1);
	prom_series *ins, *del;
	char *text;

	(void) state;
	assert_non_null(rows);
	assert_non_null(lag);
	assert_non_null(tables);
	ins = prom_series_of(rows, "insert");
	del = prom_series_of(rows, "delete");
	assert_ptr_equal(prom_series_of(rows, "insert"), ins); /* found again, not made twice */
	prom_add(ins, 3);
	prom_add(ins, 4);
	prom_add(del, 1);
	prom_set(prom_series_of(lag, NULL), 2500000);
	text = render(r);
	assert_string_equal(text,
	                    "# HELP tidemark_rows_applied_total Rows applied, by kind.\n"
	                    "# TYPE tidemark_rows_applied_total counter\n"
	                    "tidemark_rows_applied_total{kind=\"insert\"} 7\n"
	                    "tidemark_rows_applied_total{kind=\"delete\"} 1\n"
	                    "# HELP tidemark_lag_seconds Lag.\n"
	                    "# TYPE tidemark_lag_seconds gauge\n"
	                    "tidemark_lag_seconds 2.5\n"
	                    "# HELP tidemark_snapshot_rows_total Rows copied, by table.\n"
	                    "# TYPE tidemark_snapshot_rows_total counter\n");
	free(text);
	assert_int_equal(prom_value(ins), 7);
	prom_free(r);
}

static void
test_label_escaping(void **state)
{
	prom_registry *r = prom_new();
	prom_family *f = prom_family_new(r, "t_total", "Help with a \\ backslash\nand a \"quote\".",
	                                 PROM_COUNTER, "table", 1);
	char *text;

	(void) state;
	prom_add(prom_series_of(f, "public.we\"ird\\name\nx"), 1);
	prom_add(prom_series_of(f, "caf\xc3\xa9.\xe2\x82\xac"), 2);   /* UTF-8 kept */
	prom_add(prom_series_of(f, "bad\xff\xc3(\xed\xa0\x80.t"), 3); /* not UTF-8: U+FFFD */
	text = render(r);
	assert_string_equal(text,
	                    "# HELP t_total Help with a \\\\ backslash\\nand a \"quote\".\n"
	                    "# TYPE t_total counter\n"
	                    "t_total{table=\"public.we\\\"ird\\\\name\\nx\"} 1\n"
	                    "t_total{table=\"caf\xc3\xa9.\xe2\x82\xac\"} 2\n"
	                    "t_total{table=\"bad\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd"
	                    "\xef\xbf\xbd.t\"} 3\n");
	free(text);
	prom_free(r);
}

static void
check_value(uint64_t raw, uint64_t scale, const char *expected)
{
	strbuf sb = STRBUF_INIT;

	prom_append_value(&sb, raw, scale);
	assert_string_equal(strbuf_str(&sb), expected);
	strbuf_free(&sb);
}

static void
test_values(void **state)
{
	(void) state;
	check_value(0, 1, "0");
	check_value(18446744073709551615ULL, 1, "18446744073709551615"); /* an LSN, exact */
	check_value(0, 1000000, "0");
	check_value(1, 1000000, "0.000001");
	check_value(1500000, 1000000, "1.5");
	check_value(2000000, 1000000, "2");
	check_value(1234567, 1000000, "1.234567");
	check_value(1764633600123456ULL, 1000000, "1764633600.123456");
	check_value(5, 10, "0.5");
}

static void
test_names(void **state)
{
	prom_registry *r = prom_new();

	(void) state;
	assert_true(prom_valid_name("tidemark_up", false));
	assert_true(prom_valid_name("a:b_c9", false));
	assert_false(prom_valid_name("9a", false));
	assert_false(prom_valid_name("a-b", false));
	assert_false(prom_valid_name("", false));
	assert_true(prom_valid_name("table", true));
	assert_false(prom_valid_name("a:b", true));
	assert_false(prom_valid_name("__name", true));
	assert_null(prom_family_new(r, "bad name", "h", PROM_GAUGE, NULL, 1));
	assert_null(prom_family_new(r, "good", "h", PROM_GAUGE, "bad-label", 1));
	assert_null(prom_family_new(r, "good", "h", PROM_GAUGE, NULL, 3)); /* not a power of ten */
	prom_free(r);
}

/* Staged counts show only once published; discarded ones never. */
static void
test_staging(void **state)
{
	prom_registry *r = prom_new();
	prom_family *f = prom_family_new(r, "rows_total", "h", PROM_COUNTER, "kind", 1);
	prom_series *a = prom_series_of(f, "a"), *b = prom_series_of(f, "b");

	(void) state;
	prom_stage(r, a, 5);
	prom_stage(r, b, 1);
	prom_stage(r, a, 2);
	assert_int_equal(prom_value(a), 0);
	prom_publish(r);
	assert_int_equal(prom_value(a), 7);
	assert_int_equal(prom_value(b), 1);
	prom_stage(r, a, 100); /* a transaction that did not commit */
	prom_discard(r);
	prom_publish(r);
	assert_int_equal(prom_value(a), 7);
	prom_stage(r, b, 1);
	prom_add(b, 10); /* at once, beside the staged */
	assert_int_equal(prom_value(b), 11);
	prom_publish(r);
	assert_int_equal(prom_value(b), 12);
	prom_free(r);
}

static void
check_listen(const char *text, int rc, const char *host, unsigned port)
{
	char h[64];
	unsigned p = 12345;

	assert_int_equal(prom_parse_listen(text, h, sizeof h, &p), rc);
	if (rc == 0) {
		assert_string_equal(h, host);
		assert_int_equal(p, port);
	}
}

static void
test_listen(void **state)
{
	(void) state;
	check_listen("127.0.0.1:9187", 0, "127.0.0.1", 9187);
	check_listen(":9187", 0, "", 9187);
	check_listen("[::1]:9187", 0, "::1", 9187);
	check_listen("localhost:0", 0, "localhost", 0);
	check_listen("[::]:65535", 0, "::", 65535);
	check_listen("127.0.0.1", -1, NULL, 0);       /* no port */
	check_listen("127.0.0.1:", -1, NULL, 0);
	check_listen("127.0.0.1:65536", -1, NULL, 0);
	check_listen("127.0.0.1:9x", -1, NULL, 0);
	check_listen("::1:9187", -1, NULL, 0);        /* IPv6 without brackets */
	check_listen("[::1]9187", -1, NULL, 0);
	check_listen("[]:9187", -1, NULL, 0);
	check_listen("9187", -1, NULL, 0);
	check_listen("a-very-long-host-name-that-does-not-fit-in-the-buffer-given.example:1", -1,
	             NULL, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_text),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_staging),
		cmocka_unit_test(test_listen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
