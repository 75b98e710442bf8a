#include "ident.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

/* Reads one identifier at *p into sb; advances *p. */
static int
read_ident(const char **p, strbuf *sb, const char *text, tm_error *err)
{
	const char *s = *p;

	if (*s == '"') {
		s++;
		for (;;) {
			if (*s == '\0')
				return tm_error_set(err, "unterminated quoted identifier in \"%s\"", text);
			if (*s == '"' && s[1] == '"') {
				strbuf_appendc(sb, '"');
				s += 2;
				continue;
			}
			if (*s == '"')
				break;
			strbuf_appendc(sb, *s++);
		}
		s++;
		if (sb->len == 0)
			return tm_error_set(err, "empty quoted identifier in \"%s\"", text);
	} else {
		while (*s != '\0' && *s != '.' && *s != '"') {
			char c = *s++;

			if (c == ' ' || c == '\t')
				return tm_error_set(err, "\"%s\": a name with spaces must be double-quoted, "
				                    "e.g. public.\"Line Items\"", text);
			strbuf_appendc(sb, (c >= 'A' && c <= 'Z') ? (char) (c + 32) : c);
		}
		if (sb->len == 0)
			return tm_error_set(err, "missing name in \"%s\"", text);
	}
	*p = s;
	return 0;
}

int
ident_parse_qualified(const char *text, const char *default_schema, char **schema, char **name,
                      tm_error *err)
{
	strbuf first = STRBUF_INIT, second = STRBUF_INIT;
	const char *p = text;
	bool qualified = false;

	if (read_ident(&p, &first, text, err) != 0)
		goto fail;
	if (*p == '.') {
		p++;
		qualified = true;
		if (read_ident(&p, &second, text, err) != 0)
			goto fail;
	}
	if (*p != '\0') {
		tm_error_set(err, "unexpected text after the name in \"%s\"", text);
		goto fail;
	}
	if (qualified) {
		*schema = strbuf_steal(&first);
		*name = strbuf_steal(&second);
	} else {
		*schema = strdup(default_schema);
		*name = strbuf_steal(&first);
	}
	return 0;
fail:
	strbuf_free(&first);
	strbuf_free(&second);
	return -1;
}

/* Bytes of name that fit in max, cut at a character boundary. */
static size_t
clip_len(const char *name, size_t max)
{
	size_t n = strlen(name);

	if (n <= max)
		return n;
	while (max > 0 && ((unsigned char) name[max] & 0xc0) == 0x80)
		max--;
	return max;
}

void
ident_aside_name(const char *name, int n, char out[IDENT_NAME_BYTES + 1])
{
	ident_aside_label(name, "dropped", n, out);
}

void
ident_aside_label(const char *name, const char *label, int n, char out[IDENT_NAME_BYTES + 1])
{
	char suffix[48];

	if (n <= 1)
		snprintf(suffix, sizeof suffix, " (%.20s)", label);
	else
		snprintf(suffix, sizeof suffix, " (%.20s %d)", label, n);
	snprintf(out, IDENT_NAME_BYTES + 1, "%.*s%s",
	         (int) clip_len(name, IDENT_NAME_BYTES - strlen(suffix)), name, suffix);
}
