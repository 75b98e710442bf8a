/*
 * prom.c: the metrics registry and the text exposition format (prom.h).
 */
#include "prom.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

struct prom_series {
	_Atomic uint64_t value;
	char *label_value;        /* owned; NULL in a family without a label */
	/* staging, the staging thread's alone */
	uint64_t staged;
	bool dirty;               /* on the registry's dirty list */
	prom_series *next_dirty;
};

struct prom_family {
	prom_registry *registry;  /* borrowed: the owner */
	char *name;               /* owned, like every string here */
	char *help;
	char *label;
	prom_type type;
	uint64_t scale;
	prom_series **series;     /* owned array of owned series */
	int nseries;
};

struct prom_registry {
	pthread_mutex_t mu;       /* families' series lists */
	prom_family **families;   /* owned */
	int nfamilies;
	prom_series *dirty;       /* staged, not yet published (the staging thread's) */
};

prom_registry *
prom_new(void)
{
	prom_registry *r = xcalloc(1, sizeof *r);

	pthread_mutex_init(&r->mu, NULL);
	return r;
}

void
prom_free(prom_registry *r)
{
	if (r == NULL)
		return;
	for (int i = 0; i < r->nfamilies; i++) {
		prom_family *f = r->families[i];

		for (int j = 0; j < f->nseries; j++) {
			free(f->series[j]->label_value);
			free(f->series[j]);
		}
		free(f->series);
		free(f->name);
		free(f->help);
		free(f->label);
		free(f);
	}
	free(r->families);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

bool
prom_valid_name(const char *text, bool label)
{
	if (text == NULL || text[0] == '\0' || (label && strncmp(text, "__", 2) == 0))
		return false;
	for (const char *p = text; *p != '\0'; p++) {
		bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
		             (!label && *p == ':');

		if (!alpha && !(p > text && *p >= '0' && *p <= '9'))
			return false;
	}
	return true;
}

static bool
power_of_ten(uint64_t n)
{
	while (n >= 10 && n % 10 == 0)
		n /= 10;
	return n == 1;
}

prom_family *
prom_family_new(prom_registry *r, const char *name, const char *help, prom_type type,
                const char *label, uint64_t scale)
{
	prom_family *f;

	if (!prom_valid_name(name, false) || (label != NULL && !prom_valid_name(label, true)) ||
	    !power_of_ten(scale))
		return NULL;
	f = xcalloc(1, sizeof *f);
	f->registry = r;
	f->name = xstrdup(name);
	f->help = xstrdup(help);
	f->label = xstrdup(label);
	f->type = type;
	f->scale = scale;
	pthread_mutex_lock(&r->mu);
	r->families = xrealloc(r->families, sizeof(prom_family *) * (size_t) (r->nfamilies + 1));
	r->families[r->nfamilies++] = f;
	pthread_mutex_unlock(&r->mu);
	return f;
}

static prom_series *
find_series(const prom_family *f, const char *label_value)
{
	for (int i = 0; i < f->nseries; i++)
		if (f->label == NULL || strcmp(f->series[i]->label_value, label_value) == 0)
			return f->series[i];
	return NULL;
}

prom_series *
prom_series_of(prom_family *f, const char *label_value)
{
	prom_series *s;

	if (label_value == NULL)
		label_value = "";
	pthread_mutex_lock(&f->registry->mu);
	s = find_series(f, label_value);
	if (s == NULL) {
		s = xcalloc(1, sizeof *s);
		atomic_init(&s->value, 0);
		s->label_value = f->label != NULL ? xstrdup(label_value) : NULL;
		f->series = xrealloc(f->series, sizeof(prom_series *) * (size_t) (f->nseries + 1));
		f->series[f->nseries++] = s;
	}
	pthread_mutex_unlock(&f->registry->mu);
	return s;
}

void
prom_add(prom_series *s, uint64_t n)
{
	atomic_fetch_add_explicit(&s->value, n, memory_order_relaxed);
}

void
prom_set(prom_series *s, uint64_t value)
{
	atomic_store_explicit(&s->value, value, memory_order_relaxed);
}

uint64_t
prom_value(const prom_series *s)
{
	return atomic_load_explicit(&((prom_series *) s)->value, memory_order_relaxed);
}

/* ---- staging ---- */

void
prom_stage(prom_registry *r, prom_series *s, uint64_t n)
{
	if (!s->dirty) {
		s->dirty = true;
		s->next_dirty = r->dirty;
		r->dirty = s;
	}
	s->staged += n;
}

static void
drain(prom_registry *r, bool publish)
{
	prom_series *s = r->dirty;

	while (s != NULL) {
		prom_series *next = s->next_dirty;

		if (publish && s->staged > 0)
			prom_add(s, s->staged);
		s->staged = 0;
		s->dirty = false;
		s->next_dirty = NULL;
		s = next;
	}
	r->dirty = NULL;
}

void
prom_publish(prom_registry *r)
{
	drain(r, true);
}

void
prom_discard(prom_registry *r)
{
	drain(r, false);
}

/* ---- the text format ---- */

/* The length of the valid UTF-8 sequence at s (at most n bytes), 0 if none. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3
	             : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
	uint32_t cp;

	if (len == 0 || len > n)
		return 0;
	cp = len == 1 ? s[0] : s[0] & (0x7F >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	/* overlong forms, surrogates and code points past U+10FFFF */
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return 0;
	return len;
}

