/*
 * srctype.h: the source's user-defined types and collations as the
 * capture describes them (migrations/source/004_target_types.sql documents
 * the JSON), read into structs, ordered so that every type comes after the
 * types it needs, and compared: what turns one version of an enum or a
 * composite type into the next (the steps the target runs), and whether two
 * collations order text alike. Pure: JSON in, structs out, every field
 * checked; the content is untrusted (see ddl_event.h), so names only ever
 * reach SQL as quoted identifiers and types through sqltype.
 *
 * Ownership: every pointer in these structs is owned by the struct that
 * holds it; srctype_clear / srctype_list_clear / srctype_collation_free
 * release them.
 */
#ifndef TIDEMARK_SRCTYPE_H
#define TIDEMARK_SRCTYPE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tm_error.h"

/* An effective collation: for the database default, the database's. */
typedef struct srctype_collation {
	char *schema;
	char *name;
	bool is_default;     /* the database default ("default"): no COLLATE clause */
	bool builtin;        /* created by initdb (pg_catalog) */
	char provider;       /* 'c' libc, 'i' ICU */
	char *collate;       /* libc: LC_COLLATE, LC_CTYPE; NULL when absent */
	char *ctype;
	char *locale;        /* ICU: the locale */
	char *rules;         /* ICU tailoring rules (PostgreSQL 16), NULL when none */
	bool deterministic;
	char *version;       /* the collation's actual version, NULL when none */
} srctype_collation;

typedef enum srctype_kind {
	SRCTYPE_ENUM,
	SRCTYPE_COMPOSITE,
	SRCTYPE_DOMAIN,
	SRCTYPE_EXTENSION,   /* a member of an extension, of whatever kind */
	SRCTYPE_OTHER,       /* range, multirange, a table's row type, base, pseudo */
} srctype_kind;

typedef struct srctype_label {
	uint32_t oid;        /* pg_enum's oid: stable across RENAME VALUE; 0 when unknown */
	char *label;
} srctype_label;

typedef struct srctype_attr {
	int attnum;
	char *name;
	char *type_sql;      /* format_type() */
	uint32_t type_oid;
	uint32_t type_ref;   /* the user-defined type it names, 0 for pg_catalog's */
	srctype_collation *collation; /* NULL when not collatable */
} srctype_attr;

typedef struct srctype {
	uint32_t oid;
	char *schema;
	char *name;
	srctype_kind kind;
	char *kind_name;     /* the source's word: "enum", "range", "row", ... */
	char *extension;     /* SRCTYPE_EXTENSION: its extension's name, schema, version */
	char *extension_schema;
	char *extension_version;
	int nlabels;
	srctype_label *labels;   /* SRCTYPE_ENUM, in sort order */
	int nattrs;
	srctype_attr *attrs;     /* SRCTYPE_COMPOSITE, by attnum */
	char *base_type;         /* SRCTYPE_DOMAIN: format_type() of its base type */
	uint32_t base_type_oid;
	uint32_t base_type_ref;
	srctype_collation *collation; /* SRCTYPE_DOMAIN, NULL when none */
	bool not_null;
	int nconstraints;
	char **constraints;      /* SRCTYPE_DOMAIN: CHECK constraint names */
	int ndeps;
	uint32_t *deps;          /* user-defined types needed first */
} srctype;

typedef struct srctype_list {
	int n;
	srctype *types;
} srctype_list;

/* ---- JSON ---- */

/* Reads one collation definition; JSON null gives *out NULL. */
int srctype_collation_from_json(const json_t *o, srctype_collation **out, tm_error *err);
json_t *srctype_collation_to_json(const srctype_collation *c); /* JSON null for NULL */
srctype_collation *srctype_collation_copy(const srctype_collation *c);
void srctype_collation_free(srctype_collation *c);

int srctype_from_json(const json_t *o, srctype *out, tm_error *err);
json_t *srctype_to_json(const srctype *t);
void srctype_copy(srctype *dst, const srctype *src);
void srctype_clear(srctype *t);

/* Appends the types of a JSON array (JSON null or absent: none); a type
 * already in l (same oid) is skipped. Returns 0, or -1 with err set. */
int srctype_list_from_json(srctype_list *l, const json_t *arr, tm_error *err);
json_t *srctype_list_to_json(const srctype_list *l);
void srctype_list_copy(srctype_list *dst, const srctype_list *src);
void srctype_list_clear(srctype_list *l);
const srctype *srctype_list_find(const srctype_list *l, uint32_t oid);

/* Orders l so that each type comes after those of l it depends on
 * (dependencies outside l are the caller's). -1 with err on a cycle. */
int srctype_list_order(srctype_list *l, tm_error *err);

/* Whether a collation's strings are safe to write as literals of CREATE
 * COLLATION (letters, digits and _ - . @ = ; , only). */
bool srctype_collation_wellformed(const srctype_collation *c);

/* ---- steps from one definition to the next ---- */

typedef enum srctype_step_kind {
	SRCTYPE_RENAME_VALUE,  /* name -> new_name */
	SRCTYPE_ADD_VALUE,     /* new_name, BEFORE/AFTER name (name NULL: at the end) */
	SRCTYPE_RENAME_ATTR,   /* name -> new_name */
	SRCTYPE_DROP_ATTR,     /* name */
	SRCTYPE_ADD_ATTR,      /* attr (of the new definition) */
	SRCTYPE_ALTER_ATTR,    /* attr: its new type */
} srctype_step_kind;

typedef struct srctype_step {
	srctype_step_kind kind;
	char *name;            /* owned */
	char *new_name;        /* owned */
	bool before;           /* ADD_VALUE: BEFORE name, else AFTER */
	const srctype_attr *attr; /* borrowed from the new definition */
} srctype_step;

typedef struct srctype_steps {
	int n;
	srctype_step *steps;   /* owned, in the order to run them */
} srctype_steps;

void srctype_steps_free(srctype_steps *s);

/*
 * The steps that turn enum `from` into enum `to`. Labels are matched by oid
 * when both sides have oids (a RENAME VALUE keeps it), else by text. Values
 * are never removed nor reordered by PostgreSQL: a `from` label missing in
 * `to`, or out of order, is an error (err says which). A rename onto a name
 * another label still has goes through a temporary name.
 */
int srctype_enum_steps(const srctype *from, const srctype *to, srctype_steps *out, tm_error *err);

/*
 * The steps that turn composite `from` into composite `to`, attributes
 * matched by attnum: renames first (through temporary names when two
 * swap), then drops, adds, and type changes (same_type tells whether an
 * attribute's type is unchanged: a type_ref equal to the other's, or the
 * same format_type()).
 */
int srctype_composite_steps(const srctype *from, const srctype *to, srctype_steps *out,
                            tm_error *err);

/* Whether two attributes have the same type (see srctype_composite_steps). */
bool srctype_attr_same_type(const srctype_attr *a, const srctype_attr *b);

#endif
