/*
 * ddl_parse_scan.c: reading the statement text itself, before and beside
 * the parser.
 *
 * - UTF-8 check: libpg_query passes invalid bytes through into its JSON,
 *   which jansson then rejects; the text is checked first.
 * - Depth estimate: PostgreSQL's grammar builds left-deep trees from chains
 *   such as 1+1+1+... or SELECT ... UNION SELECT ... without growing its
 *   parser stack, and libpg_query writes trees out recursively with no
 *   depth check: a long enough chain overflows the C stack (about 60,000
 *   links on an 8 MB stack). Nesting by brackets, and right-deep chains
 *   (NOT NOT ... x, - - 1, CASE inside CASE), are bounded by the parser's
 *   own stack (it fails with "memory exhausted" instead), but at depths
 *   that still take megabytes of C stack to write out. The estimate below
 *   is a scan over tokens, strings and comments skipped, that counts
 *   brackets and chain links conservatively (a qualified operator,
 *   OPERATOR(s.+), is one link, not a bracket); it never runs the parser.
 * - Integer constants: libpg_query 15-4.0 writes Integer values only when
 *   positive ("ival":{} for 0 and for every negative number): the literal
 *   is read back from the text at the constant's location.
 *
 * Nothing here allocates.
 */
#include "ddl_parse_int.h"

#include <ctype.h>
#include <string.h>

/* Open brackets tracked one by one; deeper ones share the last slot. */
#define SCAN_LEVELS 64

typedef struct depth_scan {
	size_t expr[SCAN_LEVELS];	/* operator links in the current operand */
	size_t chain[SCAN_LEVELS];	/* UNION / JOIN links, across commas */
	bool between[SCAN_LEVELS];	/* a BETWEEN waits for its AND */
	size_t level;				/* open brackets */
	size_t sum;					/* links counted in all open levels */
	size_t max;
	size_t max_at;
} depth_scan;

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool
is_ident_start(unsigned char c)
{
	return isalpha(c) || c == '_' || c >= 0x80;
}

static bool
is_ident_char(unsigned char c)
{
	return is_ident_start(c) || isdigit(c) || c == '$';
}

static bool
is_op_char(char c)
{
	return c != '\0' && strchr("+-*/<>=~!@#%^&|`?:", c) != NULL;
}

/* End of a comment starting at pos ("--" or "slash-star", nested). */
static size_t
skip_comment(const char *s, size_t len, size_t pos)
{
	size_t depth = 0;

	if (s[pos] == '-') {
		while (pos < len && s[pos] != '\n')
			pos++;
		return pos;
	}
	while (pos < len) {
		if (pos + 1 < len && s[pos] == '/' && s[pos + 1] == '*') {
			depth++;
			pos += 2;
		} else if (pos + 1 < len && s[pos] == '*' && s[pos + 1] == '/') {
			pos += 2;
			if (--depth == 0)
				return pos;
		} else
			pos++;
	}
	return pos;
}

static bool
at_comment(const char *s, size_t len, size_t pos)
{
	return pos + 1 < len && ((s[pos] == '-' && s[pos + 1] == '-') ||
							 (s[pos] == '/' && s[pos + 1] == '*'));
}

/* Skips white space and comments from pos; returns the next position. */
size_t
ddl_scan_skip_space(const char *s, size_t len, size_t pos)
{
	while (pos < len) {
		if (is_space(s[pos]))
			pos++;
		else if (at_comment(s, len, pos))
			pos = skip_comment(s, len, pos);
		else
			break;
	}
	return pos;
}

/* Narrows [*start, *end) of s to leave out white space at both ends. */
void
ddl_scan_trim(const char *s, size_t *start, size_t *end)
{
	while (*start < *end && is_space(s[*start]))
		(*start)++;
	while (*end > *start && is_space(s[*end - 1]))
		(*end)--;
}

/* The 1-based character position of a byte offset, as PostgreSQL counts
 * cursor positions (continuation bytes of UTF-8 are not counted). */
