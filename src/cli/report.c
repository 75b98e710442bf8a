#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *
value_json(PGresult *r, int row, int col)
{
	const char *v;

	if (PQgetisnull(r, row, col))
		return json_null();
	v = PQgetvalue(r, row, col);
	switch (PQftype(r, col)) {
	case 20: /* int8 */
	case 21: /* int2 */
	case 23: /* int4 */
		return json_integer(strtoll(v, NULL, 10));
	case 1700: /* numeric: integral values keep every digit that fits */
		if (strpbrk(v, ".eEN") == NULL && strlen(v) < 19)
			return json_integer(strtoll(v, NULL, 10));
		return json_real(strtod(v, NULL));
	case 700: /* float4 */
	case 701: /* float8 */
		return json_real(strtod(v, NULL));
	case 16: /* bool */
		return json_boolean(v[0] == 't');
	case 114: /* json */
	case 3802: /* jsonb */
		return json_loads(v, JSON_DECODE_ANY, NULL);
	default:
		return json_string(v);
	}
}

json_t *
report_row(PGresult *r, int row)
{
	json_t *o = json_object();

	for (int c = 0; c < PQnfields(r); c++)
		json_object_set_new(o, PQfname(r, c), value_json(r, row, c));
	return o;
}

json_t *
report_rows(PGresult *r)
{
	json_t *arr = json_array();

	for (int i = 0; i < PQntuples(r); i++)
		json_array_append_new(arr, report_row(r, i));
	return arr;
}

void
report_print_json(json_t *doc)
{
	char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	puts(text ? text : "null");
	free(text);
}

const char *
report_str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : "-";
}
