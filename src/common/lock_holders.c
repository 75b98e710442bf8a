#include "lock_holders.h"

#include "target_ddl.h"

static bool
given(const char *s)
{
	return s != NULL && s[0] != '\0';
}

/* A prepared transaction's name as a literal of the fix. */
static void
append_gid(strbuf *out, const lock_holder *h)
{
	target_ddl_append_literal(out, given(h->gid) ? h->gid : "");
}

static void
describe_one(const lock_holder *h, strbuf *out)
{
	if (h->pid == 0) {
		strbuf_append(out, "prepared transaction ");
		append_gid(out, h);
		strbuf_append(out, " (prepared");
		if (given(h->since))
			strbuf_appendf(out, " at %s", h->since);
		if (given(h->role))
			strbuf_appendf(out, " by role %s", h->role);
		strbuf_appendc(out, ')');
		return;
	}
	strbuf_appendf(out, "pid %d (", h->pid);
	if (given(h->role))
		strbuf_appendf(out, "role %s, ", h->role);
	if (given(h->application))
		strbuf_appendf(out, "application \"%s\", ", h->application);
	strbuf_append(out, given(h->state) ? h->state : "state unknown");
	if (given(h->since))
		strbuf_appendf(out, ", in its transaction since %s", h->since);
	if (h->waiting)
		strbuf_append(out, ", itself waiting for the lock, ahead of tidemark");
	strbuf_appendc(out, ')');
}

static void
append_fix(const lock_holder *h, int n, strbuf *out)
{
	bool session = false;

	strbuf_append(out, ". Fix: end ");
	strbuf_append(out, n == 1 ? "that transaction" : "those transactions");
	for (int i = 0; i < n; i++)
		if (h[i].pid == 0) {
			strbuf_append(out, "; COMMIT PREPARED ");
			append_gid(out, &h[i]);
			strbuf_append(out, " or ROLLBACK PREPARED ");
			append_gid(out, &h[i]);
		} else
			session = true;
	if (session)
		strbuf_append(out, "; a session's transaction ends with its COMMIT or ROLLBACK, or "
		                   "with the session (SELECT pg_terminate_backend(pid))");
}

void
lock_holders_describe(const lock_holder *h, int n, strbuf *out)
{
	if (n <= 0) {
		strbuf_append(out, "no session holds it any longer");
		return;
	}
	for (int i = 0; i < n; i++) {
		if (i > 0)
			strbuf_append(out, "; ");
		describe_one(&h[i], out);
	}
	append_fix(h, n, out);
}
