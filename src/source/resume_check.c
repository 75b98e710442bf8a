#include "resume_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

resume_verdict
resume_check(const resume_facts *f)
{
	if (!f->slot_exists)
		return RESUME_SLOT_MISSING;
	if (f->slot_invalidated)
		return RESUME_SLOT_INVALIDATED;
	if (f->target == LSN_INVALID)
		return RESUME_FRESH;
	if (f->stored_tli != 0 && f->stored_tli != f->source_tli &&
	    (!f->stored_in_history || f->target > f->fork))
		return RESUME_FORKED;
	if (f->target > f->source_end)
		return RESUME_SOURCE_BEHIND;
	if (f->target < f->confirmed)
		return RESUME_TARGET_BEHIND;
	return RESUME_OK;
}

const char *
resume_verdict_name(resume_verdict v)
{
	switch (v) {
	case RESUME_OK: return "ok";
	case RESUME_FRESH: return "fresh";
	case RESUME_SLOT_MISSING: return "slot_missing";
	case RESUME_SLOT_INVALIDATED: return "slot_invalidated";
	case RESUME_FORKED: return "source_forked";
	case RESUME_SOURCE_BEHIND: return "source_behind";
	case RESUME_TARGET_BEHIND: return "target_behind";
	}
	return "?";
}

upgrade_verdict
resume_upgrade_check(const upgrade_facts *f, char *why, size_t size)
{
	if (!f->same_database) {
		snprintf(why, size, "its database's oid is not the one recorded");
		return UPGRADE_NOT_SAME;
	}
	if (f->tables == 0) {
		snprintf(why, size, "the pipeline has no table whose oid could be compared");
		return UPGRADE_NOT_SAME;
	}
	if (f->tables_same < f->tables) {
		snprintf(why, size, "%d of its %d replicated tables have other oids or names there",
		         f->tables - f->tables_same, f->tables);
		return UPGRADE_NOT_SAME;
	}
	if (!f->slot_exists || f->slot_invalidated)
		return UPGRADE_SLOT_LOST;
	if (!f->slot_ours) {
		snprintf(why, size, "its slot of that name is not a pgoutput slot of the database");
		return UPGRADE_NOT_SAME;
	}
	/* pg_upgrade makes the slot at the new WAL's start, past everything
	 * the old server wrote, and so past the target's position */
	if (f->target != LSN_INVALID && f->confirmed <= f->target) {
		snprintf(why, size, "its slot's position is not past the target's, as a slot "
		                    "pg_upgrade carried over would be");
		return UPGRADE_NOT_SAME;
	}
	return UPGRADE_SLOT_KEPT;
}

/* "X/X" of exactly n bytes at p. */
static bool
parse_lsn_n(const char *p, size_t n, tm_lsn *out)
{
	char buf[LSN_TEXT_MAX];

	if (n == 0 || n >= sizeof buf)
		return false;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return lsn_parse(buf, out);
}

/* One line: "<tli>\t<lsn>\t<reason>" (PostgreSQL writes tabs; any blank
 * separates here). *tli 0 for a blank or comment line. */
static int
parse_line(const char *line, size_t len, uint32_t *tli, tm_lsn *lsn)
{
	size_t i = 0, start;
	unsigned long v = 0;

	*tli = 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	if (i == len || line[i] == '#')
		return 0;
	start = i;
	while (i < len && line[i] >= '0' && line[i] <= '9' && v <= UINT32_MAX)
		v = v * 10 + (unsigned long) (line[i++] - '0');
	if (i == start || v == 0 || v > UINT32_MAX || i == len || (line[i] != ' ' && line[i] != '\t'))
		return -1;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	start = i;
	while (i < len && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
		i++;
	if (!parse_lsn_n(line + start, i - start, lsn))
		return -1;
	*tli = (uint32_t) v;
	return 0;
}

int
resume_history_end(const char *text, size_t len, uint32_t tli, bool *found, tm_lsn *end,
                   tm_error *err)
{
	size_t off = 0;
	int lineno = 0;

	*found = false;
	while (off < len) {
		const char *line = text + off;
		const char *nl = memchr(line, '\n', len - off);
		size_t n = nl ? (size_t) (nl - line) : len - off;
		uint32_t t;
		tm_lsn lsn = LSN_INVALID;

		lineno++;
		if (memchr(line, '\0', n) != NULL || parse_line(line, n, &t, &lsn) != 0)
			return tm_error_set(err, "timeline history: line %d is not \"timeline position "
			                    "reason\"", lineno);
		if (t == tli && !*found) {
			*found = true;
			*end = lsn;
		}
		off += n + (nl ? 1 : 0);
	}
	return 0;
}
