/*
 * ddl_track.h: what a captured schema change means for a replicated table,
 * and what the target must do about it. Pure: definitions in, a plan out.
 *
 * The captured definition (ddl_event.h) is the authority on the result.
 * Columns are matched by attnum, which survives renames: the same attnum
 * with another name is a rename (never a drop and an add), a new attnum is
 * an added column, a missing one was dropped, another type is a type
 * change. Type changes are classified by the casting matrix (cast.h):
 * widening changes are always followed; for the others the policy decides:
 *   widen       the target takes a type that holds old and new values
 *   follow      the target takes the source's type, with a cast
 *   quarantine  the target keeps its type; values that do not fit are
 *               quarantined instead of applied
 *   stop        replication stops before the change, to be resumed with
 *               another policy
 * When the source rewrote the table (its existing values may have changed
 * in a way no row change shows) and the change was not an exact widening,
 * the plan asks for the table to be copied again.
 *
 * How the values were converted matters beyond the types (ddl_using.h):
 *   - USING with an expression (amount * 100, also to the same type): the
 *     source computed new values; the table is copied again, whatever the
 *     matrix says of the types. USING c::type is the plain conversion.
 *   - a type change the statement text does not show (DO block, function,
 *     a parent's ALTER) in a command that rewrote the table: copied again.
 *   - a conversion that depends on session settings (cast_session_needs:
 *     timestamp -> timestamptz reads TimeZone, a date as text DateStyle,
 *     ...): the target's ALTER runs under the source session's captured
 *     values (action.settings, see ddl_track_settings) when it is the
 *     source's own conversion (the target column had the source's old
 *     type and takes its new one) and every setting it needs was captured;
 *     otherwise, when the source rewrote the table, it is copied again.
 * Under widen, a non-widening change whose new type the common type would
 * not hold faithfully (cast_faithful: json -> jsonb, text -> an enum or a
 * domain, varchar -> citext, text -> integer) makes the target take the
 * source's new type (its target_type) rather than the common type: the
 * common type would keep the values' text but not their meaning.
 * An ALTER_TYPE in a plan that copies the table again is `recopied`: when
 * the target's rows refuse the conversion (the source computed the new
 * values with an expression the cast does not reproduce), the target
 * table is emptied and altered, and the copy fills it.
 *
 * Types and collations: a column whose type keeps its oid but not its name
 * (ALTER TYPE ... RENAME TO / SET SCHEMA) did not change: the target's type
 * follows the source's (typesync.h). A column's collation change is
 * followed (ALTER COLUMN ... TYPE ... COLLATE). Generated columns (never
 * sent by the stream, computed by the target): added with their
 * expression (re-rendered by ddl_parse_generation_expr; one that is
 * refused is left out, and the caller says why), dropped with the source
 * whatever drop_columns says (they hold nothing of their own), dropped and
 * added again when their expression or type changes, and made ordinary
 * columns by DROP EXPRESSION.
 */
#ifndef TIDEMARK_DDL_TRACK_H
#define TIDEMARK_DDL_TRACK_H

#include <stdbool.h>

#include "ddl_event.h"
#include "ddl_using.h"
#include "strbuf.h"
#include "tabledef.h"
#include "tm_error.h"

typedef enum ddl_policy {
	DDL_POLICY_WIDEN,
	DDL_POLICY_FOLLOW,
	DDL_POLICY_QUARANTINE,
	DDL_POLICY_STOP,
} ddl_policy;

int ddl_policy_parse(const char *text, ddl_policy *out);
const char *ddl_policy_name(ddl_policy p);

/* The target table as it is now. */
typedef struct ddl_track_target {
	int ncols;
	const char *const *names;   /* borrowed */
	const char *const *types;   /* format_type() spellings */
} ddl_track_target;

/* The DDL session's settings as the capture recorded them (ddl_event.h),
 * borrowed; NULL: not recorded. */
typedef struct ddl_track_session {
	const char *timezone;
	const char *datestyle;
	const char *intervalstyle;
	const char *float_digits;
	const char *bytea_output;
} ddl_track_session;

