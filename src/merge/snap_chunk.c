#include "snap_chunk.h"
#include "codec.h"
#include "hex.h"
#include "xalloc.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* PostgreSQL's binary COPY file header: signature, flags, extension length. */
static const char binary_signature[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', '\377', '\r', '\n', '\0'};
#define BINARY_HEADER_LEN 19

snap_chunk *
snap_chunk_new(snap_chunk_format format, int ncols, const char *const *colnames, int nkeys,
               const int *key_idx)
{
	snap_chunk *c = xcalloc(1, sizeof *c);

	c->format = format;
	c->ncols = ncols;
	c->colnames = xcalloc((size_t) ncols, sizeof(char *));
	for (int i = 0; i < ncols; i++)
		if ((c->colnames[i] = strdup(colnames[i])) == NULL)
			abort();
	c->nkeys = nkeys;
	c->key_idx = xcalloc((size_t) nkeys, sizeof(int));
	memcpy(c->key_idx, key_idx, sizeof(int) * (size_t) nkeys);
	strbuf_init(&c->data);
	strbuf_init(&c->keys);
	strbuf_init(&c->pending);
	return c;
}

void
snap_chunk_free(snap_chunk *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < c->ncols; i++)
		free(c->colnames[i]);
	free(c->colnames);
	free(c->key_idx);
	free(c->row_end);
	free(c->key_end);
	strbuf_free(&c->data);
	strbuf_free(&c->keys);
	strbuf_free(&c->pending);
	free(c);
}

/* ---- keys ---- */

/* ---- rows ---- */

static void
push_row(snap_chunk *c, const char *row, size_t len, const strbuf *key)
{
	if (c->nrows == c->cap_rows) {
		c->cap_rows = c->cap_rows ? c->cap_rows * 2 : 1024;
		c->row_end = realloc(c->row_end, sizeof(size_t) * (size_t) c->cap_rows);
		c->key_end = realloc(c->key_end, sizeof(size_t) * (size_t) c->cap_rows);
		if (c->row_end == NULL || c->key_end == NULL)
			abort();
	}
	if (row != NULL)
		strbuf_appendn(&c->data, row, len);
	strbuf_appendn(&c->keys, strbuf_str(key), key->len);
	c->row_end[c->nrows] = c->data.len;
	c->key_end[c->nrows] = c->keys.len;
	c->nrows++;
}

const char *
snap_chunk_row(const snap_chunk *c, int row, size_t *len)
{
	size_t start = row == 0 ? 0 : c->row_end[row - 1];

	*len = c->row_end[row] - start;
	return strbuf_str(&c->data) + start;
}

const char *
snap_chunk_row_key(const snap_chunk *c, int row, size_t *len)
{
	size_t start = row == 0 ? 0 : c->key_end[row - 1];

	*len = c->key_end[row] - start;
	return strbuf_str(&c->keys) + start;
}

int
snap_chunk_key_values(const snap_chunk *c, int row, char ***vals, tm_error *err)
{
	const char *key;
	size_t len;
	char **out;

	if (row < 0 || row >= c->nrows)
		return tm_error_set(err, "snapshot chunk: no row %d", row);
	key = snap_chunk_row_key(c, row, &len);
	out = xcalloc((size_t) c->nkeys + 1, sizeof(char *));
	for (int k = 0; k < c->nkeys; k++) {
		const char *v;
		size_t vl;

		if (!codec_key_part(key, len, k, &v, &vl)) {
			for (int j = 0; j < k; j++)
				free(out[j]);
			free(out);
			return tm_error_set(err, "snapshot chunk: row %d has a malformed key", row);
		}
		out[k] = malloc(vl + 1);
		if (out[k] == NULL)
			abort();
		memcpy(out[k], v, vl);
		out[k][vl] = '\0';
	}
	*vals = out;
	return 0;
}

/* ---- COPY text ---- */

int
snap_chunk_text_fields(const char *line, size_t len, const char **out, size_t *out_len, int max)
{
	int n = 0;
	size_t start = 0;

	for (;;) {
		const char *tab = memchr(line + start, '\t', len - start);
		size_t end = tab ? (size_t) (tab - line) : len;

		if (n == max)
			return -1;
		out[n] = line + start;
		out_len[n++] = end - start;
		if (tab == NULL)
			return n;
		start = end + 1;
	}
}

