/* version.c - see version.h. Only this file is compiled with -DFP_COMMIT, so a new commit
 * rebuilds one object. */
#include "base/version.h"

#ifndef FP_COMMIT
#define FP_COMMIT "unknown"
#endif

const char *fp_commit(void)
{
	return FP_COMMIT[0] ? FP_COMMIT : "unknown";
}
