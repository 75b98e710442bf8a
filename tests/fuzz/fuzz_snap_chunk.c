/*
 * fuzz_snap_chunk.c: the snapshot's COPY chunk parser (src/merge/snap_chunk.c).
 *
 * Input: a byte for the format (bit 0: binary), the column count (bits
 * 1-2: 1 to 4) and the key count (bits 3-4: 0 to 3); a byte choosing the
 * key columns of a text chunk; a byte seeding the splits; then the COPY
 * data. The data is added whole to one chunk and in pieces to another:
 * anywhere for binary, at row ends for text (the server sends a text row
 * per CopyData message, and a text chunk takes whole rows).
 *
 * Invariants:
 *   - both chunks fail or succeed alike and hold the same rows and keys;
 *   - rows and keys are laid end to end, each key has exactly nkeys parts;
 *   - text: the rows are the input's lines, each with ncols fields, its
 *     key the unescaped key fields;
 *   - binary: each row counts ncols fields; with its key fields put back it
 *     is the input's tuple, and the rows between a COPY header and trailer
 *     read back as the same rows.
 */
#include "fuzz_common.h"

#include <arpa/inet.h>

#include "codec.h"
#include "snap_chunk.h"

#define MAX_COLS 4
#define BINARY_HEADER_LEN 19

static const char *const colnames[MAX_COLS] = {"a", "b", "c", "d"};

typedef struct setup {
	snap_chunk_format format;
	int ncols;
	int nkeys;
	int key_idx[MAX_COLS];
	uint32_t seed;
} setup;