/* One backslash escape at f[i]; appends its byte, returns the bytes used. */
static size_t
unescape_one(const char *f, size_t len, size_t i, strbuf *out)
{
	char c = i + 1 < len ? f[i + 1] : '\\';
	int v = 0;
	size_t used = 2;

	switch (c) {
	case 'n': strbuf_appendc(out, '\n'); return 2;
	case 't': strbuf_appendc(out, '\t'); return 2;
	case 'r': strbuf_appendc(out, '\r'); return 2;
	case 'b': strbuf_appendc(out, '\b'); return 2;
	case 'f': strbuf_appendc(out, '\f'); return 2;
	case 'v': strbuf_appendc(out, '\v'); return 2;
	case 'x':
		if (i + 2 >= len || hex_digit(f[i + 2]) < 0)
			break;
		v = hex_digit(f[i + 2]);
		used = 3;
		if (i + 3 < len && hex_digit(f[i + 3]) >= 0) {
			v = v * 16 + hex_digit(f[i + 3]);
			used = 4;
		}
		strbuf_appendc(out, (char) v);
		return used;
	default:
		if (c < '0' || c > '7')
			break;
		used = 1;
		while (used <= 3 && i + used < len && f[i + used] >= '0' && f[i + used] <= '7')
			v = v * 8 + (f[i + used++] - '0');
		strbuf_appendc(out, (char) v);
		return used;
	}
	strbuf_appendc(out, c);
	return 2;
}

bool
snap_chunk_text_unescape(const char *f, size_t len, strbuf *out)
{
	if (len == 2 && f[0] == '\\' && f[1] == 'N')
		return false;
	for (size_t i = 0; i < len;) {
		const char *bs = memchr(f + i, '\\', len - i);
		size_t j = bs ? (size_t) (bs - f) : len;

		strbuf_appendn(out, f + i, j - i);
		i = j;
		if (i < len)
			i += unescape_one(f, len, i, out);
	}
	return true;
}

static int
add_text_line(snap_chunk *c, const char *line, size_t len, const char **f, size_t *fl,
              strbuf *key, tm_error *err)
{
	strbuf val = STRBUF_INIT;

	if (snap_chunk_text_fields(line, len, f, fl, c->ncols) != c->ncols)
		return tm_error_set(err, "snapshot chunk: row %d does not have %d columns", c->nrows + 1,
		                    c->ncols);
	strbuf_reset(key);
	for (int k = 0; k < c->nkeys; k++) {
		uint32_t l;

		strbuf_reset(&val);
		if (!snap_chunk_text_unescape(f[c->key_idx[k]], fl[c->key_idx[k]], &val)) {
			strbuf_free(&val);
			return tm_error_set(err, "snapshot chunk: row %d has a NULL key", c->nrows + 1);
		}
		l = (uint32_t) val.len;
		strbuf_appendn(key, (const char *) &l, sizeof l);
		strbuf_appendn(key, strbuf_str(&val), val.len);
	}
	strbuf_free(&val);
	push_row(c, line, len + 1, key);
	return 0;
}

static int
add_text(snap_chunk *c, const char *text, size_t len, tm_error *err)
{
	const char **f = xcalloc((size_t) c->ncols, sizeof(char *));
	size_t *fl = xcalloc((size_t) c->ncols, sizeof(size_t));
	strbuf key = STRBUF_INIT;
	size_t start = 0;
	int rc = 0;

	strbuf_reserve(&c->data, len);
	while (rc == 0 && start < len) {
		const char *nl = memchr(text + start, '\n', len - start);

		if (nl == NULL)
			rc = tm_error_set(err, "snapshot chunk: a row does not end with a newline");
		else {
			rc = add_text_line(c, text + start, (size_t) (nl - text) - start, f, fl, &key, err);
			start = (size_t) (nl - text) + 1;
		}
	}
	strbuf_free(&key);
	free(f);
	free(fl);
	return rc;
}

/* ---- COPY binary ---- */

static uint16_t
get16(const char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return ntohs(v);
}

