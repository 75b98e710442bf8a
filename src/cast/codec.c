#include "codec.h"

#include <stdio.h>
#include <string.h>

void
codec_append_key_text(strbuf *sql, const char *alias, const char *column)
{
	strbuf_append(sql, "concat(");
	if (alias != NULL)
		strbuf_appendf(sql, "%s.", alias);
	strbuf_append_ident(sql, column);
	strbuf_appendc(sql, ')');
}

void
codec_append_value_text(strbuf *sql, const char *expr)
{
	strbuf_appendf(sql, "CASE WHEN (%s) IS NULL THEN NULL ELSE concat(%s) END", expr, expr);
}

void
codec_append_key_operand(strbuf *sql, const char *alias, const char *column, const char *type)
{
	if (alias != NULL)
		strbuf_appendf(sql, "%s.", alias);
	strbuf_append_ident(sql, column);
	if (type != NULL)
		strbuf_appendf(sql, "::%s", type);
}

void
codec_append_key_param(strbuf *sql, int n, const char *type)
{
	strbuf_appendf(sql, "$%d", n);
	if (type != NULL)
		strbuf_appendf(sql, "::%s", type);
}

/* ---- keys ---- */

void
codec_key_encode(strbuf *sb, int n, const char *const *vals, const size_t *lens)
{
	for (int i = 0; i < n; i++) {
		uint32_t len = (uint32_t) lens[i];

		strbuf_appendn(sb, (const char *) &len, sizeof len);
		strbuf_appendn(sb, vals[i], lens[i]);
	}
}

bool
codec_key_part(const char *key, size_t len, int i, const char **val, size_t *vlen)
{
	size_t off = 0;

	for (int k = 0;; k++) {
		uint32_t n;

		if (len - off < sizeof n)
			return false;
		memcpy(&n, key + off, sizeof n);
		off += sizeof n;
		if (n > len - off)
			return false;
		if (k == i) {
			*val = key + off;
			*vlen = n;
			return true;
		}
		off += n;
	}
}

bool
codec_key_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

uint64_t
codec_key_hash(const char *key, size_t len)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char) key[i]) * 1099511628211ULL;
	return h;
}

/* ---- ordering ---- */

/*
 * Per column: its kind of type, the type, and what decides the order of its
 * values beyond the type:
 *   "builtin <type> <collation>"  a type of pg_catalog (arrays of them too);
 *       smallint, integer, bigint and numeric are one type "number" here,
 *       text and character varying one type "text": they order alike
 *   "enum <type> <labels in order>"
 *   "ext <extension> <version> <type> <collation>"  a base type of an
 *       extension (citext)
 *   "other <type>"  anything else (composite types, ranges and arrays of
 *       user types, a domain over a domain): never trusted
 * A domain is described by its base type: it orders as its base type does.
 * The collation: "-" when the type has none, "C" for C and POSIX (byte
 * order), else the provider, locale, determinism and the version its
 * library reports now; the database's default collation is spelled out.
 * Catalog columns that changed names between major versions are read
 * through to_jsonb, so that the SQL runs on PostgreSQL 15 to 19; a
 * difference in spelling only makes two sides differ, the safe direction.
 */
