/* layers: base core */
/* fuzz_node_json.c - libFuzzer target for the node and operation codecs (core/codec.c), the
 * parsers of API bodies and stored documents. Bytes go through jsonx_parse, then
 * node_from_enroll_json, node_from_json and operation_from_json. Whatever decodes must encode,
 * decode again and encode to the same document (STORE mode is a fixed point after one pass),
 * an enrolled node must be storable, PUBLIC mode must be STORE mode without the BMC password
 * and with resourceVersion, and node_dup/operation_dup must encode like the original. A broken property
 * aborts, which libFuzzer reports as a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "core/codec.h"
#include "core/model.h"

#include "base/banned.h"

static void die_doc(const char *what, const json_t *a, const json_t *b, const char *err)
{
	char *sa = a ? jsonx_dumps(a) : NULL, *sb = b ? jsonx_dumps(b) : NULL;
	fprintf(stderr, "fuzz_node_json: %s\n  err: %s\n  first: %s\n  second: %s\n", what,
		err ? err : "", sa ? sa : "-", sb ? sb : "-");
	free(sa);
	free(sb);
	abort();
}

/* n decoded from somewhere: its STORE encoding must decode and re-encode identically. */
static void check_node(const struct node *n)
{
	char err[512];
	json_t *j1 = node_to_json(n, NODE_JSON_STORE);
	struct node *n2 = NULL;
	if (node_from_json(j1, 3, &n2, err, sizeof(err)) < 0)
		die_doc("stored encoding of a decoded node does not decode", j1, NULL, err);
	json_t *j2 = node_to_json(n2, NODE_JSON_STORE);
	if (!json_equal(j1, j2))
		die_doc("store round trip is not a fixed point", j1, j2, NULL);
	if (jsonx_path(j1, "metadata.resourceVersion"))
		die_doc("STORE mode carries resourceVersion", j1, NULL, NULL);

	struct node *d = node_dup(n2);
	json_t *j3 = node_to_json(d, NODE_JSON_STORE);
	if (!json_equal(j2, j3))
		die_doc("node_dup encodes differently", j2, j3, NULL);

	d->resource_version = 77;
	json_t *pub = node_to_json(d, NODE_JSON_PUBLIC);
	if (jsonx_path(pub, "spec.bmc.password"))
		die_doc("PUBLIC mode carries spec.bmc.password", pub, NULL, NULL);
	const char *rv = jsonx_str(pub, "metadata.resourceVersion");
	if (!rv || strcmp(rv, "77") != 0)
		die_doc("PUBLIC mode lacks resourceVersion \"77\"", pub, NULL, NULL);
	/* PUBLIC is exactly STORE without spec.bmc.password, plus resourceVersion: the secret
	 * cannot be anywhere else (a search for the password text would be fooled by inputs that
	 * copy it into other fields) */
	json_t *st = node_to_json(d, NODE_JSON_STORE);
	json_t *pubc = json_deep_copy(pub);
	json_object_del(jsonx_path(st, "spec.bmc"), "password");
	json_object_del(jsonx_path(st, "spec.bmc"), "password_file");
	json_object_del(jsonx_path(st, "spec.bmc"), "password_sealed");
	json_object_del(jsonx_path(pubc, "metadata"), "resourceVersion");
	if (!json_equal(st, pubc))
		die_doc("PUBLIC differs from STORE by more than password and resourceVersion", st,
			pubc, NULL);
	json_decref(pubc);
	json_decref(st);

	/* the model functions on whatever decoded: phase check, holds, schedulability */
	for (int to = 0; to < PHASE__COUNT; to++) {
		int rc = node_phase_check(d->phase, (enum node_phase)to, err, sizeof(err));
		if ((to == (int)d->phase || d->phase == PHASE_RETIRED) ? rc != FP_ESTATE
		    : to == PHASE_RETIRING                             ? rc != 0
								       : rc != 0 && rc != FP_ESTATE)
			die_doc("phase check disagrees with DESIGN.md", j1, NULL, err);
	}
	size_t want = d->nholds - (node_hold_find(d, "fuzz") ? 1 : 0);
	int rc = node_hold_add(d, "fuzz", "fuzzing", 1, 0);
	if (rc == 0) {
		if (node_schedulable(d))
			die_doc("schedulable with a hold", j1, NULL, NULL);
		if (node_hold_release(d, "fuzz") != 0 || node_hold_find(d, "fuzz") ||
		    d->nholds != want)
			die_doc("own hold not released cleanly", j1, NULL, NULL);
	} else if (rc != FP_ETOOBIG || d->nholds != NODE_MAX_HOLDS) {
		die_doc("hold refused for no reason", j1, NULL, NULL);
	}

	json_decref(pub);
	json_decref(j3);
	node_free(d);
	json_decref(j2);
	node_free(n2);
	json_decref(j1);
}

static void check_operation(const struct operation *op)
{
	char err[512];
	json_t *j1 = operation_to_json(op, 0);
	struct operation *op2 = NULL;
	if (operation_from_json(j1, 5, &op2, err, sizeof(err)) < 0)
		die_doc("encoding of a decoded operation does not decode", j1, NULL, err);
	json_t *j2 = operation_to_json(op2, 0);
	if (!json_equal(j1, j2))
		die_doc("operation round trip is not a fixed point", j1, j2, NULL);
	struct operation *d = operation_dup(op2);
	json_t *j3 = operation_to_json(d, 1);
	const char *rv = jsonx_str(j3, "metadata.resourceVersion");
	if (!rv || strcmp(rv, "5") != 0)
		die_doc("operation resourceVersion is not \"5\"", j3, NULL, NULL);
	json_decref(j3);
	operation_free(d);
	json_decref(j2);
	operation_free(op2);
	json_decref(j1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = NULL;
	char err[512];
	if (jsonx_parse((const char *)data, size, &doc, err, sizeof(err)) < 0) {
		if (doc)
			abort();
		return 0;
	}
	struct node *n = NULL;
	if (node_from_enroll_json(doc, &n, err, sizeof(err)) == 0) {
		if (!n || n->phase != PHASE_ENROLLED || n->nholds || !n->bmc.driver)
			abort();
		check_node(n);
		node_free(n);
	} else if (n) {
		abort();
	}
	n = NULL;
	if (node_from_json(doc, 9, &n, err, sizeof(err)) == 0) {
		if (!n || n->resource_version != 9)
			abort();
		check_node(n);
		node_free(n);
	} else if (n) {
		abort();
	}
	struct operation *op = NULL;
	if (operation_from_json(doc, 9, &op, err, sizeof(err)) == 0) {
		if (!op || op->step > op->nsteps || op->nsteps > OP_MAX_STEPS)
			abort();
		check_operation(op);
		operation_free(op);
	} else if (op) {
		abort();
	}
	json_decref(doc);
	return 0;
}
