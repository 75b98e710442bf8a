/*
 * prom.h: a registry of metrics and its rendering in Prometheus's text
 * exposition format, version 0.0.4. Pure: no I/O, no globals.
 *
 * A family has a name, a help text, a type (counter or gauge) and at most
 * one label; a series is one value of a family (one per label value, or
 * the only one of a family without a label). A value is a 64-bit unsigned
 * integer in the family's raw unit, rendered divided by its scale (a power
 * of ten): durations are kept in microseconds and shown in seconds (scale
 * 1000000), positions and bytes exactly (scale 1).
 *
 * Threads: any thread may update a series (relaxed atomics: no lock, no
 * allocation), add a series (under the registry's lock; the series lives
 * until prom_free, so a pointer to it stays valid) and render (under the
 * same lock, which only series creation contends for).
 *
 * Staged updates: counts of work done inside a target transaction become
 * visible only once it commits (prom_publish), and are dropped when it
 * does not (prom_discard), so that a transaction applied again after a
 * failure is counted once. Staging belongs to one thread (the apply's):
 * prom_stage, prom_publish and prom_discard must be called from it alone.
 *
 * Rendering: families in the order they were made, each with its # HELP
 * and # TYPE lines (also when it has no series yet), then its series in
 * the order they were made: `name{label="value"} 42`. Label values and
 * help texts are escaped as the format says (backslash, double quote in
 * label values, line feed); bytes that are not UTF-8 become U+FFFD.
 */
#ifndef TIDEMARK_PROM_H
#define TIDEMARK_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

typedef enum prom_type {
	PROM_COUNTER,
	PROM_GAUGE,
} prom_type;

typedef struct prom_registry prom_registry;
typedef struct prom_family prom_family;
typedef struct prom_series prom_series;

prom_registry *prom_new(void);
/* Frees the registry with its families and series (no thread may use any). */
void prom_free(prom_registry *r);

/*
 * A new family; the strings are copied. label: the label's name, NULL for
 * a family of one series. scale: raw units per unit shown (1, 10, ...,
 * 1000000000). Returns NULL when a name is not a valid metric or label
 * name, or the scale not a power of ten. Borrowed: the registry's.
 */
prom_family *prom_family_new(prom_registry *r, const char *name, const char *help,
                             prom_type type, const char *label, uint64_t scale);

/* The series of a label value (ignored, may be NULL, for a family without a
 * label), made at its first use. Borrowed: valid until prom_free. */
prom_series *prom_series_of(prom_family *f, const char *label_value);

void prom_add(prom_series *s, uint64_t n);
void prom_set(prom_series *s, uint64_t value);
uint64_t prom_value(const prom_series *s);

/* Adds n at the next prom_publish; prom_discard forgets it. */
void prom_stage(prom_registry *r, prom_series *s, uint64_t n);
void prom_publish(prom_registry *r);
void prom_discard(prom_registry *r);

/* Appends the whole exposition to out. */
void prom_render(prom_registry *r, strbuf *out);

/* The pieces of the format, for tests and callers of their own. */
void prom_append_label_value(strbuf *out, const char *value);
void prom_append_help(strbuf *out, const char *help);
/* raw / scale in decimal, exactly, without trailing zeros ("1.5", "2"). */
void prom_append_value(strbuf *out, uint64_t raw, uint64_t scale);

/* Is text a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), or, with
 * label true, label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting "__")? */
bool prom_valid_name(const char *text, bool label);

/*
 * A listen address as the command line gives it: "HOST:PORT", ":PORT"
 * (every interface: host ""), or "[IPV6]:PORT" (host without the
 * brackets). PORT is 0 to 65535 (0: any free port). Returns 0, or -1 when
 * text is none of these or host does not fit in host_size.
 */
int prom_parse_listen(const char *text, char *host, size_t host_size, unsigned *port);

#endif
