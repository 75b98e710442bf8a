#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
strbuf_init(strbuf *sb)
{
	sb->data = NULL;
	sb->len = 0;
	sb->cap = 0;
}

void
strbuf_reset(strbuf *sb)
{
	sb->len = 0;
	if (sb->data != NULL)
		sb->data[0] = '\0';
}

void
strbuf_free(strbuf *sb)
{
	free(sb->data);
	strbuf_init(sb);
}

void
strbuf_reserve(strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;
	size_t cap;
	char *p;

	if (need <= sb->cap)
		return;
	cap = sb->cap ? sb->cap : 64;
	while (cap < need)
		cap *= 2;
	p = realloc(sb->data, cap);
	if (p == NULL) {
		fprintf(stderr, "tidemark: out of memory growing a buffer to %zu bytes\n", cap);
		abort();
	}
	p[sb->len] = '\0';          /* a first allocation holds no string yet */
	sb->data = p;
	sb->cap = cap;
}

void
strbuf_appendn(strbuf *sb, const char *s, size_t n)
{
	strbuf_reserve(sb, n);
	memcpy(sb->data + sb->len, s, n);
	sb->len += n;
	sb->data[sb->len] = '\0';
}

void
strbuf_append(strbuf *sb, const char *s)
{
	strbuf_appendn(sb, s, strlen(s));
}

void
strbuf_appendc(strbuf *sb, char c)
{
	strbuf_reserve(sb, 1);
	sb->data[sb->len++] = c;
	sb->data[sb->len] = '\0';
}

void
strbuf_appendf(strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	strbuf_reserve(sb, (size_t) n);
	va_start(ap, fmt);
	vsnprintf(sb->data + sb->len, (size_t) n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t) n;
}

void
strbuf_append_ident(strbuf *sb, const char *name)
{
	strbuf_appendc(sb, '"');
	for (const char *p = name; *p; p++) {
		if (*p == '"')
			strbuf_appendc(sb, '"');
		strbuf_appendc(sb, *p);
	}
	strbuf_appendc(sb, '"');
}

void
strbuf_append_qualified(strbuf *sb, const char *schema, const char *name)
{
	strbuf_append_ident(sb, schema);
	strbuf_appendc(sb, '.');
	strbuf_append_ident(sb, name);
}

void
strbuf_append_copy_text(strbuf *sb, const char *s, size_t n)
{
	size_t from = 0;

	strbuf_reserve(sb, n);
	for (size_t i = 0; i < n; i++) {
		const char *esc;

		switch (s[i]) {
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		default: continue;
		}
		strbuf_appendn(sb, s + from, i - from);
		strbuf_appendn(sb, esc, 2);
		from = i + 1;
	}
	strbuf_appendn(sb, s + from, n - from);
}

const char *
strbuf_str(const strbuf *sb)
{
	return sb->data ? sb->data : "";
}

char *
strbuf_steal(strbuf *sb)
{
	char *p = sb->data;

	if (p == NULL) {
		p = malloc(1);
		if (p == NULL)
			abort();
		p[0] = '\0';
	}
	strbuf_init(sb);
	return p;
}
