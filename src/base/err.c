/* err.c - names, messages and HTTP statuses of enum fp_err (see err.h). */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

const char *fp_err_name(int rc)
{
	switch (rc) {
#define X(name, val, http, msg) \
	case val: return #name;
		FP_ERR_MAP(X)
#undef X
	}
	return "FP_UNKNOWN";
}

const char *fp_err_msg(int rc)
{
	switch (rc) {
#define X(name, val, http, msg) \
	case val: return msg;
		FP_ERR_MAP(X)
#undef X
	}
	return "unknown error";
}

int fp_err_http(int rc)
{
	switch (rc) {
#define X(name, val, http, msg) \
	case val: return http;
		FP_ERR_MAP(X)
#undef X
	}
	return 500;
}

int fp_errf(int rc, char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

void fp_bug(const char *file, int line, const char *cond)
{
	fprintf(stderr, "BUG: %s:%d: %s\n", file, line, cond);
	abort();
}
