/*
 * strbuf.h: a growable, always NUL-terminated byte string.
 *
 * Also the one place where SQL identifiers are quoted: every identifier that
 * tidemark sends to a server goes through strbuf_append_ident, whatever its
 * spelling, so a name such as  x"; DROP TABLE y; --  stays a name.
 */
#ifndef TIDEMARK_STRBUF_H
#define TIDEMARK_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct strbuf {
	char *data; /* owned; NUL-terminated; NULL only before the first append */
	size_t len;
	size_t cap;
} strbuf;

#define STRBUF_INIT {NULL, 0, 0}

void strbuf_init(strbuf *sb);
void strbuf_reset(strbuf *sb);  /* length 0, memory kept */
void strbuf_free(strbuf *sb);
void strbuf_reserve(strbuf *sb, size_t extra);
void strbuf_append(strbuf *sb, const char *s);
void strbuf_appendn(strbuf *sb, const char *s, size_t n);
void strbuf_appendc(strbuf *sb, char c);
void strbuf_appendf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends "name" with embedded double quotes doubled. */
void strbuf_append_ident(strbuf *sb, const char *name);
/* Appends "schema"."name". */
void strbuf_append_qualified(strbuf *sb, const char *schema, const char *name);
/* Appends a value escaped for COPY text format (backslash escapes). */
void strbuf_append_copy_text(strbuf *sb, const char *s, size_t n);
/* Returns the data (never NULL; "" when empty). The strbuf keeps ownership. */
const char *strbuf_str(const strbuf *sb);
/* Hands the data to the caller (who frees it) and resets the strbuf. */
char *strbuf_steal(strbuf *sb);

#endif
