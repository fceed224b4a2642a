/* layers: base core agent */
/* fuzz_deploy_doc.c - libFuzzer target for the /boot/deploy document check (agent/deploy.h):
 * an input that parses as JSON goes through deploy_doc_parse and, when accepted, through
 * deploy_meta_data. Properties checked (a failure aborts): the result is 0 or FP_EINVAL with
 * a non-empty message; an accepted document has a name, a URL, 64 lower-case hex digits,
 * sizeBytes > 0, bounded metaData/userData; the meta-data text ends with '\n' and carries
 * fleetplane-node. Seeds: tests/fuzz/corpus/fuzz_deploy_doc/ (the contract's example). */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/deploy.h"
#include "base/err.h"
#include "base/jsonx.h"

#include "base/banned.h"

#define CHECK(c)                                                                                 \
	do {                                                                                     \
		if (!(c)) {                                                                      \
			fprintf(stderr, "fuzz_deploy_doc: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = NULL;
	char err[256];
	if (jsonx_parse((const char *)data, size, &doc, err, sizeof(err)) < 0)
		return 0;
	struct deploy_doc d;
	err[0] = '\0';
	int rc = deploy_doc_parse(doc, &d, err, sizeof(err));
	CHECK(rc == 0 || rc == FP_EINVAL);
	if (rc != 0) {
		CHECK(err[0] != '\0');
		json_decref(doc);
		return 0;
	}
	CHECK(d.image_name && *d.image_name && d.image_url && *d.image_url);
	CHECK(strlen(d.sha256) == 64);
	for (int i = 0; i < 64; i++)
		CHECK(isxdigit((unsigned char)d.sha256[i]) && !isupper((unsigned char)d.sha256[i]));
	CHECK(d.size_bytes > 0);
	CHECK(d.meta_data && strlen(d.meta_data) <= DEPLOY_META_MAX);
	CHECK(!d.user_data || strlen(d.user_data) <= DEPLOY_USER_MAX);
	CHECK(!d.root_device || d.root_device[0] == '/');
	char *m = deploy_meta_data(&d, "r01n01", "http://10.77.0.1:7070", "tok");
	size_t ml = strlen(m);
	CHECK(ml > 0 && m[ml - 1] == '\n');
	CHECK(strstr(m, "fleetplane-node") != NULL);
	free(m);
	json_decref(doc);
	return 0;
}
