/*
 * fuzz_seeds.c: cuts the fixtures into seed inputs for the harnesses.
 *
 *   fuzz_seeds FIXTURES_DIR OUT_DIR
 *
 * writes OUT_DIR/<harness>/<name>, one input per file, in the harness's
 * input format (see the top of each fuzz_<harness>.c):
 *   fuzz_pgoutput      runs of consecutive records of fixtures/pgoutput
 *   fuzz_ddl_parse     the statement text of each case of fixtures/ddl
 *   fuzz_ddl_event     a capture message per case of fixtures/ddl_track,
 *                      its old and new definitions as two tables
 *   fuzz_sqltype_cast  the types (and values) of fixtures/cast
 * Run by tests/fuzz/make_corpus.sh, which adds the hand-written seeds of
 * tests/fuzz/seeds (COPY chunks for fuzz_snap_chunk among them).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "strbuf.h"

#define RUN_RECORDS 8			/* records per pgoutput seed */
#define RUN_BYTES 8192			/* at most, per pgoutput seed */
#define RUNS_PER_FILE 64

static const char *out_dir;
static int failures;

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	strbuf sb = STRBUF_INIT;
	char buf[65536];
	size_t n;

	if (f == NULL) {
		fprintf(stderr, "fuzz_seeds: %s: %s\n", path, strerror(errno));
		failures++;
		return NULL;
	}
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		strbuf_appendn(&sb, buf, n);
	fclose(f);
	*len = sb.len;
	if (sb.data == NULL)
		strbuf_append(&sb, "");
	return strbuf_steal(&sb);
}

/* Writes OUT_DIR/harness/name. */
static void
write_seed(const char *harness, const char *name, const char *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", out_dir, harness);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/%s/%s", out_dir, harness, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "fuzz_seeds: cannot write %s\n", path);
		failures++;
	}
}

static void
write_numbered(const char *harness, const char *stem, int n, const strbuf *sb)
{
	char name[256];

	snprintf(name, sizeof name, "%s-%04d", stem, n);
	write_seed(harness, name, strbuf_str(sb), sb->len);
}

/* ---- pgoutput: runs of records ---- */

/* Offsets of the records of a fixture ([Int32 length][payload] each). */
static size_t
record_offsets(const char *data, size_t len, size_t **offs)
{
	size_t n = 0, cap = 0, pos = 0;

	*offs = NULL;
	while (pos + 4 <= len) {
		uint32_t l;

		memcpy(&l, data + pos, 4);
		l = ntohl(l);
		if (l > len - pos - 4)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			*offs = realloc(*offs, sizeof(size_t) * (cap + 1));
		}
		(*offs)[n++] = pos;
		pos += 4 + l;
	}
	if (*offs != NULL)
		(*offs)[n] = pos;
	return n;
}

/* Runs of up to RUN_RECORDS records (RUN_BYTES), spread over the file;
 * records larger than a run are left out. */
static void
pgoutput_seeds(const char *dir, const char *file)
{
	char path[4096];
	size_t len, *offs, n, stride;
	char *data;
	int written = 0;

	snprintf(path, sizeof path, "%s/pgoutput/%s", dir, file);
	if ((data = slurp(path, &len)) == NULL)
		return;
	n = record_offsets(data, len, &offs);
	stride = n / RUN_RECORDS / RUNS_PER_FILE + 1;
	for (size_t first = 0; first < n; first += RUN_RECORDS * stride) {
		strbuf sb = STRBUF_INIT;

		for (size_t r = first; r < n && r < first + RUN_RECORDS; r++)
			if (offs[r + 1] - offs[r] <= RUN_BYTES && sb.len + offs[r + 1] - offs[r] <= RUN_BYTES)
				strbuf_appendn(&sb, data + offs[r], offs[r + 1] - offs[r]);
		if (sb.len > 0)
			write_numbered("fuzz_pgoutput", file, written++, &sb);
		strbuf_free(&sb);
	}
	free(offs);
	free(data);
}

