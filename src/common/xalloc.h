/*
 * xalloc.h: allocation that never returns NULL. Running out of memory is
 * not a state a replicator can recover from in place (the process stops,
 * and a restart resumes from the target's stored position), and every
 * caller would otherwise carry the same check.
 */
#ifndef TIDEMARK_XALLOC_H
#define TIDEMARK_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
/* Zeroed; n 0 is fine (a valid pointer to free). */
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
/* NULL gives NULL. */
char *xstrdup(const char *s);
/* Frees a NULL-terminated array of strings and its strings (NULL: none). */
void xstrings_free(char **list);

#endif
