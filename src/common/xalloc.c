#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *
check(void *p, size_t size)
{
	if (p == NULL) {
		fprintf(stderr, "tidemark: out of memory allocating %zu bytes\n", size);
		abort();
	}
	return p;
}

void *
xmalloc(size_t size)
{
	return check(malloc(size ? size : 1), size);
}

void *
xcalloc(size_t n, size_t size)
{
	return check(calloc(n ? n : 1, size ? size : 1), n * size);
}

void *
xrealloc(void *p, size_t size)
{
	return check(realloc(p, size ? size : 1), size);
}

char *
xstrdup(const char *s)
{
	return s ? check(strdup(s), strlen(s) + 1) : NULL;
}

void
xstrings_free(char **list)
{
	for (size_t i = 0; list != NULL && list[i] != NULL; i++)
		free(list[i]);
	free(list);
}