int
ddl_scan_char_pos(const char *s, size_t byte)
{
	size_t chars = 0;

	for (size_t i = 0; i < byte; i++)
		if (((unsigned char) s[i] & 0xc0) != 0x80)
			chars++;
	return chars < INT32_MAX ? (int) chars + 1 : INT32_MAX;
}

/*
 * Strict UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF), as jansson checks it. On failure *bad is the offending byte.
 */
bool
ddl_scan_utf8(const char *s, size_t len, size_t *bad)
{
	const unsigned char *u = (const unsigned char *) s;
	size_t i = 0;

	while (i < len) {
		unsigned char c = u[i];
		size_t n;
		unsigned int cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else
			break;
		if (len - i <= n)
			break;
		for (size_t k = 1; k <= n; k++) {
			if ((u[i + k] & 0xc0) != 0x80)
				goto invalid;
			cp = (cp << 6) | (u[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
			(cp >= 0xd800 && cp <= 0xdfff))
			break;
		i += n + 1;
	}
	if (i >= len)
		return true;
invalid:
	*bad = i;
	return false;
}

/* End of a quoted token opening at pos: 'string', "identifier". */
static size_t
skip_quoted(const char *s, size_t len, size_t pos, bool backslash)
{
	char q = s[pos++];

	while (pos < len) {
		if (backslash && s[pos] == '\\' && pos + 1 < len)
			pos += 2;
		else if (s[pos] == q && pos + 1 < len && s[pos + 1] == q)
			pos += 2;
		else if (s[pos] == q)
			return pos + 1;
		else
			pos++;
	}
	return pos;
}

/* Length of a dollar-quote tag ($tag$ or $$) at pos; 0 when none. */
static size_t
dollar_tag(const char *s, size_t len, size_t pos)
{
	size_t i = pos + 1;

	if (i < len && is_ident_start((unsigned char) s[i]))
		while (i < len && is_ident_char((unsigned char) s[i]) && s[i] != '$')
			i++;
	if (i < len && s[i] == '$')
		return i + 1 - pos;
	return 0;
}

static size_t
skip_dollar(const char *s, size_t len, size_t pos, size_t taglen)
{
	const char *end = memmem(s + pos + taglen, len - pos - taglen, s + pos, taglen);

	return end == NULL ? len : (size_t) (end - s) + taglen;
}

static size_t
slot(const depth_scan *d)
{
	return d->level < SCAN_LEVELS ? d->level : SCAN_LEVELS - 1;
}

static void
note_depth(depth_scan *d, size_t pos)
{
	if (d->sum + d->level > d->max) {
		d->max = d->sum + d->level;
		d->max_at = pos;
	}
}

static void
count_link(depth_scan *d, size_t *counter, size_t pos)
{
	(*counter)++;
	d->sum++;
	note_depth(d, pos);
}

/* A comma, AND, OR: the operand ends, its operator chain with it. */
static void
end_operand(depth_scan *d)
{
	size_t k = slot(d);

	d->sum -= d->expr[k];
	d->expr[k] = 0;
	d->between[k] = false;
}

static void
open_level(depth_scan *d, size_t pos)
{
	d->level++;
	if (d->level < SCAN_LEVELS) {
		d->expr[d->level] = 0;
		d->chain[d->level] = 0;
		d->between[d->level] = false;
	}
	note_depth(d, pos);
}

static void
close_level(depth_scan *d)
{
	size_t k = slot(d);

	if (d->level == 0)
		return;
	if (d->level < SCAN_LEVELS) {
		d->sum -= d->expr[k] + d->chain[k];
		d->expr[k] = 0;
		d->chain[k] = 0;
	}
	d->level--;
}

static void
end_statement(depth_scan *d)
{
	memset(d->expr, 0, sizeof(d->expr));
	memset(d->chain, 0, sizeof(d->chain));
	memset(d->between, 0, sizeof(d->between));
	d->level = 0;
	d->sum = 0;
}

static bool
word_is(const char *w, size_t n, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strlen(*list) == n && strncasecmp(w, *list, n) == 0)
			return true;
	return false;
}

/* Keywords that link a chain, left-deep (IS, LIKE, ...) or right-deep
 * (NOT NOT ... x, each on the parser's stack); CASE ... END nest like
 * brackets. */
static void
scan_word(depth_scan *d, const char *w, size_t n, size_t pos)
{
	static const char *const expr_links[] = {
		"IS", "ISNULL", "NOTNULL", "COLLATE", "AT", "LIKE", "ILIKE", "SIMILAR",
		"IN", "OVERLAPS", "NOT", NULL
	};
	static const char *const chain_links[] = {"UNION", "INTERSECT", "EXCEPT", "JOIN", NULL};
	static const char *const operand_ends[] = {"AND", "OR", NULL};
	size_t k = slot(d);

	if (word_is(w, n, operand_ends)) {
		if (d->between[k])
			d->between[k] = false;
		else
			end_operand(d);
	} else if (n == 7 && strncasecmp(w, "BETWEEN", 7) == 0) {
		count_link(d, &d->expr[k], pos);
		d->between[k] = true;
	} else if (word_is(w, n, expr_links))
		count_link(d, &d->expr[k], pos);
	else if (word_is(w, n, chain_links))
		count_link(d, &d->chain[k], pos);
	else if (n == 4 && strncasecmp(w, "CASE", 4) == 0)
		open_level(d, pos);
	else if (n == 3 && strncasecmp(w, "END", 3) == 0)
		close_level(d);
}

/*
 * OPERATOR(schema.op) at pos (after the word): one link of the level it is
 * in, not a bracket of its own. Returns the position after its ")", or 0
 * when the word is not followed by an operator name in brackets.
 */
static size_t
scan_qualified_operator(depth_scan *d, const char *s, size_t len, size_t pos)
{
	size_t start = pos;

	pos = ddl_scan_skip_space(s, len, pos);
	if (pos >= len || s[pos] != '(')
		return 0;
	for (pos++; pos < len && s[pos] != ')';) {
		if (s[pos] == '(')
			return 0;
		pos = s[pos] == '"' ? skip_quoted(s, len, pos, false) : pos + 1;
	}
	if (pos >= len)
		return 0;
	count_link(d, &d->expr[slot(d)], start);
	return pos + 1;
}

/*
 * An operator: one link, and one more for each + and - in it, which the
 * lexer splits off the end of an operator ("+-+-1" is four prefix
 * operators, nested on the parser's stack).
 */
static size_t
scan_operator(depth_scan *d, const char *s, size_t len, size_t pos)
{
	size_t start = pos;
	bool other = false;

	for (; pos < len && is_op_char(s[pos]) && !at_comment(s, len, pos); pos++) {
		if (s[pos] == '+' || s[pos] == '-')
			count_link(d, &d->expr[slot(d)], start);
		else
			other = true;
	}
	if (other)
		count_link(d, &d->expr[slot(d)], start);
	return pos;
}

size_t
ddl_scan_token(const char *s, size_t len, size_t pos, ddl_scan_tok *tok)
{
	char c = s[pos];
	size_t start = pos;

	*tok = DDL_TOK_OTHER;
	if (is_space(c)) {
		*tok = DDL_TOK_SPACE;
		return pos + 1;
	}
	if (at_comment(s, len, pos)) {
		*tok = DDL_TOK_COMMENT;
		return skip_comment(s, len, pos);
	}
	if (c == '\'' || c == '"') {
		*tok = c == '"' ? DDL_TOK_IDENT : DDL_TOK_STRING;
		return skip_quoted(s, len, pos, false);
	}
	if (c == '$' && dollar_tag(s, len, pos) > 0) {
		*tok = DDL_TOK_STRING;
		return skip_dollar(s, len, pos, dollar_tag(s, len, pos));
	}
	if (!is_ident_char((unsigned char) c))
		return pos + 1;
	while (pos < len && is_ident_char((unsigned char) s[pos]))
		pos++;
	*tok = DDL_TOK_WORD;
	if (pos - start == 1 && (c == 'E' || c == 'e') && pos < len && s[pos] == '\'') {
		*tok = DDL_TOK_STRING;
		return skip_quoted(s, len, pos, true);
	}
	return pos;
}

/* One token at pos; returns the position after it. */
static size_t
scan_token(depth_scan *d, const char *s, size_t len, size_t pos)
{
	char c = s[pos];
	ddl_scan_tok tok;
	size_t end = ddl_scan_token(s, len, pos, &tok), after;

	if (tok == DDL_TOK_WORD) {
		if (end - pos == 8 && strncasecmp(s + pos, "OPERATOR", 8) == 0 &&
			(after = scan_qualified_operator(d, s, len, end)) > 0)
			return after;
		scan_word(d, s + pos, end - pos, pos);
		return end;
	}
	if (tok != DDL_TOK_OTHER)
		return end;
	if (is_op_char(c))
		return scan_operator(d, s, len, pos);
	if (c == '(' || c == '[')
		open_level(d, pos);
	else if (c == ')' || c == ']')
		close_level(d);
	else if (c == ',')
		end_operand(d);
	else if (c == ';')
		end_statement(d);
	return pos + 1;
}

/*
 * Estimated depth of the deepest parse tree of the text: brackets open plus
 * chain links counted at each open level. Over-counts (every operator is a
 * link) but does not under-count the chains the grammar builds without
 * bound. *where is a byte near the deepest point.
 */
size_t
ddl_scan_depth(const char *s, size_t len, size_t *where)
{
	depth_scan d;
	size_t pos = 0;

	memset(&d, 0, sizeof(d));
	while (pos < len)
		pos = scan_token(&d, s, len, pos);
	*where = d.max_at;
	return d.max;
}

/*
 * Reads the integer literal at pos: digits, or a minus sign, white space
 * and digits (the grammar folds "-2" into one constant located at the
 * sign). Returns 0, or -1 when there is no such literal or it overflows.
 */
int
ddl_scan_int_at(const char *s, size_t len, size_t pos, int64_t *out)
{
	bool neg = false;
	int64_t v = 0;
	size_t start;

	if (pos < len && s[pos] == '-') {
		neg = true;
		pos = ddl_scan_skip_space(s, len, pos + 1);
	}
	start = pos;
	while (pos < len && isdigit((unsigned char) s[pos])) {
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (s[pos] - '0');
		pos++;
	}
	if (pos == start || (pos < len && is_ident_char((unsigned char) s[pos])))
		return -1;
	*out = neg ? -v : v;
	return 0;
}

/*
 * The end of an expression that starts at pos (a USING clause's): the
 * first comma or semicolon outside brackets, strings and comments, a
 * bracket that closes one opened before pos, or the end of the text.
 * Trailing white space is left out.
 */
size_t
ddl_scan_expr_end(const char *s, size_t len, size_t pos)
{
	size_t depth = 0, end = pos;

	while (pos < len) {
		char c = s[pos];

		if (is_space(c) || at_comment(s, len, pos)) {
			pos = ddl_scan_skip_space(s, len, pos);
			continue;
		}
		if ((c == ',' || c == ';') && depth == 0)
			break;
		if ((c == ')' || c == ']') && depth-- == 0)
			break;
		if (c == '(' || c == '[')
			depth++;
		if (c == '\'' || c == '"')
			pos = skip_quoted(s, len, pos, pos > 0 && (s[pos - 1] == 'E' || s[pos - 1] == 'e'));
		else if (c == '$' && dollar_tag(s, len, pos) > 0)
			pos = skip_dollar(s, len, pos, dollar_tag(s, len, pos));
		else
			pos++;
		end = pos;
	}
	return end;
}