static void
append_escaped(strbuf *out, const char *text, bool quote)
{
	const unsigned char *s = (const unsigned char *) (text ? text : "");
	size_t n = strlen((const char *) s);

	for (size_t i = 0; i < n;) {
		size_t len = utf8_len(s + i, n - i);

		if (len == 0) {
			strbuf_append(out, "\xEF\xBF\xBD"); /* U+FFFD */
			i++;
			continue;
		}
		if (s[i] == '\\')
			strbuf_append(out, "\\\\");
		else if (s[i] == '\n')
			strbuf_append(out, "\\n");
		else if (quote && s[i] == '"')
			strbuf_append(out, "\\\"");
		else
			strbuf_appendn(out, (const char *) s + i, len);
		i += len;
	}
}

void
prom_append_label_value(strbuf *out, const char *value)
{
	append_escaped(out, value, true);
}

void
prom_append_help(strbuf *out, const char *help)
{
	append_escaped(out, help, false);
}

void
prom_append_value(strbuf *out, uint64_t raw, uint64_t scale)
{
	char frac[24];
	int digits = 0, len;

	strbuf_appendf(out, "%llu", (unsigned long long) (raw / scale));
	if (scale <= 1 || raw % scale == 0)
		return;
	for (uint64_t s = scale; s > 1; s /= 10)
		digits++;
	len = snprintf(frac, sizeof frac, "%0*llu", digits, (unsigned long long) (raw % scale));
	while (len > 0 && frac[len - 1] == '0')
		frac[--len] = '\0';
	strbuf_appendf(out, ".%s", frac);
}

static void
render_family(const prom_family *f, strbuf *out)
{
	strbuf_appendf(out, "# HELP %s ", f->name);
	prom_append_help(out, f->help);
	strbuf_appendf(out, "\n# TYPE %s %s\n", f->name, f->type == PROM_COUNTER ? "counter" : "gauge");
	for (int i = 0; i < f->nseries; i++) {
		const prom_series *s = f->series[i];

		strbuf_append(out, f->name);
		if (f->label != NULL) {
			strbuf_appendf(out, "{%s=\"", f->label);
			prom_append_label_value(out, s->label_value);
			strbuf_append(out, "\"}");
		}
		strbuf_appendc(out, ' ');
		prom_append_value(out, prom_value(s), f->scale);
		strbuf_appendc(out, '\n');
	}
}

void
prom_render(prom_registry *r, strbuf *out)
{
	pthread_mutex_lock(&r->mu);
	for (int i = 0; i < r->nfamilies; i++)
		render_family(r->families[i], out);
	pthread_mutex_unlock(&r->mu);
}

/* ---- the listen address ---- */

static int
parse_port(const char *text, unsigned *port)
{
	unsigned long v = 0;

	if (*text == '\0' || strlen(text) > 5)
		return -1;
	for (const char *p = text; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned long) (*p - '0');
	}
	if (v > 65535)
		return -1;
	*port = (unsigned) v;
	return 0;
}

int
prom_parse_listen(const char *text, char *host, size_t host_size, unsigned *port)
{
	const char *colon, *start = text, *end;

	if (text == NULL)
		return -1;
	if (text[0] == '[') {
		start = text + 1;
		end = strchr(start, ']');
		if (end == NULL || end == start || end[1] != ':')
			return -1;
		colon = end + 1;
	} else {
		colon = strrchr(text, ':');
		if (colon == NULL || memchr(text, ':', (size_t) (colon - text)) != NULL)
			return -1; /* no port, or an IPv6 address without brackets */
		end = colon;
	}
	if ((size_t) (end - start) >= host_size || memchr(start, '[', (size_t) (end - start)) ||
	    memchr(start, ']', (size_t) (end - start)) || parse_port(colon + 1, port) != 0)
		return -1;
	memcpy(host, start, (size_t) (end - start));
	host[end - start] = '\0';
	return 0;
}
