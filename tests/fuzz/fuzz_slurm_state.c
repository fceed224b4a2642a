/* layers: base core store driver engine sched */
/* fuzz_slurm_state.c - libFuzzer target for Slurm node states (sched/slurm_state.h). The first
 * byte picks the source (even: sinfo, odd: scontrol); the rest goes through slurm_state_parse,
 * and, when it is a JSON object, through slurm_state_from_json with its "state" and
 * "state_flags" members. Properties checked (a failure aborts): rc is 0 exactly when unknown is
 * 0; an unknown state has jobs, is not drained and has no proven drain (it fails closed);
 * proven and open flags never overlap and stay within SLURM_NF_ALL; drained implies a proven
 * drain and no jobs; a text holding a NUL is unknown; text and slurm_state_format's output are
 * NUL-terminated in their buffers.
 * Seeds: tests/fuzz/corpus/fuzz_slurm_state/ (the states of tests/data/slurm). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "sched/slurm_state.h"

#include "base/banned.h"

#define CHECK(c)                                                                                  \
	do {                                                                                      \
		if (!(c)) {                                                                       \
			fprintf(stderr, "fuzz_slurm_state: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                                  \
		}                                                                                 \
	} while (0)

static void check(const struct slurm_state *st, int rc)
{
	char f[48];
	CHECK(st->unknown == 0 || st->unknown == 1);
	CHECK((rc == 0) == (st->unknown == 0));
	CHECK((st->flags & st->unsure) == 0);
	CHECK((st->flags & ~SLURM_NF_ALL) == 0 && (st->unsure & ~SLURM_NF_ALL) == 0);
	CHECK(st->base >= SLURM_BASE_NONE && st->base <= SLURM_BASE_FUTURE);
	CHECK(memchr(st->text, '\0', sizeof(st->text)) != NULL);
	if (st->unknown) {
		CHECK(st->jobs == SLURM_JOBS_UNSURE);
		CHECK(slurm_state_has_jobs(st) == 1);
		CHECK(slurm_state_drained(st) == 0);
		CHECK(slurm_state_drain_requested(st) == 0);
		CHECK(slurm_state_drain_unsure(st) == 1);
	}
	if (slurm_state_drained(st))
		CHECK(slurm_state_drain_requested(st) && !slurm_state_has_jobs(st));
	if (st->jobs == SLURM_JOBS_SOME)
		CHECK(slurm_state_has_jobs(st));
	slurm_state_format(st, f, sizeof(f));
	CHECK(memchr(f, '\0', sizeof(f)) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct slurm_state st;
	char err[256];
	json_t *v = NULL;
	int rc;

	if (size == 0)
		return 0;
	enum slurm_state_src src = (data[0] & 1) ? SLURM_SRC_SCONTROL : SLURM_SRC_SINFO;
	const char *s = (const char *)data + 1;
	rc = slurm_state_parse(s, size - 1, src, &st, err, sizeof(err));
	check(&st, rc);
	if (memchr(s, '\0', size - 1) != NULL) /* no word or flag holds a NUL */
		CHECK(st.unknown == 1);
	if (rc != 0)
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);

	if (jsonx_parse(s, size - 1, &v, err, sizeof(err)) == 0) {
		if (json_is_object(v)) {
			rc = slurm_state_from_json(json_object_get(v, "state"),
						   json_object_get(v, "state_flags"), &st, err,
						   sizeof(err));
			check(&st, rc);
		}
		json_decref(v);
	}
	return 0;
}