const char *const CODEC_ORDER_SQL =
	"WITH rel AS (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
	"    WHERE n.nspname = $1 AND c.relname = $2),"
	" col AS (SELECT a.attname, a.attcollation,"
	"    CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END AS base"
	"    FROM rel JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum > 0"
	"     AND NOT a.attisdropped JOIN pg_type t ON t.oid = a.atttypid),"
	" coll AS (SELECT col.attname, CASE"
	"    WHEN col.attcollation = 0 THEN '-'"
	"    WHEN co.collname IN ('C', 'POSIX') AND co.collnamespace = 'pg_catalog'::regnamespace"
	"    THEN 'C'"
	"    WHEN col.attcollation = 100 THEN (SELECT CASE WHEN d.datcollate IN ('C', 'POSIX')"
	"        AND coalesce(j->>'datlocprovider', 'c') = 'c' THEN 'C' ELSE concat_ws(':', 'db',"
	"        j->>'datlocprovider', d.datcollate, d.datctype,"
	"        coalesce(j->>'daticulocale', j->>'datlocale'), j->>'daticurules',"
	"        pg_database_collation_actual_version(d.oid)) END"
	"      FROM pg_database d, to_jsonb(d) j WHERE d.datname = current_database())"
	"    ELSE (SELECT concat_ws(':', 'coll', j->>'collprovider', j->>'collisdeterministic',"
	"        j->>'collcollate', j->>'collctype', coalesce(j->>'colliculocale', j->>'colllocale'),"
	"        j->>'collicurules', pg_collation_actual_version(co.oid)) FROM to_jsonb(co) j)"
	"    END AS text"
	"    FROM col LEFT JOIN pg_collation co ON co.oid = col.attcollation),"
	" typ AS (SELECT col.attname, bt.typtype, bt.typnamespace, x.extname, x.extversion,"
	"    quote_literal(CASE WHEN col.base IN ('int2'::regtype, 'int4'::regtype,"
	"      'int8'::regtype, 'numeric'::regtype) THEN 'number'"
	"      WHEN col.base IN ('text'::regtype, 'varchar'::regtype) THEN 'text'"
	"      ELSE format_type(col.base, NULL) END) AS name, col.base"
	"    FROM col JOIN pg_type bt ON bt.oid = col.base"
	"    LEFT JOIN pg_depend dep ON dep.classid = 'pg_type'::regclass AND dep.objid = col.base"
	"     AND dep.refclassid = 'pg_extension'::regclass AND dep.deptype = 'e'"
	"    LEFT JOIN pg_extension x ON x.oid = dep.refobjid)"
	" SELECT typ.attname, CASE"
	"    WHEN typ.typnamespace = 'pg_catalog'::regnamespace"
	"    THEN concat_ws(' ', 'builtin', typ.name, coll.text)"
	/* an enum orders by its labels alone: its name may differ (a pipeline's
	 * --target-schema) */
	"    WHEN typ.typtype = 'e' THEN concat_ws(' ', 'enum',"
	"      (SELECT string_agg(quote_literal(e.enumlabel), ',' ORDER BY e.enumsortorder)"
	"         FROM pg_enum e WHERE e.enumtypid = typ.base))"
	"    WHEN typ.extname IS NOT NULL AND typ.typtype = 'b'"
	"    THEN concat_ws(' ', 'ext', quote_literal(typ.extname), quote_literal(typ.extversion),"
	"      typ.name, coll.text)"
	"    ELSE concat_ws(' ', 'other', typ.name) END"
	" FROM typ JOIN coll USING (attname) ORDER BY 1";

bool
codec_order_known(const char *descriptor)
{
	static const char *const known[] = {"builtin ", "enum ", "ext "};

	for (size_t i = 0; descriptor != NULL && i < sizeof known / sizeof known[0]; i++)
		if (strncmp(descriptor, known[i], strlen(known[i])) == 0)
			return true;
	return false;
}

bool
codec_order_compare(int nkeys, const char *const *keys, const char *const *source,
                    const char *const *target, char *reason, size_t size)
{
	for (int k = 0; k < nkeys; k++) {
		const char *src = source != NULL ? source[k] : NULL;
		const char *tgt = target != NULL ? target[k] : NULL;

		if (src != NULL && tgt != NULL && strcmp(src, tgt) == 0 && codec_order_known(src))
			continue;
		if (reason != NULL)
			snprintf(reason, size, "key column \"%s\" orders by %s on the source and by %s on "
			         "the target", keys[k], src ? src : "(unknown)", tgt ? tgt : "(unknown)");
		return false;
	}
	if (reason != NULL && size > 0)
		reason[0] = '\0';
	return true;
}