/* ---- ddl_parse: the corpus's statements ---- */

static bool
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void
ddl_parse_seeds(const char *dir)
{
	char path[4096], *data, *line, *save = NULL;
	size_t len;
	strbuf sql = STRBUF_INIT;
	bool in_sql = false;
	int n = 0;

	snprintf(path, sizeof path, "%s/ddl/corpus.txt", dir);
	if ((data = slurp(path, &len)) == NULL)
		return;
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		bool directive = starts_with(line, "-- case:") || starts_with(line, "-- stmts:") ||
			starts_with(line, "-- expect:");

		if (in_sql && directive) {
			write_numbered("fuzz_ddl_parse", "corpus", n++, &sql);
			strbuf_reset(&sql);
		}
		if (directive)
			in_sql = starts_with(line, "-- case:");
		else if (in_sql) {
			if (sql.len > 0)
				strbuf_appendc(&sql, '\n');
			strbuf_append(&sql, line);
		}
	}
	strbuf_free(&sql);
	free(data);
}

/* ---- ddl_event: capture messages from the planner's cases ---- */

/* A JSON string. */
static void
append_json_string(strbuf *sb, const char *s)
{
	strbuf_appendc(sb, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			strbuf_appendc(sb, '\\');
		strbuf_appendc(sb, *s);
	}
	strbuf_appendc(sb, '"');
}

/* "attnum|name|type|flags[|missing=v][|default]" as a column object. */
static void
append_column(strbuf *sb, char *spec)
{
	char *f[6] = {0}, *save = NULL;
	int n = 0;

	for (char *p = strtok_r(spec, "|", &save); p && n < 6; p = strtok_r(NULL, "|", &save))
		f[n++] = p;
	if (n < 3)
		return;
	strbuf_appendf(sb, "{\"attnum\": %d, \"name\": ", atoi(f[0]));
	append_json_string(sb, f[1]);
	strbuf_append(sb, ", \"type\": ");
	append_json_string(sb, f[2]);
	strbuf_appendf(sb, ", \"not_null\": %s, \"key\": %s",
				   f[3] && strstr(f[3], "notnull") ? "true" : "false",
				   f[3] && strstr(f[3], "key") ? "true" : "false");
	for (int i = 4; i < n; i++) {
		if (starts_with(f[i], "missing=")) {
			strbuf_append(sb, ", \"has_missing\": true, \"missing\": ");
			append_json_string(sb, f[i] + 8);
		} else if (strcmp(f[i], "default") == 0)
			strbuf_append(sb, ", \"default\": true");
	}
	strbuf_append(sb, "}, ");
}