static uint32_t
get32(const char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* Size of the complete tuple at p (avail bytes), 0 when incomplete, or
 * (size_t) -1 when malformed. Fills the key from its leading fields. */
static size_t
binary_tuple(const snap_chunk *c, const char *p, size_t avail, strbuf *key)
{
	size_t off = 2;
	int nfields;

	if (avail < 2)
		return 0;
	nfields = (int16_t) get16(p);
	if (nfields != c->nkeys + c->ncols)
		return (size_t) -1;
	strbuf_reset(key);
	for (int i = 0; i < nfields; i++) {
		int32_t l;

		if (avail - off < 4)
			return 0;
		l = (int32_t) get32(p + off);
		off += 4;
		if (l < -1 || (i < c->nkeys && l < 0))
			return (size_t) -1;
		if (l > 0 && avail - off < (size_t) l)
			return 0;
		if (i < c->nkeys) {
			uint32_t ul = (uint32_t) l;

			strbuf_appendn(key, (const char *) &ul, sizeof ul);
			strbuf_appendn(key, p + off, (size_t) l);
		}
		off += l > 0 ? (size_t) l : 0;
	}
	return off;
}

/* Start of the table's own fields in a tuple: after the count and the
 * nkeys leading key fields. */
static size_t
skip_key_fields(const snap_chunk *c, const char *p)
{
	size_t off = 2;

	for (int i = 0; i < c->nkeys; i++)
		off += 4 + get32(p + off);
	return off;
}

static int
binary_header(snap_chunk *c, const char *p, size_t avail, size_t *used, tm_error *err)
{
	uint32_t ext;

	*used = 0;
	if (avail < BINARY_HEADER_LEN)
		return 0;
	if (memcmp(p, binary_signature, sizeof binary_signature) != 0)
		return tm_error_set(err, "snapshot chunk: not a binary COPY stream");
	ext = get32(p + 15);
	if (avail - BINARY_HEADER_LEN < ext)
		return 0;
	*used = BINARY_HEADER_LEN + ext;
	c->header_done = true;
	return 0;
}

/* Takes the complete tuples at the start of p (after the header, up to
 * the trailer); *used: the bytes taken. */
static int
take_tuples(snap_chunk *c, const char *p, size_t avail, size_t *used, tm_error *err)
{
	strbuf key = STRBUF_INIT;
	size_t off = 0;
	int rc = 0;

	if (!c->header_done && (rc = binary_header(c, p, avail, &off, err)) != 0)
		goto out;
	while (c->header_done && !c->trailer_seen && avail - off >= 2) {
		uint16_t count = htons((uint16_t) c->ncols);
		size_t n, start;

		if ((int16_t) get16(p + off) == -1) {
			c->trailer_seen = true;
			off += 2;
			break;
		}
		n = binary_tuple(c, p + off, avail - off, &key);
		if (n == (size_t) -1) {
			rc = tm_error_set(err, "snapshot chunk: binary row %d is malformed", c->nrows + 1);
			break;
		}
		if (n == 0)
			break;
		/* the row without its leading key fields, straight into data */
		start = skip_key_fields(c, p + off);
		strbuf_appendn(&c->data, (const char *) &count, 2);
		push_row(c, p + off + start, n - start, &key);
		off += n;
	}
	if (rc == 0 && c->trailer_seen && off < avail)
		rc = tm_error_set(err, "snapshot chunk: data after the end of a binary COPY");
out:
	*used = off;
	strbuf_free(&key);
	return rc;
}

/* The server sends a tuple per message, so the bytes are read where they
 * are; only a tuple split across calls waits in pending. */
static int
add_binary(snap_chunk *c, const char *buf, size_t len, tm_error *err)
{
	size_t used = 0;
	int rc;

	if (c->pending.len == 0) {
		rc = take_tuples(c, buf, len, &used, err);
		if (rc == 0 && used < len)
			strbuf_appendn(&c->pending, buf + used, len - used);
		return rc;
	}
	strbuf_appendn(&c->pending, buf, len);
	rc = take_tuples(c, c->pending.data, c->pending.len, &used, err);
	/* keep only the incomplete rest */
	if (rc == 0 && used > 0) {
		memmove(c->pending.data, c->pending.data + used, c->pending.len - used);
		c->pending.len -= used;
	}
	if (c->pending.len == 0)
		strbuf_free(&c->pending);
	return rc;
}

int
snap_chunk_add(snap_chunk *c, const char *buf, size_t len, tm_error *err)
{
	return c->format == SNAP_CHUNK_TEXT ? add_text(c, buf, len, err) : add_binary(c, buf, len, err);
}

int
snap_chunk_finish(snap_chunk *c, tm_error *err)
{
	if (c->format == SNAP_CHUNK_BINARY && (!c->trailer_seen || c->pending.len > 0))
		return tm_error_set(err, "snapshot chunk: the binary COPY stream ended early");
	return 0;
}

void
snap_chunk_copy_header(snap_chunk_format format, strbuf *sb)
{
	static const char zeros[8] = {0};

	if (format != SNAP_CHUNK_BINARY)
		return;
	strbuf_appendn(sb, binary_signature, sizeof binary_signature);
	strbuf_appendn(sb, zeros, 8);
}

void
snap_chunk_copy_trailer(snap_chunk_format format, strbuf *sb)
{
	if (format == SNAP_CHUNK_BINARY)
		strbuf_appendn(sb, "\377\377", 2);
}
