#include "tm_error.h"

#include <stdarg.h>
#include <stdio.h>

int
tm_error_set(tm_error *err, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return -1;
}
