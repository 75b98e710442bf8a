/*
 * spool.c: a temporary file of records (spool.h). One stdio stream both
 * appends and reads back: the last operation decides where it stands, so
 * switching between the two flushes and seeks first (as stdio requires).
 */
#include "spool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "be32.h"
#include "exitcode.h"
#include "log.h"
#include "xalloc.h"

struct spool {
	FILE *f;            /* owned */
	char *dir;          /* owned: for messages */
	uint64_t size;      /* bytes written */
	uint64_t rpos;      /* where the next read starts */
	bool reading;       /* the last operation read */
	char *rec;          /* owned: the record spool_next returned */
	size_t rec_cap;
};

static int
fail(const spool *s, const char *what)
{
	log_error("spool directory %s: %s: %s. Fix: free space there, or point TMPDIR (or "
	          "--spool-dir) at a directory with room for the largest transaction, or run with "
	          "--no-streaming", s->dir, what, strerror(errno));
	return TM_EXIT_CONFIG;
}

int
spool_open(const char *dir, spool **out)
{
	spool *s = xcalloc(1, sizeof *s);
	const char *d = dir != NULL ? dir : getenv("TMPDIR");
	size_t n;
	char *path;
	int fd;

	s->dir = xstrdup(d != NULL && d[0] != '\0' ? d : "/tmp");
	n = strlen(s->dir) + sizeof "/tidemark-spool-XXXXXX";
	path = xcalloc(1, n);
	snprintf(path, n, "%s/tidemark-spool-XXXXXX", s->dir);
	fd = mkstemp(path);
	if (fd >= 0)
		unlink(path); /* gone with the process, whatever its end */
	free(path);
	if (fd < 0 || (s->f = fdopen(fd, "w+b")) == NULL) {
		int rc = fail(s, "cannot make a temporary file");

		if (fd >= 0)
			close(fd);
		spool_close(s);
		return rc;
	}
	*out = s;
	return TM_OK;
}

void
spool_close(spool *s)
{
	if (s == NULL)
		return;
	if (s->f != NULL)
		fclose(s->f);
	free(s->dir);
	free(s->rec);
	free(s);
}

static int
at_end(spool *s)
{
	if (!s->reading)
		return TM_OK;
	s->reading = false;
	return fseeko(s->f, (off_t) s->size, SEEK_SET) == 0 ? TM_OK : fail(s, "cannot seek");
}

int
spool_append(spool *s, const char *data, size_t len)
{
	char head[4];
	int rc = at_end(s);

	if (rc != TM_OK)
		return rc;
	if (len > UINT32_MAX)
		return fail(s, "a record over 4 GB");
	be32_put(head, (uint32_t) len);
	if (fwrite(head, 1, 4, s->f) != 4 || (len > 0 && fwrite(data, 1, len, s->f) != len))
		return fail(s, "cannot write");
	s->size += 4 + len;
	return TM_OK;
}

uint64_t
spool_size(const spool *s)
{
	return s->size;
}

int
spool_truncate(spool *s, uint64_t size)
{
	if (size > s->size)
		size = s->size;
	if (fflush(s->f) != 0 || ftruncate(fileno(s->f), (off_t) size) != 0)
		return fail(s, "cannot truncate");
	s->size = size;
	if (s->rpos > size)
		s->rpos = size;
	s->reading = true; /* the next append seeks to the new end */
	return TM_OK;
}

int
spool_seek(spool *s, uint64_t pos)
{
	if (fflush(s->f) != 0)
		return fail(s, "cannot write");
	s->rpos = pos < s->size ? pos : s->size;
	s->reading = true;
	return fseeko(s->f, (off_t) s->rpos, SEEK_SET) == 0 ? TM_OK : fail(s, "cannot seek");
}

int
spool_next(spool *s, const char **data, size_t *len, bool *end)
{
	char head[4];
	size_t n;

	*end = false;
	if (!s->reading && spool_seek(s, s->rpos) != TM_OK)
		return TM_EXIT_CONFIG;
	if (s->rpos >= s->size) {
		*end = true;
		return TM_OK;
	}
	if (fread(head, 1, 4, s->f) != 4)
		return fail(s, "cannot read back");
	n = be32_get(head);
	if (n + 1 > s->rec_cap) {
		s->rec_cap = n + 1;
		s->rec = realloc(s->rec, s->rec_cap);
		if (s->rec == NULL)
			abort();
	}
	if (n > 0 && fread(s->rec, 1, n, s->f) != n)
		return fail(s, "cannot read back");
	s->rec[n] = '\0';
	s->rpos += 4 + n;
	*data = s->rec;
	*len = n;
	return TM_OK;
}