static uint32_t
next_rand(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

/* Length of the next piece at data[off..len): binary anywhere, text one to
 * four whole lines (or the rest). */
static size_t
piece_len(const setup *s, const char *data, size_t len, size_t off, uint32_t *rng)
{
	size_t end = off;

	if (s->format == SNAP_CHUNK_BINARY) {
		size_t n = 1 + next_rand(rng) % 97;

		return n < len - off ? n : len - off;
	}
	for (uint32_t lines = 1 + next_rand(rng) % 4; lines > 0 && end < len; lines--) {
		const char *nl = memchr(data + end, '\n', len - end);

		end = nl ? (size_t) (nl - data) + 1 : len;
	}
	return end - off;
}

/* Adds data in pieces (whole when split is false), then finishes. */
static int
feed(snap_chunk *c, const setup *s, const char *data, size_t len, bool split)
{
	uint32_t rng = s->seed;
	tm_error err;

	for (size_t off = 0; off < len;) {
		size_t n = split ? piece_len(s, data, len, off, &rng) : len;
		char *piece = malloc(n ? n : 1);
		int rc;

		memcpy(piece, data + off, n);
		rc = snap_chunk_add(c, piece, n, &err);
		free(piece);
		if (rc != 0)
			return -1;
		off += n;
	}
	return snap_chunk_finish(c, &err);
}

static void
check_layout(const snap_chunk *c)
{
	for (int r = 0; r < c->nrows; r++) {
		FUZZ_REQUIRE(r == 0 || (c->row_end[r] >= c->row_end[r - 1] &&
								c->key_end[r] >= c->key_end[r - 1]),
					 "rows and keys laid end to end");
	}
	FUZZ_REQUIRE(c->data.len == (c->nrows ? c->row_end[c->nrows - 1] : 0) &&
				 c->keys.len == (c->nrows ? c->key_end[c->nrows - 1] : 0),
				 "the last row ends the data");
}

/* The row's key values; each has exactly nkeys parts. */
static char **
key_values(const snap_chunk *c, int row)
{
	const char *key, *v;
	size_t len, vl;
	char **vals;
	tm_error err;

	key = snap_chunk_row_key(c, row, &len);
	FUZZ_REQUIRE(!codec_key_part(key, len, c->nkeys, &v, &vl), "no key part past nkeys");
	FUZZ_REQUIRE(snap_chunk_key_values(c, row, &vals, &err) == 0, "every row has its key values");
	return vals;
}

static void
free_values(const snap_chunk *c, char **vals)
{
	for (int k = 0; k < c->nkeys; k++)
		free(vals[k]);
	free(vals);
}

static void
check_text_row(const snap_chunk *c, int row, const char *text, size_t len)
{
	const char *f[MAX_COLS], *key, *v;
	size_t fl[MAX_COLS], klen, vl;

	free_values(c, key_values(c, row));
	key = snap_chunk_row_key(c, row, &klen);

	FUZZ_REQUIRE(len > 0 && text[len - 1] == '\n' && memchr(text, '\n', len - 1) == NULL,
				 "a text row is one line");
	FUZZ_REQUIRE(snap_chunk_text_fields(text, len - 1, f, fl, c->ncols) == c->ncols,
				 "a text row has ncols fields");
	for (int k = 0; k < c->nkeys; k++) {
		strbuf sb = STRBUF_INIT;

		FUZZ_REQUIRE(snap_chunk_text_unescape(f[c->key_idx[k]], fl[c->key_idx[k]], &sb),
					 "a key field is not NULL");
		FUZZ_REQUIRE(codec_key_part(key, klen, k, &v, &vl) && vl == sb.len &&
					 memcmp(v, strbuf_str(&sb), vl) == 0,
					 "the key is the unescaped key fields");
		strbuf_free(&sb);
	}
}

static void
check_text(const snap_chunk *c, const char *data, size_t len, int rc)
{
	size_t off = 0;

	for (int r = 0; r < c->nrows; r++) {
		size_t n;
		const char *row = snap_chunk_row(c, r, &n);

		FUZZ_REQUIRE(off + n <= len && memcmp(row, data + off, n) == 0,
					 "text rows are the input's lines");
		check_text_row(c, r, row, n);
		off += n;
	}
	FUZZ_REQUIRE(rc != 0 || off == len, "a text chunk holds all of its input");
}

static void
put_field(strbuf *sb, const char *v, size_t len)
{
	uint32_t l = htonl((uint32_t) len);

	strbuf_appendn(sb, (const char *) &l, 4);
	strbuf_appendn(sb, v, len);
}

/* The binary tuple a row was cut from: count, key fields, the row's own. */
static void
rebuild_tuple(const snap_chunk *c, int row, strbuf *out)
{
	size_t n, vl;
	const char *r = snap_chunk_row(c, row, &n);
	const char *key = snap_chunk_row_key(c, row, &vl);
	uint16_t count;

	memcpy(&count, r, 2);
	FUZZ_REQUIRE(n >= 2 && ntohs(count) == c->ncols, "a binary row counts ncols fields");
	count = htons((uint16_t) (c->ncols + c->nkeys));
	strbuf_appendn(out, (const char *) &count, 2);
	for (int k = 0; k < c->nkeys; k++) {
		const char *v;

		FUZZ_REQUIRE(codec_key_part(key, vl, k, &v, &n), "every key part is there");
		put_field(out, v, n);
	}
	r = snap_chunk_row(c, row, &n);
	strbuf_appendn(out, r + 2, n - 2);
}

/* The rows, between a header and a trailer, read back the same. */
static void
check_rows_reread(const snap_chunk *c)
{
	static const int no_keys[1] = {0};
	snap_chunk *again = snap_chunk_new(SNAP_CHUNK_BINARY, c->ncols, colnames, 0, no_keys);
	strbuf sb = STRBUF_INIT;

	snap_chunk_copy_header(SNAP_CHUNK_BINARY, &sb);
	strbuf_appendn(&sb, strbuf_str(&c->data), c->data.len);
	snap_chunk_copy_trailer(SNAP_CHUNK_BINARY, &sb);
	FUZZ_REQUIRE(feed(again, &(setup) {.format = SNAP_CHUNK_BINARY}, sb.data, sb.len, false) == 0,
				 "rows between a header and a trailer are a valid COPY stream");
	FUZZ_REQUIRE(again->nrows == c->nrows && again->data.len == c->data.len &&
				 memcmp(strbuf_str(&again->data), strbuf_str(&c->data), c->data.len) == 0,
				 "rows read back the same");
	snap_chunk_free(again);
	strbuf_free(&sb);
}

static void
check_binary(const snap_chunk *c, const char *data, size_t len, int rc)
{
	strbuf sb = STRBUF_INIT;
	uint32_t ext;
	size_t start;

	for (int r = 0; r < c->nrows; r++) {
		free_values(c, key_values(c, r));
		rebuild_tuple(c, r, &sb);
	}
	if (c->header_done) {
		memcpy(&ext, data + 15, 4);
		start = BINARY_HEADER_LEN + ntohl(ext);
		FUZZ_REQUIRE(start + sb.len <= len && memcmp(data + start, strbuf_str(&sb), sb.len) == 0,
					 "binary rows with their keys are the input's tuples");
		FUZZ_REQUIRE(rc != 0 || start + sb.len + 2 == len, "a binary chunk holds all of its input");
	} else
		FUZZ_REQUIRE(c->nrows == 0, "no rows before the header");
	strbuf_free(&sb);
	check_rows_reread(c);
}

static void
check_same(const snap_chunk *a, const snap_chunk *b)
{
	FUZZ_REQUIRE(a->nrows == b->nrows && a->data.len == b->data.len && a->keys.len == b->keys.len,
				 "pieces give the rows the whole gives");
	FUZZ_REQUIRE(memcmp(strbuf_str(&a->data), strbuf_str(&b->data), a->data.len) == 0 &&
				 memcmp(strbuf_str(&a->keys), strbuf_str(&b->keys), a->keys.len) == 0 &&
				 (a->nrows == 0 ||
				  memcmp(a->row_end, b->row_end, sizeof(size_t) * (size_t) a->nrows) == 0),
				 "pieces give the bytes the whole gives");
}

static void
read_setup(fuzz_input *in, setup *s)
{
	uint8_t b = fuzz_byte(in), keys = fuzz_byte(in);

	s->format = (b & 1) ? SNAP_CHUNK_BINARY : SNAP_CHUNK_TEXT;
	s->ncols = 1 + ((b >> 1) & 3);
	s->nkeys = (b >> 3) & 3;
	for (int k = 0; k < s->nkeys; k++)
		s->key_idx[k] = ((keys >> (2 * k)) & 3) % s->ncols;
	s->seed = fuzz_byte(in);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_input in = {data, size};
	setup s;
	size_t len;
	char *copy;
	snap_chunk *whole, *split;
	int rc_whole, rc_split;

	read_setup(&in, &s);
	copy = fuzz_take(&in, in.left, &len);
	whole = snap_chunk_new(s.format, s.ncols, colnames, s.nkeys, s.key_idx);
	split = snap_chunk_new(s.format, s.ncols, colnames, s.nkeys, s.key_idx);
	rc_whole = feed(whole, &s, copy, len, false);
	rc_split = feed(split, &s, copy, len, true);
	FUZZ_REQUIRE(rc_whole == rc_split, "pieces fail where the whole fails");
	check_same(whole, split);
	check_layout(whole);
	if (s.format == SNAP_CHUNK_TEXT)
		check_text(whole, copy, len, rc_whole);
	else
		check_binary(whole, copy, len, rc_whole);
	snap_chunk_free(whole);
	snap_chunk_free(split);
	free(copy);
	return 0;
}
