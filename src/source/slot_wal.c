#include "slot_wal.h"

#include <string.h>

bool
slot_wal_at_risk(const slot_wal *s)
{
	if (!s->exists)
		return false;
	if (strcmp(s->status, "unreserved") == 0)
		return true;
	return s->keep > 0 && s->safe >= 0 && s->safe < s->keep / 4;
}
