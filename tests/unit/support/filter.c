/* filter.c - linked into every unit-test binary: FP_TEST_FILTER=PATTERN runs only the test
 * cases whose name matches PATTERN (cmocka's glob: * and ?), FP_TEST_SKIP=PATTERN leaves those
 * out (cmocka_set_test_filter / cmocka_set_skip_filter, cmocka 1.1.5+). Set before main through
 * a constructor, so no suite's main has to know. `make unit T=store F='test_txn*'`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

__attribute__((constructor)) static void fp_test_filter(void)
{
	const char *f = getenv("FP_TEST_FILTER"), *s = getenv("FP_TEST_SKIP");
	if (f && *f)
		cmocka_set_test_filter(f);
	if (s && *s)
		cmocka_set_skip_filter(s);
}