typedef struct ddl_track_input {
	const tabledef *old;        /* the table's current version (source types) */
	const ddl_event_table *now; /* its definition after the DDL */
	ddl_track_target target;
	ddl_policy policy;
	bool rewritten;             /* the source rewrote the table in this transaction */
	bool drop_columns;          /* drop columns dropped on the source (default: keep) */
	/* How the statement text says the columns were converted; NULL when
	 * there is no text: every column UNKNOWN. Borrowed. */
	const ddl_using_list *using;
	bool converted;             /* the source rewrote the table in this very command
	                             * to convert column values (table_rewrite reason 4) */
	ddl_track_session session;  /* the DDL session's settings, as captured */
} ddl_track_input;

typedef enum ddl_action_kind {
	DDL_ACT_RENAME_TABLE,    /* name: the new table name */
	DDL_ACT_SET_SCHEMA,      /* name: the new schema */
	DDL_ACT_RENAME_COLUMN,   /* column -> name */
	DDL_ACT_ALTER_TYPE,      /* column: from_type -> type */
	DDL_ACT_DROP_COLUMN,     /* column: dropped on the target */
	DDL_ACT_KEEP_COLUMN,     /* column: dropped on the source, kept (no longer filled) */
	DDL_ACT_ADD_COLUMN,      /* column of type; value: what existing rows get */
	DDL_ACT_SET_NOT_NULL,
	DDL_ACT_DROP_NOT_NULL,
	DDL_ACT_SET_KEY,         /* keys */
	DDL_ACT_RESNAPSHOT,      /* copy the table again */
	DDL_ACT_ADD_GENERATED,   /* column of type, GENERATED ALWAYS AS (value) STORED;
	                          * value as ddl_parse_generation_expr wrote it */
	DDL_ACT_DROP_EXPRESSION, /* column: no longer generated, keeps its values */
	DDL_ACT_SET_COLLATION,   /* column of type: COLLATE coll_schema.coll_name
	                          * (NULL: the default) */
} ddl_action_kind;

typedef struct ddl_action {
	ddl_action_kind kind;
	char *column;            /* owned, like every string here */
	char *name;
	char *type;
	char *from_type;
	char *value;             /* ADD_COLUMN: NULL means NULL; ADD_GENERATED: the expression */
	char *coll_schema;       /* ADD_COLUMN, ADD_GENERATED, SET_COLLATION: the collation */
	char *coll_name;         /* of the column, NULL for the default */
	int nkeys;
	char **keys;
	char *why;               /* for the audit log: what and why */
	unsigned settings;       /* ALTER_TYPE: run under the source session's values of
	                          * these settings (CAST_NEEDS_*, ddl_track_settings) */
	bool recopied;           /* ALTER_TYPE: the plan copies the table again, so target
	                          * rows that refuse the conversion may be emptied */
} ddl_action;

typedef struct ddl_plan {
	int n;
	ddl_action *actions;     /* owned, in the order to run them */
	bool stop;               /* the stop policy applies: run nothing */
	char *stop_reason;       /* owned */
	char *summary;           /* owned: the classification, e.g. "rename column, alter column type" */
} ddl_plan;

/* Plans the target's side of one table's change. Returns 0, or -1 with err
 * set (e.g. a type name that does not parse). */
int ddl_track_plan(const ddl_track_input *in, ddl_plan *out, tm_error *err);
void ddl_plan_free(ddl_plan *p);

/*
 * The settings of mask (CAST_NEEDS_*) with the session's values: the GUC
 * names ("TimeZone", "DateStyle", "IntervalStyle", "extra_float_digits",
 * "bytea_output") and values, borrowed, in names[] and values[] (room for
 * 5 each). Returns their count; a setting not recorded is left out.
 */
int ddl_track_settings(const ddl_track_session *s, unsigned mask, const char **names,
                       const char **values);

/*
 * For documentation: what the widen policy does when a column's type
 * changes from `from` to `to` and the source rewrote the table (the
 * target column had `from`; every session setting captured), as one line
 * of the README's table: "| from | to | the target ... |". Runs the
 * planner itself. Returns 0, or -1 with err set.
 */
int ddl_track_widen_row(const char *from, const char *to, strbuf *out, tm_error *err);
#define DDL_TRACK_WIDEN_HEADER "| type | changed to | the target column under widen |"
#define DDL_TRACK_WIDEN_RULE "|---|---|---|"

/* A human description of an action ("rename column a to b"). */
void ddl_action_describe(const ddl_action *a, strbuf *out);

#endif