/* A definition line of cases.txt as a table object. */
static void
append_table(strbuf *sb, char *def, int relid)
{
	char *schema = "public", *name = "orders", *save = NULL;
	strbuf cols = STRBUF_INIT;

	for (char *part = strtok_r(def, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
		while (*part == ' ')
			part++;
		if (starts_with(part, "table: ")) {
			schema = part + 7;
			name = strchr(schema, '.');
			if (name == NULL)
				continue;
			*name++ = '\0';
			name[strcspn(name, " ")] = '\0';
		} else {
			part[strcspn(part, "\n")] = '\0';
			while (part[0] && part[strlen(part) - 1] == ' ')
				part[strlen(part) - 1] = '\0';
			append_column(&cols, part);
		}
	}
	if (cols.len >= 2)
		cols.len -= 2;			/* the last ", " */
	strbuf_appendf(sb, "{\"relid\": %d, \"schema\": ", relid);
	append_json_string(sb, schema);
	strbuf_append(sb, ", \"name\": ");
	append_json_string(sb, name);
	strbuf_appendf(sb, ", \"relkind\": \"r\", \"replident\": \"d\", \"columns\": [%.*s]}",
				   (int) cols.len, strbuf_str(&cols));
	strbuf_free(&cols);
}

static void
write_event(const char *old, const char *now, int n)
{
	strbuf sb = STRBUF_INIT;
	char *o = strdup(old), *w = strdup(now);

	strbuf_append(&sb, "{\"version\": 1, \"kind\": \"ddl\", \"command_tag\": \"ALTER TABLE\", "
				  "\"statement\": \"ALTER TABLE orders ALTER total TYPE integer\", "
				  "\"statement_seq\": 1, \"user\": \"app\", \"time\": "
				  "\"2024-05-01T12:00:00.123456Z\", \"timezone\": \"UTC\", \"xid\": 1234, "
				  "\"seq\": 1, \"tables\": [");
	append_table(&sb, o, 42);
	strbuf_append(&sb, ", ");
	append_table(&sb, w, 42);
	strbuf_append(&sb, "], \"dropped\": [], \"rewrite\": null, \"error\": null}");
	write_numbered("fuzz_ddl_event", "case", n, &sb);
	strbuf_free(&sb);
	free(o);
	free(w);
}

static void
ddl_event_seeds(const char *dir)
{
	char path[4096], *data, *line, *save = NULL, *old = NULL;
	size_t len;
	int n = 0;

	snprintf(path, sizeof path, "%s/ddl_track/cases.txt", dir);
	if ((data = slurp(path, &len)) == NULL)
		return;
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (starts_with(line, "old: "))
			old = line + 5;
		else if (starts_with(line, "now: ") && old != NULL)
			write_event(old, line + 5, n++);
	}
	free(data);
}

/* ---- sqltype_cast: the casting matrix's types and values ---- */

/* "a | b | rest": a and b (b is the value for fits.txt: up to the last
 * " | "); false when the line is no case. */
static bool
split_case(char *line, char **a, char **b)
{
	char *first = strstr(line, " | "), *last;

	if (line[0] == '#' || first == NULL)
		return false;
	*first = '\0';
	*a = line;
	*b = first + 3;
	last = strstr(*b, " | ");
	for (char *p = last; p != NULL; p = strstr(p + 3, " | "))
		last = p;
	if (last != NULL)
		*last = '\0';
	return true;
}

/* Mode byte 0x40: types as text, a reason buffer of 32 bytes. */
static void
write_cast(const char *stem, int n, const char *a, const char *b, const char *value)
{
	strbuf sb = STRBUF_INIT;

	strbuf_appendf(&sb, "%c%s\n%s\ntotal\n%s", 0x40, a, b, value);
	write_numbered("fuzz_sqltype_cast", stem, n, &sb);
	strbuf_free(&sb);
}

static void
cast_seeds(const char *dir, const char *file, bool values)
{
	char path[4096], *data, *line, *save = NULL, *a, *b;
	size_t len;
	int n = 0;

	snprintf(path, sizeof path, "%s/cast/%s", dir, file);
	if ((data = slurp(path, &len)) == NULL)
		return;
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!split_case(line, &a, &b))
			continue;
		if (values)
			write_cast(file, n++, a, "text", b);
		else
			write_cast(file, n++, a, b, "42");
	}
	free(data);
}

static void
pgoutput_dir_seeds(const char *dir)
{
	char path[4096];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof path, "%s/pgoutput", dir);
	if ((d = opendir(path)) == NULL) {
		fprintf(stderr, "fuzz_seeds: %s: %s\n", path, strerror(errno));
		failures++;
		return;
	}
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);

		if (n > 4 && strcmp(e->d_name + n - 4, ".bin") == 0)
			pgoutput_seeds(dir, e->d_name);
	}
	closedir(d);
}

int
main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fuzz_seeds FIXTURES_DIR OUT_DIR\n");
		return 2;
	}
	out_dir = argv[2];
	mkdir(out_dir, 0755);
	pgoutput_dir_seeds(argv[1]);
	ddl_parse_seeds(argv[1]);
	ddl_event_seeds(argv[1]);
	cast_seeds(argv[1], "classify.txt", false);
	cast_seeds(argv[1], "common.txt", false);
	cast_seeds(argv[1], "fits.txt", true);
	return failures > 0;
}
