/*
 * fuzz_common.h: what the libFuzzer harnesses share.
 *
 * A broken invariant aborts with its description, so that libFuzzer saves
 * the input as a crash. Inputs are read as a stream of pieces, each copied
 * into an allocation of its own exact size: a read past a piece is then
 * caught by AddressSanitizer, where a read into the next piece of the
 * fuzzer's one buffer would go unseen.
 */
#ifndef TIDEMARK_FUZZ_COMMON_H
#define TIDEMARK_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_REQUIRE(cond, what) \
	((cond) ? (void) 0 : fuzz_broken(__FILE__, __LINE__, #cond, (what)))

static inline void
fuzz_broken(const char *file, int line, const char *cond, const char *what)
{
	fprintf(stderr, "%s:%d: invariant broken: %s (%s)\n", file, line, what, cond);
	abort();
}

typedef struct fuzz_input {
	const uint8_t *p;
	size_t left;
} fuzz_input;

static inline uint8_t
fuzz_byte(fuzz_input *in)
{
	if (in->left == 0)
		return 0;
	in->left--;
	return *in->p++;
}

/* A copy of the next n bytes (fewer at the end), NUL-terminated past its
 * length; the caller frees it. */
static inline char *
fuzz_take(fuzz_input *in, size_t n, size_t *len)
{
	char *s;

	if (n > in->left)
		n = in->left;
	s = malloc(n + 1);
	if (s == NULL)
		abort();
	memcpy(s, in->p, n);
	s[n] = '\0';
	in->p += n;
	in->left -= n;
	*len = n;
	return s;
}

/* The bytes up to the next newline (not included) or the end. */
static inline char *
fuzz_line(fuzz_input *in, size_t *len)
{
	const uint8_t *nl = memchr(in->p, '\n', in->left);
	size_t n = nl ? (size_t) (nl - in->p) : in->left;
	char *s = fuzz_take(in, n, len);

	if (nl != NULL)
		fuzz_byte(in);
	return s;
}

/* Cuts name to the 63 bytes PostgreSQL keeps of an identifier
 * (NAMEDATALEN - 1), at a character boundary, as its parser does. */
static inline void
fuzz_clip_identifier(char *name)
{
	size_t n = strlen(name);

	if (n <= 63)
		return;
	n = 63;
	while (n > 0 && ((unsigned char) name[n] & 0xc0) == 0x80)
		n--;
	name[n] = '\0';
}

#endif
