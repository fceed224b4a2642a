/* layers: base core store driver engine sched */
/* fuzz_hostlist.c - libFuzzer target for Slurm hostlists (sched/hostlist.h). The input is read
 * twice: as one hostlist expression (hostlist_expand), and as literal names one per line
 * (hostlist_push, refusals allowed). Properties checked (a failure aborts): at most
 * HOSTLIST_MAX_NAMES names of 1..HOSTLIST_MAX_NAME bytes without separators, brackets or control
 * bytes; a refused expression leaves the list as it was; and the round trip: the compressed
 * form of any accepted list of at most ROUND_TRIP_MAX names expands to exactly its distinct
 * names, each once, and compresses again to the same string. Seeds:
 * tests/fuzz/corpus/fuzz_hostlist/ (hostlists of tests/data/slurm and the unit tests). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "sched/hostlist.h"

#include "base/banned.h"

#define CHECK(c)                                                                               \
	do {                                                                                   \
		if (!(c)) {                                                                    \
			fprintf(stderr, "fuzz_hostlist: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                               \
		}                                                                              \
	} while (0)

/* Round trips sort the names four times; past this many the fuzzer would spend its time there. */
#define ROUND_TRIP_MAX 4096

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct names of hl, sorted by strcmp; returns their count (the array is malloc'd). */
static size_t distinct(const struct hostlist *hl, const char ***out)
{
	const char **v = malloc((hl->n ? hl->n : 1) * sizeof(*v));
	size_t n = 0;
	CHECK(v != NULL);
	for (size_t i = 0; i < hl->n; i++)
		v[i] = hostlist_name(hl, i);
	qsort(v, hl->n, sizeof(*v), cmp_str);
	for (size_t i = 0; i < hl->n; i++)
		if (n == 0 || strcmp(v[n - 1], v[i]) != 0)
			v[n++] = v[i];
	*out = v;
	return n;
}

static void check_names(const struct hostlist *hl)
{
	CHECK(hl->n <= HOSTLIST_MAX_NAMES);
	for (size_t i = 0; i < hl->n; i++) {
		const char *s = hostlist_name(hl, i);
		size_t l = strlen(s);
		CHECK(l >= 1 && l <= HOSTLIST_MAX_NAME);
		for (size_t k = 0; k < l; k++) {
			unsigned char c = (unsigned char)s[k];
			CHECK(c >= 0x20 && c != 0x7f && c != ',' && c != ' ' && c != '[' &&
			      c != ']');
		}
	}
}

static void round_trip(const struct hostlist *hl)
{
	struct hostlist back;
	struct buf b, b2;
	const char **want, **got;
	char err[256];
	size_t nw, ng;

	hostlist_init(&back);
	buf_init(&b, 0);
	buf_init(&b2, 0);
	CHECK(hostlist_compress(hl, &b, err, sizeof(err)) == 0);
	CHECK(hostlist_expand(&back, b.data, b.len, err, sizeof(err)) == 0);
	check_names(&back);
	nw = distinct(hl, &want);
	ng = distinct(&back, &got);
	CHECK(back.n == nw); /* each distinct name once */
	CHECK(ng == nw);
	for (size_t i = 0; i < nw; i++)
		CHECK(strcmp(want[i], got[i]) == 0);
	CHECK(hostlist_compress(&back, &b2, err, sizeof(err)) == 0);
	CHECK(b.len == b2.len && memcmp(b.data, b2.data, b.len) == 0);
	free(want);
	free(got);
	buf_release(&b);
	buf_release(&b2);
	hostlist_release(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct hostlist hl;
	char err[256];

	hostlist_init(&hl);
	CHECK(hostlist_push(&hl, "keep", 4, err, sizeof(err)) == 0);
	if (hostlist_expand(&hl, s, size, err, sizeof(err)) != 0) {
		CHECK(hl.n == 1 && strcmp(hostlist_name(&hl, 0), "keep") == 0);
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
	} else {
		check_names(&hl);
		if (hl.n <= ROUND_TRIP_MAX) /* big lists: test_slurm_parse does n[0-65535] */
			round_trip(&hl);
	}
	hostlist_release(&hl);

	for (size_t i = 0; i < size;) {
		size_t e = i;
		while (e < size && s[e] != '\n')
			e++;
		size_t n0 = hl.n;
		if (hostlist_push(&hl, s + i, e - i, err, sizeof(err)) != 0)
			CHECK(hl.n == n0);
		i = e + 1;
	}
	check_names(&hl);
	round_trip(&hl);
	hostlist_release(&hl);
	return 0;
}
