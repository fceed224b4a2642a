/* codec.c - strict JSON codecs for nodes and operations, name and label rules, and label
 * selectors (see codec.h). Decoders refuse unknown fields and wrong types, naming the field;
 * every string and array from outside is bounded. */
#include "core/codec.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/buf.h"
#include "base/jsonx.h"
#include "base/jsontext.h"
#include "base/timefmt.h"
#include "core/secret.h"

#define MAX_TEXT 1024 /* reasons, messages */
#define MAX_SHORT 256 /* addresses, models, owners */

int name_validate(const char *what, const char *name, char *err, size_t errlen)
{
	if (!name || !*name)
		return fp_errf(FP_EINVAL, err, errlen, "%s: must not be empty", what);
	size_t n = strlen(name);
	if (n > 63)
		return fp_errf(FP_EINVAL, err, errlen,
			       "%s: \"%.63s...\" is longer than 63 characters", what, name);
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && !((c == '-' || c == '.') && i > 0 && i < n - 1))
			return fp_errf(FP_EINVAL, err, errlen,
				       "%s: \"%s\" is not a valid name: use lower-case letters, "
				       "digits, '-' and '.', starting and ending with a letter or "
				       "digit (bad character at position %zu)",
				       what, name, i + 1);
	}
	return 0;
}

int image_name_validate(const char *name, char *err, size_t errlen)
{
	size_t len = name ? strlen(name) : 0;
	if (len == 0 || len > 63)
		return fp_errf(FP_EINVAL, err, errlen,
			       "image name \"%.80s\": expected 1 to %d characters",
			       name ? name : "", 63);
	if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
		return fp_errf(FP_EINVAL, err, errlen,
			       "image name \"%.80s\": must start with a lowercase letter or digit",
			       name);
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' ||
		      *p == '_' || *p == '-'))
			return fp_errf(FP_EINVAL, err, errlen,
				       "image name \"%.80s\": only a-z, 0-9, '.', '_' and '-' are "
				       "allowed",
				       name);
	return 0;
}

static int label_chars_ok(const char *s, int allow_slash)
{
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-' &&
		    !(allow_slash && *p == '/'))
			return 0;
	return 1;
}

int label_validate(const char *key, const char *value, char *err, size_t errlen)
{
	if (!key || !*key || strlen(key) > 63 || !label_chars_ok(key, 1))
		return fp_errf(FP_EINVAL, err, errlen,
			       "metadata.labels: key \"%.70s\" must be 1-63 characters of "
			       "[A-Za-z0-9._/-]",
			       key ? key : "");
	if (!value || strlen(value) > 63 || !label_chars_ok(value, 0))
		return fp_errf(
			FP_EINVAL, err, errlen,
			"metadata.labels.%s: value must be 0-63 characters of [A-Za-z0-9._-]", key);
	return 0;
}

/* ---- field helpers ---- */

static int opt_str(const json_t *obj, const char *key, const char *where, size_t max, char **out,
		   char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: expected a string", where, key);
	if (json_string_length(v) > max)
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: longer than %zu characters", where,
			       key, max);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: contains a NUL character", where,
			       key);
	free(*out);
	*out = xstrdup(json_string_value(v));
	return 0;
}

static int opt_time(const json_t *obj, const char *key, const char *where, int64_t *out, char *err,
		    size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	/* times before 1970 are refused: fp_time_format cannot write them back */
	int64_t t = 0;
	if (!json_is_string(v) || fp_time_parse(json_string_value(v), &t) < 0 || t < 0)
		return fp_errf(FP_EINVAL, err, errlen,
			       "%s.%s: expected an RFC 3339 UTC time like 2026-01-02T03:04:05Z",
			       where, key);
	*out = t;
	return 0;
}

static int opt_int(const json_t *obj, const char *key, const char *where, long long lo,
		   long long hi, long long *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: expected an integer", where, key);
	long long x = json_integer_value(v);
	if (x < lo || x > hi)
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: %lld is out of range %lld..%lld",
			       where, key, x, lo, hi);
	*out = x;
	return 0;
}

static int opt_obj(const json_t *obj, const char *key, const char *where, json_t **out, char *err,
		   size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: expected an object", where, key);
	*out = v;
	return 0;
}

static void put_time(json_t *obj, const char *key, int64_t t)
{
	if (!t)
		return;
	char ts[FP_TIME_LEN];
	fp_time_format(t, ts);
	json_object_set_new(obj, key, json_string(ts));
}

static void put_str(json_t *obj, const char *key, const char *s)
{
	if (s) /* lossy: a message cut mid-character by a bounded buffer must not vanish */
		json_object_set_new(obj, key, jsonx_string_lossy(s));
}

/* ---- node ---- */

static const char *const k_doc[] = {"kind", "apiVersion", "metadata", "spec", "status", NULL};
static const char *const k_meta[] = {"name",        "uid", "resourceVersion", "labels", "createdAt",
				     "annotations", NULL};
static const char *const k_spec[] = {"site", "rack",   "provider", "pool",      "bmc",      "macs",
				     "gpus", "retire", "adopt",    "provision", "hardware", NULL};
static const char *const k_provision[] = {"image",    "rootDevice",        "hostname", "ipAddress",
					  "userData", "sshAuthorizedKeys", NULL};
static const char *const k_hardware[] = {"nics", "disks", "memoryMiB", NULL};
static const char *const k_bmc[] = {"driver",        "address",      "username",        "password",
				    "password_file", "cipher_suite", "tls_verify",      "ca_file",
				    "system",        "quirks",       "password_sealed", NULL};
static const char *const k_gpus[] = {"count", "model", NULL};
static const char *const k_status[] = {"phase",
				       "phaseSince",
				       "holds",
				       "conditions",
				       "operation",
				       "lastBoot",
				       "validation",
				       "inventory",
				       "bmc",
				       "queuedOperations",
				       "servedAt",
				       "remediation",
				       "remediationHistory",
				       "workload",
				       NULL};
static const char *const k_status_bmc[] = {"quirks", NULL};
static const char *const k_hold[] = {"owner", "reason", "since", "expires", NULL};
static const char *const k_cond[] = {"type", "status", "reason", "message", "since", NULL};
static const char *const k_boot[] = {"at", "bootId", NULL};
static const char *const k_valid[] = {"at", "passed", "bootId", NULL};
static const char *const k_remed[] = {"ladder", "rung",         "code",  "gpu",      "reason",
				      "policy", "healthEvents", "since", "attempts", "rma",
				      NULL};
static const char *const k_remed_rec[] = {"code", "gpu", "rung", "result", "at", NULL};
static const char *const k_workload[] = {"scheduler", "state", "jobs", "jobsTotal", "since", NULL};

/* A required rung name at obj.key. */
static int decode_rung(const json_t *obj, const char *key, const char *where,
		       enum remediation_rung *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!json_is_string(v) || remediation_rung_parse(json_string_value(v), out) < 0)
		return fp_errf(FP_EINVAL, err, errlen,
			       "%s.%s: expected one of gpu_reset, reboot, reimage, rma", where,
			       key);
	return 0;
}

/* status.remediation (model.h struct node_remediation): ladder non-empty, distinct rungs in
 * escalation order; rung one of the ladder, or absent when every rung has been tried; code
 * required. */
static int decode_remediation(const json_t *v, struct node_remediation *r, char *err, size_t errlen)
{
	const char *w = "status.remediation";
	int rc;
	if (!json_is_object(v))
		return fp_errf(FP_EINVAL, err, errlen, "%s: expected an object", w);
	if ((rc = jsonx_check_keys(v, k_remed, w, err, errlen)) < 0)
		return rc;
	r->active = 1;
	json_t *ladder = json_object_get(v, "ladder");
	if (!json_is_array(ladder) || json_array_size(ladder) == 0 ||
	    json_array_size(ladder) > RUNG__COUNT)
		return fp_errf(FP_EINVAL, err, errlen,
			       "%s.ladder: expected an array of 1..%d rungs", w, RUNG__COUNT);
	for (size_t i = 0; i < json_array_size(ladder); i++) {
		enum remediation_rung x;
		json_t *e = json_array_get(ladder, i);
		if (!json_is_string(e) || remediation_rung_parse(json_string_value(e), &x) < 0)
			return fp_errf(
				FP_EINVAL, err, errlen,
				"%s.ladder[%zu]: expected one of gpu_reset, reboot, reimage, "
				"rma",
				w, i);
		if (i > 0 && x <= r->ladder[i - 1])
			return fp_errf(FP_EINVAL, err, errlen,
				       "%s.ladder[%zu]: rungs must be distinct and in escalation "
				       "order (gpu_reset, reboot, reimage, rma)",
				       w, i);
		r->ladder[r->nladder++] = x;
	}
	/* rung absent: every rung of the ladder has been tried (it is about to be exhausted) */
	enum remediation_rung cur = RUNG__COUNT;
	json_t *jr = json_object_get(v, "rung");
	if (jr && !json_is_null(jr) && (rc = decode_rung(v, "rung", w, &cur, err, errlen)) < 0)
		return rc;
	r->rung = r->nladder;
	for (size_t i = 0; i < r->nladder; i++)
		if (r->ladder[i] == cur)
			r->rung = i;
	if (cur != RUNG__COUNT && r->rung == r->nladder)
		return fp_errf(FP_EINVAL, err, errlen, "%s.rung: \"%s\" is not in the ladder", w,
			       remediation_rung_name(cur));
	long long attempts = 0;
	if ((rc = opt_str(v, "code", w, 64, &r->code, err, errlen)) < 0 ||
	    (rc = opt_str(v, "gpu", w, 64, &r->gpu, err, errlen)) < 0 ||
	    (rc = opt_str(v, "reason", w, MAX_TEXT, &r->reason, err, errlen)) < 0 ||
	    (rc = opt_str(v, "policy", w, 63, &r->policy, err, errlen)) < 0 ||
	    (rc = opt_str(v, "rma", w, 64, &r->rma, err, errlen)) < 0 ||
	    (rc = opt_time(v, "since", w, &r->since, err, errlen)) < 0 ||
	    (rc = opt_int(v, "attempts", w, 0, 1000, &attempts, err, errlen)) < 0)
		return rc;
	if (!r->code || !*r->code)
		return fp_errf(FP_EINVAL, err, errlen, "%s.code: required string", w);
	r->attempts = (int)attempts;
	json_t *evs = json_object_get(v, "healthEvents");
	if (evs && !json_is_null(evs)) {
		if (!json_is_array(evs) || json_array_size(evs) > REMEDIATION_MAX_EVENTS)
			return fp_errf(FP_EINVAL, err, errlen,
				       "%s.healthEvents: expected an array of at most %d names", w,
				       REMEDIATION_MAX_EVENTS);
		for (size_t i = 0; i < json_array_size(evs); i++) {
			json_t *e = json_array_get(evs, i);
			if (!json_is_string(e) || json_string_length(e) == 0 ||
			    json_string_length(e) > 128 ||
			    strlen(json_string_value(e)) != json_string_length(e))
				return fp_errf(FP_EINVAL, err, errlen,
					       "%s.healthEvents[%zu]: expected a health event name "
					       "of 1..128 characters",
					       w, i);
			r->events[r->nevents++] = xstrdup(json_string_value(e));
		}
	}
	return 0;
}

static int decode_remediation_history(const json_t *v, struct node *n, char *err, size_t errlen)
{
	if (!json_is_array(v) || json_array_size(v) > NODE_MAX_REMEDIATION_HISTORY)
		return fp_errf(FP_EINVAL, err, errlen,
			       "status.remediationHistory: expected an array of at most %d records",
			       NODE_MAX_REMEDIATION_HISTORY);
	n->remediation_history = xcalloc(json_array_size(v) + 1, sizeof(*n->remediation_history));
	for (size_t i = 0; i < json_array_size(v); i++) {
		json_t *e = json_array_get(v, i);
		char w[48];
		snprintf(w, sizeof(w), "status.remediationHistory[%zu]", i);
		struct node_remediation_record
			*r = &n->remediation_history[n->nremediation_history++];
		int rc;
		if (!json_is_object(e))
			return fp_errf(FP_EINVAL, err, errlen, "%s: expected an object", w);
		if ((rc = jsonx_check_keys(e, k_remed_rec, w, err, errlen)) < 0 ||
		    (rc = opt_str(e, "code", w, 64, &r->code, err, errlen)) < 0 ||
		    (rc = opt_str(e, "gpu", w, 64, &r->gpu, err, errlen)) < 0 ||
		    (rc = decode_rung(e, "rung", w, &r->rung, err, errlen)) < 0 ||
		    (rc = opt_str(e, "result", w, 16, &r->result, err, errlen)) < 0 ||
		    (rc = opt_time(e, "at", w, &r->at, err, errlen)) < 0)
			return rc;
		if (!r->code || !*r->code)
			return fp_errf(FP_EINVAL, err, errlen, "%s.code: required string", w);
		if (!r->result ||
		    (strcmp(r->result, "succeeded") != 0 && strcmp(r->result, "failed") != 0 &&
		     strcmp(r->result, "rma") != 0))
			return fp_errf(FP_EINVAL, err, errlen,
				       "%s.result: expected succeeded, failed or rma", w);
		if (!r->at)
			return fp_errf(FP_EINVAL, err, errlen, "%s.at: required time", w);
	}
	return 0;
}

static json_t *encode_remediation(const struct node_remediation *r)
{
	json_t *o = json_object(), *ladder = json_array(), *evs = json_array();
	for (size_t i = 0; i < r->nladder; i++)
		json_array_append_new(ladder, json_string(remediation_rung_name(r->ladder[i])));
	json_object_set_new(o, "ladder", ladder);
	if (r->rung < r->nladder)
		json_object_set_new(o, "rung",
				    json_string(remediation_rung_name(r->ladder[r->rung])));
	put_str(o, "code", r->code);
	put_str(o, "gpu", r->gpu);
	put_str(o, "reason", r->reason);
	put_str(o, "policy", r->policy);
	for (size_t i = 0; i < r->nevents; i++)
		json_array_append_new(evs, json_string(r->events[i]));
	json_object_set_new(o, "healthEvents", evs);
	put_time(o, "since", r->since);
	json_object_set_new(o, "attempts", json_integer(r->attempts));
	put_str(o, "rma", r->rma);
	return o;
}

/* A list of BMC quirk names (at most 16) into a BMC_QUIRK_* mask. */
static int decode_quirks(const json_t *v, const char *where, unsigned *out, char *err,
			 size_t errlen)
{
	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) > 16)
		return fp_errf(FP_EINVAL, err, errlen, "%s: expected an array of at most 16 names",
			       where);
	size_t i;
	json_t *q;
	json_array_foreach(v, i, q) {
		unsigned bit = 0;
		if (!json_is_string(q) || bmc_quirk_parse(json_string_value(q), &bit) < 0) {
			char names[512];
			size_t w = 0;
			for (size_t k = 0; bmc_quirk_names[k] && w < sizeof(names); k++)
				w += (size_t)snprintf(names + w, sizeof(names) - w, "%s%s",
						      k ? ", " : "", bmc_quirk_names[k]);
			return fp_errf(FP_EINVAL, err, errlen, "%s[%zu]: expected one of %s", where,
				       i, names);
		}
		*out |= bit;
	}
	return 0;
}

static json_t *encode_quirks(unsigned mask)
{
	json_t *a = json_array();
	for (unsigned bit = 1; bit; bit <<= 1)
		if ((mask & bit) && bmc_quirk_name(bit)[0])
			json_array_append_new(a, json_string(bmc_quirk_name(bit)));
	return a;
}

/* spec.bmc fields beyond the credentials: cipher_suite, tls_verify, ca_file, system, quirks. */
static int decode_bmc_extras(const json_t *bmc, struct node_bmc *b, char *err, size_t errlen)
{
	long long cs = -1;
	int rc;
	if ((rc = opt_int(bmc, "cipher_suite", "spec.bmc", 0, 17, &cs, err, errlen)) < 0)
		return rc;
	b->cipher_suite = (int)cs;
	json_t *tv = json_object_get(bmc, "tls_verify");
	if (tv && !json_is_null(tv)) {
		if (!json_is_boolean(tv))
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.tls_verify: expected true or false");
		b->tls_verify = json_is_true(tv);
	}
	if ((rc = opt_str(bmc, "ca_file", "spec.bmc", MAX_SHORT, &b->ca_file, err, errlen)) < 0 ||
	    (rc = opt_str(bmc, "system", "spec.bmc", 64, &b->system, err, errlen)) < 0)
		return rc;
	for (const char *p = b->system; p && *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.system: \"%s\" is not a Redfish resource Id "
				       "(letters, digits, '.', '_', '-')",
				       b->system);
	return decode_quirks(json_object_get(bmc, "quirks"), "spec.bmc.quirks", &b->quirks, err,
			     errlen);
}

static int is_mac(const char *s)
{
	if (strlen(s) != 17)
		return 0;
	for (int i = 0; i < 17; i++) {
		if (i % 3 == 2) {
			if (s[i] != ':')
				return 0;
		} else if (!isxdigit((unsigned char)s[i])) {
			return 0;
		}
	}
	return 1;
}

/* metadata.annotations: string values, keys 1..253 bytes without control characters, at most
 * NODE_MAX_ANNOTATIONS keys and NODE_MAX_ANNOTATION_BYTES in all (Kubernetes' limits). */
static int decode_annotations(const json_t *meta, struct node *n, char *err, size_t errlen)
{
	json_t *a;
	int rc = opt_obj(meta, "annotations", "metadata", &a, err, errlen);
	if (rc < 0 || !a || json_object_size(a) == 0)
		return rc;
	if (json_object_size(a) > NODE_MAX_ANNOTATIONS)
		return fp_errf(FP_EINVAL, err, errlen, "metadata.annotations: more than %d keys",
			       NODE_MAX_ANNOTATIONS);
	size_t total = 0;
	const char *k;
	json_t *v;
	json_object_foreach(a, k, v) {
		size_t kl = strlen(k);
		if (kl == 0 || kl > 253)
			return fp_errf(FP_EINVAL, err, errlen,
				       "metadata.annotations: a key must be 1-253 characters");
		for (size_t i = 0; i < kl; i++)
			if ((unsigned char)k[i] <= 0x20 || k[i] == 0x7f)
				return fp_errf(FP_EINVAL, err, errlen,
					       "metadata.annotations: a key must not contain "
					       "spaces or control characters");
		if (!json_is_string(v))
			return fp_errf(FP_EINVAL, err, errlen,
				       "metadata.annotations.%.64s: expected a string", k);
		total += kl + json_string_length(v);
		if (total > NODE_MAX_ANNOTATION_BYTES)
			return fp_errf(FP_EINVAL, err, errlen,
				       "metadata.annotations: more than %d bytes in all",
				       NODE_MAX_ANNOTATION_BYTES);
	}
	n->annotations = json_deep_copy(a);
	return 0;
}

static int decode_meta(const json_t *doc, struct node *n, char *err, size_t errlen)
{
	json_t *meta = json_object_get(doc, "metadata");
	if (!json_is_object(meta))
		return fp_errf(FP_EINVAL, err, errlen, "metadata: expected an object with a name");
	int rc = jsonx_check_keys(meta, k_meta, "metadata", err, errlen);
	if (rc < 0)
		return rc;
	json_t *name = json_object_get(meta, "name");
	if (!json_is_string(name))
		return fp_errf(FP_EINVAL, err, errlen, "metadata.name: required string");
	if ((rc = name_validate("metadata.name", json_string_value(name), err, errlen)) < 0)
		return rc;
	n->name = xstrdup(json_string_value(name));
	if ((rc = opt_str(meta, "uid", "metadata", 64, &n->uid, err, errlen)) < 0 ||
	    (rc = opt_time(meta, "createdAt", "metadata", &n->created_at, err, errlen)) < 0)
		return rc;
	json_t *labels;
	if ((rc = opt_obj(meta, "labels", "metadata", &labels, err, errlen)) < 0)
		return rc;
	if (labels) {
		if (json_object_size(labels) > NODE_MAX_LABELS)
			return fp_errf(FP_EINVAL, err, errlen,
				       "metadata.labels: more than %d labels", NODE_MAX_LABELS);
		const char *k;
		json_t *v;
		n->labels = xcalloc(json_object_size(labels) + 1, sizeof(*n->labels));
		json_object_foreach(labels, k, v) {
			if (!json_is_string(v))
				return fp_errf(FP_EINVAL, err, errlen,
					       "metadata.labels.%s: expected a string", k);
			if ((rc = label_validate(k, json_string_value(v), err, errlen)) < 0)
				return rc;
			n->labels[n->nlabels].key = xstrdup(k);
			n->labels[n->nlabels].value = xstrdup(json_string_value(v));
			n->nlabels++;
		}
	}
	return decode_annotations(meta, n, err, errlen);
}

/* A hostname label (RFC 1123 section 2.1: letters, digits, '-', not at either end). */
static int is_hostname(const char *s)
{
	size_t len = strlen(s);
	if (len == 0 || len > 63 || s[0] == '-' || s[len - 1] == '-')
		return 0;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-')
			return 0;
	return 1;
}

static int is_ipv4(const char *s)
{
	struct in_addr a;
	return inet_pton(AF_INET, s, &a) == 1;
}

/* spec.provision and spec.hardware, checked field by field and kept as given (see model.h). */
static int decode_provision(const json_t *spec, struct node *n, char *err, size_t errlen)
{
	json_t *p, *h;
	int rc;
	if ((rc = opt_obj(spec, "provision", "spec", &p, err, errlen)) < 0 ||
	    (rc = opt_obj(spec, "hardware", "spec", &h, err, errlen)) < 0)
		return rc;
	if (p) {
		char *img = NULL, *dev = NULL, *host = NULL, *ip = NULL, *ud = NULL;
		if ((rc = jsonx_check_keys(p, k_provision, "spec.provision", err, errlen)) < 0)
			return rc;
		rc = opt_str(p, "image", "spec.provision", 63, &img, err, errlen);
		if (rc == 0)
			rc = opt_str(p, "rootDevice", "spec.provision", 64, &dev, err, errlen);
		if (rc == 0)
			rc = opt_str(p, "hostname", "spec.provision", 63, &host, err, errlen);
		if (rc == 0)
			rc = opt_str(p, "ipAddress", "spec.provision", 15, &ip, err, errlen);
		if (rc == 0)
			rc = opt_str(p, "userData", "spec.provision", 65536, &ud, err, errlen);
		if (rc == 0 && !img)
			rc = fp_errf(FP_EINVAL, err, errlen,
				     "spec.provision.image: required (an image store name)");
		char ierr[200];
		if (rc == 0 && image_name_validate(img, ierr, sizeof(ierr)) < 0)
			rc = fp_errf(FP_EINVAL, err, errlen, "spec.provision.image: %s", ierr);
		else if (rc == 0 && dev &&
			 (strncmp(dev, "/dev/", 5) != 0 || strstr(dev, "..") || strchr(dev, ' ')))
			rc = fp_errf(FP_EINVAL, err, errlen,
				     "spec.provision.rootDevice: expected a device path like "
				     "/dev/sda");
		else if (rc == 0 && host && !is_hostname(host))
			rc = fp_errf(FP_EINVAL, err, errlen,
				     "spec.provision.hostname: expected a hostname label (letters, "
				     "digits, '-', at most 63)");
		else if (rc == 0 && ip && !is_ipv4(ip))
			rc = fp_errf(FP_EINVAL, err, errlen,
				     "spec.provision.ipAddress: expected an IPv4 address like "
				     "10.0.0.12");
		free(img);
		free(dev);
		free(host);
		free(ip);
		free(ud);
		if (rc < 0)
			return rc;
		json_t *keys = json_object_get(p, "sshAuthorizedKeys");
		if (keys && !json_is_null(keys)) {
			if (!json_is_array(keys) || json_array_size(keys) > 16)
				return fp_errf(
					FP_EINVAL, err, errlen,
					"spec.provision.sshAuthorizedKeys: expected an array "
					"of at most 16 keys");
			size_t i;
			json_t *k;
			json_array_foreach(keys, i, k) {
				const char *v = json_string_value(k);
				if (!v || !*v || strlen(v) > 1024 || strpbrk(v, "\r\n"))
					return fp_errf(
						FP_EINVAL, err, errlen,
						"spec.provision.sshAuthorizedKeys[%zu]: expected "
						"one key line of at most 1024 bytes",
						i);
			}
		}
		n->provision = json_deep_copy(p);
	}
	if (h) {
		long long v;
		if ((rc = jsonx_check_keys(h, k_hardware, "spec.hardware", err, errlen)) < 0 ||
		    (rc = opt_int(h, "nics", "spec.hardware", 0, 256, &v, err, errlen)) < 0 ||
		    (rc = opt_int(h, "disks", "spec.hardware", 0, 256, &v, err, errlen)) < 0 ||
		    (rc = opt_int(h, "memoryMiB", "spec.hardware", 0, 1LL << 32, &v, err, errlen)) <
			    0)
			return rc;
		n->hardware = json_deep_copy(h);
	}
	return 0;
}

static int decode_spec(const json_t *doc, struct node *n, char *err, size_t errlen)
{
	json_t *spec = json_object_get(doc, "spec");
	int rc;
	if (!spec || json_is_null(spec))
		goto defaults;
	if ((rc = jsonx_check_keys(spec, k_spec, "spec", err, errlen)) < 0)
		return rc;
	if ((rc = opt_str(spec, "site", "spec", 63, &n->site, err, errlen)) < 0 ||
	    (rc = opt_str(spec, "rack", "spec", 63, &n->rack, err, errlen)) < 0 ||
	    (rc = opt_str(spec, "provider", "spec", 63, &n->provider, err, errlen)) < 0 ||
	    (rc = opt_str(spec, "pool", "spec", 63, &n->pool, err, errlen)) < 0)
		return rc;
	if (n->site && (rc = name_validate("spec.site", n->site, err, errlen)) < 0)
		return rc;
	if (n->rack && (rc = name_validate("spec.rack", n->rack, err, errlen)) < 0)
		return rc;
	if (n->pool && (rc = name_validate("spec.pool", n->pool, err, errlen)) < 0)
		return rc;
	json_t *bmc, *gpus;
	if ((rc = opt_obj(spec, "bmc", "spec", &bmc, err, errlen)) < 0 ||
	    (rc = opt_obj(spec, "gpus", "spec", &gpus, err, errlen)) < 0)
		return rc;
	if (bmc) {
		if ((rc = jsonx_check_keys(bmc, k_bmc, "spec.bmc", err, errlen)) < 0 ||
		    (rc = opt_str(bmc, "driver", "spec.bmc", 16, &n->bmc.driver, err, errlen)) <
			    0 ||
		    (rc = opt_str(bmc, "address", "spec.bmc", MAX_SHORT, &n->bmc.address, err,
				  errlen)) < 0 ||
		    (rc = opt_str(bmc, "username", "spec.bmc", 64, &n->bmc.username, err, errlen)) <
			    0 ||
		    (rc = opt_str(bmc, "password", "spec.bmc", MAX_SHORT, &n->bmc.password, err,
				  errlen)) < 0 ||
		    (rc = opt_str(bmc, "password_file", "spec.bmc", MAX_SHORT,
				  &n->bmc.password_file, err, errlen)) < 0)
			return rc;
		if ((rc = decode_bmc_extras(bmc, &n->bmc, err, errlen)) < 0)
			return rc;
	}
	if (gpus) {
		long long count = 0;
		if ((rc = jsonx_check_keys(gpus, k_gpus, "spec.gpus", err, errlen)) < 0 ||
		    (rc = opt_int(gpus, "count", "spec.gpus", 0, 64, &count, err, errlen)) < 0 ||
		    (rc = opt_str(gpus, "model", "spec.gpus", 128, &n->gpu_model, err, errlen)) < 0)
			return rc;
		n->gpu_count = (int)count;
	}
	json_t *macs = json_object_get(spec, "macs");
	if (macs && !json_is_null(macs)) {
		if (!json_is_array(macs))
			return fp_errf(FP_EINVAL, err, errlen, "spec.macs: expected an array");
		if (json_array_size(macs) > NODE_MAX_MACS)
			return fp_errf(FP_EINVAL, err, errlen, "spec.macs: more than %d entries",
				       NODE_MAX_MACS);
		n->macs = xcalloc(json_array_size(macs) + 1, sizeof(char *));
		size_t i;
		json_t *m;
		json_array_foreach(macs, i, m) {
			if (!json_is_string(m) || !is_mac(json_string_value(m)))
				return fp_errf(FP_EINVAL, err, errlen,
					       "spec.macs[%zu]: expected a MAC address like "
					       "aa:bb:cc:dd:ee:ff",
					       i);
			n->macs[n->nmacs++] = xstrdup(json_string_value(m));
		}
	}
	if ((rc = decode_provision(spec, n, err, errlen)) < 0)
		return rc;
	json_t *retire = json_object_get(spec, "retire");
	if (retire && !json_is_null(retire)) {
		if (!json_is_boolean(retire))
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.retire: expected true or false");
		n->retire = json_is_true(retire);
	}
	json_t *adopt = json_object_get(spec, "adopt");
	if (adopt && !json_is_null(adopt)) {
		if (!json_is_boolean(adopt))
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.adopt: expected true or false");
		n->adopt = json_is_true(adopt);
	}
defaults:
	if (!n->bmc.driver)
		n->bmc.driver = xstrdup("sim");
	if (strcmp(n->bmc.driver, "sim") && strcmp(n->bmc.driver, "ipmi") &&
	    strcmp(n->bmc.driver, "redfish"))
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.driver: \"%s\" is not one of sim, ipmi, redfish",
			       n->bmc.driver);
	if (strcmp(n->bmc.driver, "sim") != 0 && !n->bmc.address)
		return fp_errf(FP_EINVAL, err, errlen, "spec.bmc.address: required for driver %s",
			       n->bmc.driver);
	return 0;
}

/* status.workload (model.h struct node_workload): state one of idle, busy, draining, drained,
 * absent; scheduler 1..NODE_SCHEDULER_MAX; jobs at most NODE_MAX_JOBS ids of 1..NODE_JOB_ID_MAX
 * characters; jobsTotal >= the ids given. */
static int decode_workload(const json_t *v, struct node_workload *w, char *err, size_t errlen)
{
	const char *where = "status.workload";
	int rc;
	if (!json_is_object(v))
		return fp_errf(FP_EINVAL, err, errlen, "%s: expected an object", where);
	if ((rc = jsonx_check_keys(v, k_workload, where, err, errlen)) < 0)
		return rc;
	json_t *st = json_object_get(v, "state");
	if (!json_is_string(st) || workload_state_parse(json_string_value(st), &w->state) < 0)
		return fp_errf(FP_EINVAL, err, errlen,
			       "%s.state: expected one of idle, busy, draining, drained, absent",
			       where);
	if ((rc = opt_str(v, "scheduler", where, NODE_SCHEDULER_MAX, &w->scheduler, err, errlen)) <
		    0 ||
	    (rc = opt_time(v, "since", where, &w->since, err, errlen)) < 0)
		return rc;
	json_t *jobs = json_object_get(v, "jobs");
	if (jobs && !json_is_null(jobs)) {
		if (!json_is_array(jobs) || json_array_size(jobs) > NODE_MAX_JOBS)
			return fp_errf(FP_EINVAL, err, errlen,
				       "%s.jobs: expected an array of at most %d job ids", where,
				       NODE_MAX_JOBS);
		w->jobs = xcalloc(json_array_size(jobs) + 1, sizeof(char *));
		for (size_t i = 0; i < json_array_size(jobs); i++) {
			const json_t *j = json_array_get(jobs, i);
			if (!json_is_string(j) || json_string_length(j) == 0 ||
			    json_string_length(j) > NODE_JOB_ID_MAX ||
			    strlen(json_string_value(j)) != json_string_length(j))
				return fp_errf(
					FP_EINVAL, err, errlen,
					"%s.jobs[%zu]: expected a job id of 1..%d characters",
					where, i, NODE_JOB_ID_MAX);
			w->jobs[w->njobs++] = xstrdup(json_string_value(j));
		}
	}
	long long total = (long long)w->njobs;
	if ((rc = opt_int(v, "jobsTotal", where, (long long)w->njobs, 100000000, &total, err,
			  errlen)) < 0)
		return rc;
	w->jobs_total = (size_t)total;
	return 0;
}

static int decode_status(const json_t *doc, struct node *n, char *err, size_t errlen)
{
	json_t *st = json_object_get(doc, "status");
	int rc;
	n->phase = PHASE_ENROLLED;
	if (!st || json_is_null(st))
		return 0;
	if ((rc = jsonx_check_keys(st, k_status, "status", err, errlen)) < 0)
		return rc;
	json_t *jphase = json_object_get(st, "phase");
	if (jphase && !json_is_null(jphase) && !json_is_string(jphase))
		return fp_errf(FP_EINVAL, err, errlen, "status.phase: expected a string");
	const char *phase = json_string_value(jphase);
	if (phase && node_phase_parse(phase, &n->phase) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "status.phase: unknown phase \"%s\"", phase);
	if ((rc = opt_time(st, "phaseSince", "status", &n->phase_since, err, errlen)) < 0 ||
	    (rc = opt_str(st, "operation", "status", 64, &n->operation, err, errlen)) < 0)
		return rc;
	json_t *queued = json_object_get(st, "queuedOperations");
	if (queued && !json_is_null(queued)) {
		if (!json_is_array(queued) || json_array_size(queued) > NODE_MAX_QUEUED)
			return fp_errf(FP_EINVAL, err, errlen,
				       "status.queuedOperations: expected an array of at most %d "
				       "operation ids",
				       NODE_MAX_QUEUED);
		n->queued_ops = xcalloc(json_array_size(queued) + 1, sizeof(char *));
		for (size_t i = 0; i < json_array_size(queued); i++) {
			const json_t *q = json_array_get(queued, i);
			if (!json_is_string(q) || json_string_length(q) == 0 ||
			    json_string_length(q) > 64 ||
			    strlen(json_string_value(q)) != json_string_length(q))
				return fp_errf(
					FP_EINVAL, err, errlen,
					"status.queuedOperations[%zu]: expected an operation "
					"id of 1..64 characters",
					i);
			n->queued_ops[n->nqueued++] = xstrdup(json_string_value(q));
		}
	}
	json_t *holds = json_object_get(st, "holds");
	if (holds && !json_is_null(holds)) {
		if (!json_is_array(holds) || json_array_size(holds) > NODE_MAX_HOLDS)
			return fp_errf(FP_EINVAL, err, errlen,
				       "status.holds: expected an array of at most %d holds",
				       NODE_MAX_HOLDS);
		n->holds = xcalloc(json_array_size(holds) + 1, sizeof(*n->holds));
		size_t i;
		json_t *h;
		json_array_foreach(holds, i, h) {
			struct node_hold *x = &n->holds[n->nholds++];
			if ((rc = jsonx_check_keys(h, k_hold, "status.holds[]", err, errlen)) < 0 ||
			    (rc = opt_str(h, "owner", "status.holds[]", MAX_SHORT, &x->owner, err,
					  errlen)) < 0 ||
			    (rc = opt_str(h, "reason", "status.holds[]", MAX_TEXT, &x->reason, err,
					  errlen)) < 0 ||
			    (rc = opt_time(h, "since", "status.holds[]", &x->since, err, errlen)) <
				    0 ||
			    (rc = opt_time(h, "expires", "status.holds[]", &x->expires, err,
					   errlen)) < 0)
				return rc;
			if (!x->owner || !x->reason)
				return fp_errf(FP_EINVAL, err, errlen,
					       "status.holds[%zu]: owner and reason are required",
					       i);
			/* one hold per owner (node_hold_add): a duplicate could never be released */
			for (size_t j = 0; j < i; j++)
				if (strcmp(n->holds[j].owner, x->owner) == 0)
					return fp_errf(FP_EINVAL, err, errlen,
						       "status.holds[%zu]: duplicate owner \"%s\"",
						       i, x->owner);
		}
	}
	json_t *conds = json_object_get(st, "conditions");
	if (conds && !json_is_null(conds)) {
		if (!json_is_array(conds) || json_array_size(conds) > NODE_MAX_CONDITIONS)
			return fp_errf(FP_EINVAL, err, errlen,
				       "status.conditions: expected an array of at most %d",
				       NODE_MAX_CONDITIONS);
		n->conditions = xcalloc(json_array_size(conds) + 1, sizeof(*n->conditions));
		size_t i;
		json_t *c;
		json_array_foreach(conds, i, c) {
			struct node_condition *x = &n->conditions[n->nconditions++];
			if ((rc = jsonx_check_keys(c, k_cond, "status.conditions[]", err, errlen)) <
				    0 ||
			    (rc = opt_str(c, "type", "status.conditions[]", 64, &x->type, err,
					  errlen)) < 0 ||
			    (rc = opt_str(c, "reason", "status.conditions[]", 64, &x->reason, err,
					  errlen)) < 0 ||
			    (rc = opt_str(c, "message", "status.conditions[]", MAX_TEXT,
					  &x->message, err, errlen)) < 0 ||
			    (rc = opt_time(c, "since", "status.conditions[]", &x->since, err,
					   errlen)) < 0)
				return rc;
			if (!x->type || cond_status_parse(jsonx_str(c, "status"), &x->status) < 0)
				return fp_errf(FP_EINVAL, err, errlen,
					       "status.conditions[%zu]: type and status "
					       "(True|False|Unknown) are required",
					       i);
			for (size_t j = 0; j < i; j++)
				if (strcmp(n->conditions[j].type, x->type) == 0)
					return fp_errf(
						FP_EINVAL, err, errlen,
						"status.conditions[%zu]: duplicate type \"%s\"", i,
						x->type);
		}
	}
	json_t *boot, *valid, *inv, *sbmc;
	if ((rc = opt_obj(st, "bmc", "status", &sbmc, err, errlen)) < 0)
		return rc;
	if (sbmc && ((rc = jsonx_check_keys(sbmc, k_status_bmc, "status.bmc", err, errlen)) < 0 ||
		     (rc = decode_quirks(json_object_get(sbmc, "quirks"), "status.bmc.quirks",
					 &n->bmc_quirks, err, errlen)) < 0))
		return rc;
	if ((rc = opt_obj(st, "lastBoot", "status", &boot, err, errlen)) < 0 ||
	    (rc = opt_obj(st, "validation", "status", &valid, err, errlen)) < 0 ||
	    (rc = opt_obj(st, "inventory", "status", &inv, err, errlen)) < 0)
		return rc;
	if (boot &&
	    ((rc = jsonx_check_keys(boot, k_boot, "status.lastBoot", err, errlen)) < 0 ||
	     (rc = opt_time(boot, "at", "status.lastBoot", &n->last_boot_at, err, errlen)) < 0 ||
	     (rc = opt_str(boot, "bootId", "status.lastBoot", 64, &n->last_boot_id, err, errlen)) <
		     0))
		return rc;
	if (valid) {
		if ((rc = jsonx_check_keys(valid, k_valid, "status.validation", err, errlen)) < 0 ||
		    (rc = opt_time(valid, "at", "status.validation", &n->validated_at, err,
				   errlen)) < 0 ||
		    (rc = opt_str(valid, "bootId", "status.validation", 64, &n->validation_boot_id,
				  err, errlen)) < 0)
			return rc;
		json_t *passed = json_object_get(valid, "passed");
		if (passed && !json_is_null(passed) && !json_is_boolean(passed))
			return fp_errf(FP_EINVAL, err, errlen,
				       "status.validation.passed: expected true or false");
		n->validation_passed = json_is_true(passed);
	}
	if (inv)
		n->inventory = json_deep_copy(inv);
	if ((rc = opt_time(st, "servedAt", "status", &n->served_at, err, errlen)) < 0)
		return rc;
	json_t *rem = json_object_get(st, "remediation");
	if (rem && !json_is_null(rem) &&
	    (rc = decode_remediation(rem, &n->remediation, err, errlen)) < 0)
		return rc;
	json_t *hist = json_object_get(st, "remediationHistory");
	if (hist && !json_is_null(hist) &&
	    (rc = decode_remediation_history(hist, n, err, errlen)) < 0)
		return rc;
	json_t *wl = json_object_get(st, "workload");
	if (wl && !json_is_null(wl) && (rc = decode_workload(wl, &n->workload, err, errlen)) < 0)
		return rc;
	return 0;
}

/* BMC credentials at rest (core/secret.h). A stored document carries the password either as
 * spec.bmc.password_sealed ("sb1:" text, written whenever the writer had serve's key) or, from an
 * older store or a writer without a key, as plaintext spec.bmc.password. The sealed text is kept
 * as read in bmc.password_sealed and never opened here (no codec holds a key): only the
 * lifecycle's BMC step opens it (secret_bmc_password), so decoded nodes never hold it in plain. */
static int decode_bmc_secret_stored(const json_t *doc, struct node *n, char *err, size_t errlen)
{
	json_t *sealed = json_object_get(jsonx_path(doc, "spec.bmc"), "password_sealed");
	if (!sealed || json_is_null(sealed))
		return 0;
	if (!json_is_string(sealed))
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.password_sealed: expected a string");
	if (n->bmc.password) /* both: the plaintext one is the newer (set without a key) */
		return 0;
	n->bmc.password_sealed = xstrdup(json_string_value(sealed));
	return 0;
}

/* An API body: password_sealed is the server's own field, and password_file and ca_file must
 * be plain file names inside serve's --bmc-credentials-dir (so no request can make serve read
 * an arbitrary server file and send it, or use it, towards a BMC address of the client's
 * choosing). A stored document is not held to the rule here: secret_bmc_password and
 * secret_bmc_ca_path check it again at each BMC call. */
static int check_bmc_secret_input(const json_t *doc, const struct node *n, char *err, size_t errlen)
{
	if (json_object_get(jsonx_path(doc, "spec.bmc"), "password_sealed"))
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.password_sealed: written by the server only; send "
			       "spec.bmc.password or spec.bmc.password_file");
	if (n->bmc.password_file) {
		int rc = secret_password_file_validate(n->bmc.password_file, err, errlen);
		if (rc < 0)
			return rc;
		if (n->bmc.password)
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.password_file: set either spec.bmc.password or "
				       "spec.bmc.password_file, not both");
	}
	if (n->bmc.ca_file)
		return secret_file_name_validate("spec.bmc.ca_file", n->bmc.ca_file, err, errlen);
	return 0;
}

static int check_kind(const json_t *doc, const char *kind, char *err, size_t errlen)
{
	if (!json_is_object(doc))
		return fp_errf(FP_EINVAL, err, errlen, "expected a JSON object");
	int rc = jsonx_check_keys(doc, k_doc, "", err, errlen);
	if (rc < 0)
		return rc;
	json_t *k = json_object_get(doc, "kind");
	if (k && (!json_is_string(k) || strcmp(json_string_value(k), kind) != 0))
		return fp_errf(FP_EINVAL, err, errlen, "kind: expected \"%s\"", kind);
	return 0;
}

int node_from_json(const json_t *doc, int64_t rv, struct node **out, char *err, size_t errlen)
{
	struct node *n = node_new();
	int rc = check_kind(doc, "Node", err, errlen);
	if (rc == 0)
		rc = decode_meta(doc, n, err, errlen);
	if (rc == 0)
		rc = decode_spec(doc, n, err, errlen);
	if (rc == 0)
		rc = decode_bmc_secret_stored(doc, n, err, errlen);
	if (rc == 0)
		rc = decode_status(doc, n, err, errlen);
	if (rc < 0) {
		node_free(n);
		*out = NULL;
		return rc;
	}
	n->resource_version = rv;
	*out = n;
	return 0;
}

int node_from_enroll_json(const json_t *doc, struct node **out, char *err, size_t errlen)
{
	struct node *n = node_new();
	int rc = check_kind(doc, "Node", err, errlen);
	if (rc == 0)
		rc = decode_meta(doc, n, err, errlen);
	if (rc == 0)
		rc = decode_spec(doc, n, err, errlen);
	if (rc == 0)
		rc = check_bmc_secret_input(doc, n, err, errlen);
	if (rc < 0) {
		node_free(n);
		*out = NULL;
		return rc;
	}
	/* status is owned by fleetplane: whatever the document carried is ignored. */
	n->phase = PHASE_ENROLLED;
	*out = n;
	return 0;
}

json_t *node_to_json(const struct node *n, enum node_json_mode mode)
{
	json_t *meta = json_object(), *spec = json_object(), *st = json_object();
	put_str(meta, "name", n->name);
	put_str(meta, "uid", n->uid);
	if (mode == NODE_JSON_PUBLIC) {
		char rv[24];
		snprintf(rv, sizeof(rv), "%lld", (long long)n->resource_version);
		json_object_set_new(meta, "resourceVersion", json_string(rv));
	}
	json_t *labels = json_object();
	for (size_t i = 0; i < n->nlabels; i++)
		json_object_set_new(labels, n->labels[i].key, json_string(n->labels[i].value));
	json_object_set_new(meta, "labels", labels);
	if (n->annotations && json_object_size(n->annotations))
		json_object_set_new(meta, "annotations", json_deep_copy(n->annotations));
	put_time(meta, "createdAt", n->created_at);

	put_str(spec, "site", n->site);
	put_str(spec, "rack", n->rack);
	put_str(spec, "provider", n->provider);
	put_str(spec, "pool", n->pool);
	json_t *bmc = n->bmc.extra ? json_deep_copy(n->bmc.extra) : json_object();
	put_str(bmc, "driver", n->bmc.driver);
	put_str(bmc, "address", n->bmc.address);
	put_str(bmc, "username", n->bmc.username);
	if (n->bmc.cipher_suite >= 0)
		json_object_set_new(bmc, "cipher_suite", json_integer(n->bmc.cipher_suite));
	if (!n->bmc.tls_verify)
		json_object_set_new(bmc, "tls_verify", json_false());
	put_str(bmc, "ca_file", n->bmc.ca_file);
	put_str(bmc, "system", n->bmc.system);
	if (n->bmc.quirks)
		json_object_set_new(bmc, "quirks", encode_quirks(n->bmc.quirks));
	if (mode == NODE_JSON_STORE) {
		/* Credentials, and where they live on the server, stay out of API answers. A
		 * plaintext password is here only when its writer had no key to seal it with
		 * (secret_bmc_seal, core/secret.h): tools, tests of other modules, older stores. */
		if (n->bmc.password)
			put_str(bmc, "password", n->bmc.password);
		else
			put_str(bmc, "password_sealed", n->bmc.password_sealed); /* kept as read */
		put_str(bmc, "password_file", n->bmc.password_file);
	}
	json_object_set_new(spec, "bmc", bmc);
	if (n->nmacs) {
		json_t *macs = json_array();
		for (size_t i = 0; i < n->nmacs; i++)
			json_array_append_new(macs, json_string(n->macs[i]));
		json_object_set_new(spec, "macs", macs);
	}
	if (n->gpu_count || n->gpu_model) {
		json_t *g = json_object();
		json_object_set_new(g, "count", json_integer(n->gpu_count));
		put_str(g, "model", n->gpu_model);
		json_object_set_new(spec, "gpus", g);
	}
	if (n->provision)
		json_object_set_new(spec, "provision", json_deep_copy(n->provision));
	if (n->hardware)
		json_object_set_new(spec, "hardware", json_deep_copy(n->hardware));
	if (n->retire)
		json_object_set_new(spec, "retire", json_true());
	if (n->adopt)
		json_object_set_new(spec, "adopt", json_true());

	json_object_set_new(st, "phase", json_string(node_phase_name(n->phase)));
	put_time(st, "phaseSince", n->phase_since);
	json_t *holds = json_array();
	for (size_t i = 0; i < n->nholds; i++) {
		json_t *h = json_object();
		put_str(h, "owner", n->holds[i].owner);
		put_str(h, "reason", n->holds[i].reason);
		put_time(h, "since", n->holds[i].since);
		put_time(h, "expires", n->holds[i].expires);
		json_array_append_new(holds, h);
	}
	json_object_set_new(st, "holds", holds);
	json_t *conds = json_array();
	for (size_t i = 0; i < n->nconditions; i++) {
		const struct node_condition *c = &n->conditions[i];
		json_t *o = json_object();
		put_str(o, "type", c->type);
		json_object_set_new(o, "status", json_string(cond_status_name(c->status)));
		put_str(o, "reason", c->reason);
		put_str(o, "message", c->message);
		put_time(o, "since", c->since);
		json_array_append_new(conds, o);
	}
	json_object_set_new(st, "conditions", conds);
	put_str(st, "operation", n->operation);
	if (n->nqueued) {
		json_t *q = json_array();
		for (size_t i = 0; i < n->nqueued; i++)
			json_array_append_new(q, json_string(n->queued_ops[i]));
		json_object_set_new(st, "queuedOperations", q);
	}
	if (n->bmc_quirks) {
		json_t *sb = json_object();
		json_object_set_new(sb, "quirks", encode_quirks(n->bmc_quirks));
		json_object_set_new(st, "bmc", sb);
	}
	if (n->last_boot_at) {
		json_t *b = json_object();
		put_time(b, "at", n->last_boot_at);
		put_str(b, "bootId", n->last_boot_id);
		json_object_set_new(st, "lastBoot", b);
	}
	if (n->validated_at) {
		json_t *v = json_object();
		put_time(v, "at", n->validated_at);
		json_object_set_new(v, "passed", json_boolean(n->validation_passed));
		put_str(v, "bootId", n->validation_boot_id);
		json_object_set_new(st, "validation", v);
	}
	if (n->inventory) {
		json_object_set(st, "inventory", n->inventory);
	} else if (n->inventory_text) {
		json_t *inv = json_loads(n->inventory_text, 0, NULL);
		if (inv)
			json_object_set_new(st, "inventory", inv);
	}
	put_time(st, "servedAt", n->served_at);
	if (n->remediation.active)
		json_object_set_new(st, "remediation", encode_remediation(&n->remediation));
	if (n->nremediation_history) {
		json_t *h = json_array();
		for (size_t i = 0; i < n->nremediation_history; i++) {
			const struct node_remediation_record *r = &n->remediation_history[i];
			json_t *o = json_object();
			put_str(o, "code", r->code);
			put_str(o, "gpu", r->gpu);
			json_object_set_new(o, "rung", json_string(remediation_rung_name(r->rung)));
			put_str(o, "result", r->result);
			put_time(o, "at", r->at);
			json_array_append_new(h, o);
		}
		json_object_set_new(st, "remediationHistory", h);
	}
	if (n->workload.state != WORKLOAD_NONE) {
		const struct node_workload *w = &n->workload;
		json_t *o = json_object();
		put_str(o, "scheduler", w->scheduler);
		json_object_set_new(o, "state", json_string(workload_state_name(w->state)));
		json_t *jobs = json_array();
		for (size_t i = 0; i < w->njobs; i++)
			json_array_append_new(jobs, json_string(w->jobs[i]));
		json_object_set_new(o, "jobs", jobs);
		json_object_set_new(o, "jobsTotal", json_integer((json_int_t)w->jobs_total));
		put_time(o, "since", w->since);
		json_object_set_new(st, "workload", o);
	}
	return json_pack("{s:s,s:o,s:o,s:o}", "kind", "Node", "metadata", meta, "spec", spec,
			 "status", st);
}

char *node_to_text(const struct node *n, enum node_json_mode mode)
{
	if (n->inventory || !n->inventory_text) {
		json_t *j = node_to_json(n, mode);
		char *s = jsonx_dumps(j);
		json_decref(j);
		return s;
	}
	/* status' members that node_to_json puts before "inventory" (keep in step with it) */
	static const char *const before[] = {"phase",      "phaseSince",       "holds",
					     "conditions", "queuedOperations", "operation",
					     "bmc",        "lastBoot",         "validation",
					     NULL};
	struct node bare = *n; /* shallow: only read, and inventory_text left out */
	bare.inventory_text = NULL;
	json_t *j = node_to_json(&bare, mode);
	char *s = jsonx_dumps(j);
	json_decref(j);
	size_t ilen = strlen(n->inventory_text);
	char *member = xmalloc(ilen + 13);
	memcpy(member, "\"inventory\":", 12);
	memcpy(member + 12, n->inventory_text, ilen + 1);
	struct jsontext_edit ed = {.insert_at = "status", .insert_after = before, .insert = member};
	struct buf out;
	buf_init(&out, 0);
	int rc = jsontext_rewrite(s, strlen(s), &ed, &out, NULL, 0);
	free(member);
	if (rc < 0) { /* not valid JSON text after all: the tree path decides what is kept */
		buf_release(&out);
		free(s);
		j = node_to_json(n, mode);
		s = jsonx_dumps(j);
		json_decref(j);
		return s;
	}
	free(s);
	return buf_detach(&out, NULL);
}

/* ---- operation ---- */

static const char *const k_op_meta[] = {"name", "uid", "resourceVersion", "createdAt", NULL};
static const char *const k_op_spec[] = {"node",  "kind",           "steps",  "reason",
					"actor", "idempotencyKey", "params", NULL};
static const char *const k_op_status[] = {"state",        "step",      "attempt",    "deadline",
					  "stepDeadline", "startedAt", "finishedAt", "updatedAt",
					  "lastError",    NULL};

int operation_from_json(const json_t *doc, int64_t rv, struct operation **out, char *err,
			size_t errlen)
{
	struct operation *op = operation_new();
	json_t *meta = json_object_get(doc, "metadata"), *spec = json_object_get(doc, "spec"),
	       *st = json_object_get(doc, "status");
	long long step = 0, attempt = 0;
	int rc = check_kind(doc, "Operation", err, errlen);
	if (rc < 0)
		goto out;
	if (!json_is_object(meta) || !json_is_object(spec) || !json_is_object(st)) {
		rc = fp_errf(FP_EINVAL, err, errlen, "operation: metadata, spec, status required");
		goto out;
	}
	if ((rc = jsonx_check_keys(meta, k_op_meta, "metadata", err, errlen)) < 0 ||
	    (rc = jsonx_check_keys(spec, k_op_spec, "spec", err, errlen)) < 0 ||
	    (rc = jsonx_check_keys(st, k_op_status, "status", err, errlen)) < 0 ||
	    (rc = opt_str(meta, "name", "metadata", 64, &op->id, err, errlen)) < 0 ||
	    (rc = opt_time(meta, "createdAt", "metadata", &op->created_at, err, errlen)) < 0 ||
	    (rc = opt_str(spec, "node", "spec", 63, &op->node, err, errlen)) < 0 ||
	    (rc = opt_str(spec, "kind", "spec", 32, &op->kind, err, errlen)) < 0 ||
	    (rc = opt_str(spec, "reason", "spec", MAX_TEXT, &op->reason, err, errlen)) < 0 ||
	    (rc = opt_str(spec, "actor", "spec", MAX_SHORT, &op->actor, err, errlen)) < 0 ||
	    (rc = opt_str(spec, "idempotencyKey", "spec", MAX_SHORT, &op->idempotency_key, err,
			  errlen)) < 0 ||
	    (rc = opt_int(st, "step", "status", 0, OP_MAX_STEPS, &step, err, errlen)) < 0 ||
	    (rc = opt_int(st, "attempt", "status", 0, 1000000, &attempt, err, errlen)) < 0 ||
	    (rc = opt_time(st, "deadline", "status", &op->deadline, err, errlen)) < 0 ||
	    (rc = opt_time(st, "stepDeadline", "status", &op->step_deadline, err, errlen)) < 0 ||
	    (rc = opt_time(st, "startedAt", "status", &op->started_at, err, errlen)) < 0 ||
	    (rc = opt_time(st, "finishedAt", "status", &op->finished_at, err, errlen)) < 0 ||
	    (rc = opt_time(st, "updatedAt", "status", &op->updated_at, err, errlen)) < 0 ||
	    (rc = opt_str(st, "lastError", "status", MAX_TEXT, &op->last_error, err, errlen)) < 0)
		goto out;
	if (!op->id || !op->node || !op->kind) {
		rc = fp_errf(FP_EINVAL, err, errlen,
			     "operation: metadata.name, spec.node and "
			     "spec.kind are required");
		goto out;
	}
	if (op_state_parse(jsonx_str(st, "state"), &op->state) < 0) {
		rc = fp_errf(FP_EINVAL, err, errlen, "status.state: unknown state");
		goto out;
	}
	json_t *steps = json_object_get(spec, "steps");
	if (!json_is_array(steps) || json_array_size(steps) > OP_MAX_STEPS) {
		rc = fp_errf(FP_EINVAL, err, errlen, "spec.steps: expected at most %d step names",
			     OP_MAX_STEPS);
		goto out;
	}
	size_t i;
	json_t *s;
	json_array_foreach(steps, i, s) {
		if (!json_is_string(s)) {
			rc = fp_errf(FP_EINVAL, err, errlen, "spec.steps[%zu]: expected a string",
				     i);
			goto out;
		}
		if (json_string_length(s) > 64) {
			rc = fp_errf(FP_EINVAL, err, errlen,
				     "spec.steps[%zu]: longer than 64 characters", i);
			goto out;
		}
		op->steps[op->nsteps++] = xstrdup(json_string_value(s));
	}
	if ((size_t)step > op->nsteps) {
		rc = fp_errf(FP_EINVAL, err, errlen, "status.step: beyond the last step");
		goto out;
	}
	op->step = (size_t)step;
	op->attempt = (int)attempt;
	json_t *params = json_object_get(spec, "params");
	if (params && !json_is_null(params))
		op->params = json_deep_copy(params);
	op->resource_version = rv;
out:
	if (rc < 0) {
		operation_free(op);
		op = NULL;
	}
	*out = op;
	return rc;
}

json_t *operation_to_json(const struct operation *op, int with_rv)
{
	json_t *meta = json_object(), *spec = json_object(), *st = json_object();
	put_str(meta, "name", op->id);
	if (with_rv) {
		char rv[24];
		snprintf(rv, sizeof(rv), "%lld", (long long)op->resource_version);
		json_object_set_new(meta, "resourceVersion", json_string(rv));
	}
	put_time(meta, "createdAt", op->created_at);
	put_str(spec, "node", op->node);
	put_str(spec, "kind", op->kind);
	json_t *steps = json_array();
	for (size_t i = 0; i < op->nsteps; i++)
		json_array_append_new(steps, json_string(op->steps[i]));
	json_object_set_new(spec, "steps", steps);
	put_str(spec, "reason", op->reason);
	put_str(spec, "actor", op->actor);
	put_str(spec, "idempotencyKey", op->idempotency_key);
	if (op->params)
		json_object_set(spec, "params", op->params);
	json_object_set_new(st, "state", json_string(op_state_name(op->state)));
	json_object_set_new(st, "step", json_integer((json_int_t)op->step));
	json_object_set_new(st, "attempt", json_integer(op->attempt));
	put_time(st, "deadline", op->deadline);
	put_time(st, "stepDeadline", op->step_deadline);
	put_time(st, "startedAt", op->started_at);
	put_time(st, "finishedAt", op->finished_at);
	put_time(st, "updatedAt", op->updated_at);
	put_str(st, "lastError", op->last_error);
	return json_pack("{s:s,s:o,s:o,s:o}", "kind", "Operation", "metadata", meta, "spec", spec,
			 "status", st);
}

/* ---- label selectors ---- */

enum sel_op {
	SEL_EQ,
	SEL_NE,
	SEL_EXISTS,
	SEL_NOT_EXISTS,
	SEL_IN,
	SEL_NOTIN
};
#define SEL_MAX_TERMS 16
#define SEL_MAX_VALUES 16 /* values in one in (...) / notin (...) set */
#define SEL_MAX_LEN 4096  /* bytes of a whole selector */

struct label_selector {
	size_t n;
	struct {
		enum sel_op op;
		char key[64];
		size_t nvalues; /* SEL_EQ/SEL_NE: 1; SEL_IN/SEL_NOTIN: 1..SEL_MAX_VALUES */
		char values[SEL_MAX_VALUES][64];
	} t[SEL_MAX_TERMS];
};

static const char *sel_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A run of characters that are not selector punctuation (Kubernetes' lexer: whitespace , ! = ( )
 * end an identifier). */
static size_t sel_word(const char *p)
{
	return strcspn(p, " \t,!=()");
}

static int sel_fail(struct label_selector *sel, char *err, size_t errlen, const char *what,
		    const char *s, const char *at)
{
	free(sel);
	return fp_errf(FP_EINVAL, err, errlen, "label selector: %s at offset %d", what,
		       (int)(at - s));
}

/* Copies the word at p (n bytes) as a value of term t after label_validate(key, value). */
static int sel_value(struct label_selector *sel, size_t t, const char *p, size_t n, char *err,
		     size_t errlen)
{
	char v[80];
	if (n >= sizeof(v))
		return fp_errf(FP_EINVAL, err, errlen,
			       "label selector: value must be 0-63 characters");
	memcpy(v, p, n);
	v[n] = 0;
	int rc = label_validate(sel->t[t].key, v, err, errlen);
	if (rc < 0)
		return rc;
	if (sel->t[t].nvalues == SEL_MAX_VALUES)
		return fp_errf(FP_EINVAL, err, errlen,
			       "label selector: more than %d values in a set", SEL_MAX_VALUES);
	memcpy(sel->t[t].values[sel->t[t].nvalues++], v, n + 1); /* validated: <= 63 bytes */
	return 0;
}

int label_selector_parse(const char *s, struct label_selector **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!s || !*s)
		return fp_errf(FP_EINVAL, err, errlen,
			       "label selector: must not be empty (an empty selector is not "
			       "\"everything\")");
	if (strlen(s) > SEL_MAX_LEN)
		return fp_errf(FP_EINVAL, err, errlen, "label selector: longer than %d bytes",
			       SEL_MAX_LEN);
	struct label_selector *sel = xcalloc(1, sizeof(*sel));
	const char *p = sel_ws(s);
	if (!*p)
		return sel_fail(sel, err, errlen, "empty", s, p);
	for (;;) {
		if (sel->n == SEL_MAX_TERMS)
			return sel_fail(sel, err, errlen, "more than 16 terms", s, p);
		size_t t = sel->n;
		int neg = 0;
		if (*p == '!') {
			neg = 1;
			p = sel_ws(p + 1);
		}
		size_t kn = sel_word(p);
		if (kn == 0)
			return sel_fail(sel, err, errlen, "expected a label key", s, p);
		char key[256];
		if (kn >= sizeof(key))
			return sel_fail(sel, err, errlen, "key longer than 63 characters", s, p);
		memcpy(key, p, kn);
		key[kn] = 0;
		int rc = label_validate(key, "", err, errlen);
		if (rc < 0) {
			free(sel);
			return rc;
		}
		memcpy(sel->t[t].key, key, kn + 1); /* validated: <= 63 bytes */
		p = sel_ws(p + kn);
		if (neg) {
			sel->t[t].op = SEL_NOT_EXISTS;
		} else if (*p == ',' || !*p) {
			sel->t[t].op = SEL_EXISTS;
		} else if (p[0] == '!' || p[0] == '=') {
			if (p[0] == '!' && p[1] != '=')
				return sel_fail(sel, err, errlen, "expected != ", s, p);
			sel->t[t].op = p[0] == '!' ? SEL_NE : SEL_EQ;
			p += (p[0] == '!' || p[1] == '=') ? 2 : 1;
			p = sel_ws(p);
			size_t vn = sel_word(p);
			if (p[vn] == '!' || p[vn] == '=' || p[vn] == '(' || p[vn] == ')')
				return sel_fail(sel, err, errlen, "unexpected character", s,
						p + vn);
			if ((rc = sel_value(sel, t, p, vn, err, errlen)) < 0) {
				free(sel);
				return rc;
			}
			p = sel_ws(p + vn);
		} else {
			size_t wn = sel_word(p);
			if (wn == 2 && strncmp(p, "in", 2) == 0)
				sel->t[t].op = SEL_IN;
			else if (wn == 5 && strncmp(p, "notin", 5) == 0)
				sel->t[t].op = SEL_NOTIN;
			else
				return sel_fail(sel, err, errlen,
						"expected =, ==, !=, in, notin or ','", s, p);
			p = sel_ws(p + wn);
			if (*p != '(')
				return sel_fail(sel, err, errlen, "expected ( after in/notin", s,
						p);
			p = sel_ws(p + 1);
			for (;;) {
				size_t vn = sel_word(p);
				if (vn == 0)
					return sel_fail(sel, err, errlen, "expected a value", s, p);
				if ((rc = sel_value(sel, t, p, vn, err, errlen)) < 0) {
					free(sel);
					return rc;
				}
				p = sel_ws(p + vn);
				if (*p == ')')
					break;
				if (*p != ',')
					return sel_fail(sel, err, errlen, "expected , or )", s, p);
				p = sel_ws(p + 1);
			}
			p = sel_ws(p + 1);
		}
		sel->n++;
		if (!*p)
			break;
		if (*p != ',')
			return sel_fail(sel, err, errlen, "expected ',' between terms", s, p);
		p = sel_ws(p + 1);
		if (!*p)
			return sel_fail(sel, err, errlen, "trailing comma", s, p);
	}
	*out = sel;
	return 0;
}

static int sel_in(const char *v, const char (*values)[64], size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		if (strcmp(v, values[i]) == 0)
			return 1;
	return 0;
}

static int sel_match(const struct label_selector *sel,
		     const char *(*get)(const void *, const char *), const void *obj)
{
	for (size_t i = 0; i < sel->n; i++) {
		const char *v = get(obj, sel->t[i].key);
		switch (sel->t[i].op) {
		case SEL_EQ:
		case SEL_IN:
			if (!sel_in(v, sel->t[i].values, sel->t[i].nvalues))
				return 0;
			break;
		case SEL_NE:
		case SEL_NOTIN:
			if (sel_in(v, sel->t[i].values, sel->t[i].nvalues))
				return 0;
			break;
		case SEL_EXISTS:
			if (!v)
				return 0;
			break;
		case SEL_NOT_EXISTS:
			if (v)
				return 0;
			break;
		}
	}
	return 1;
}

static const char *get_node_label(const void *n, const char *k)
{
	return node_label_get(n, k);
}

static const char *get_json_label(const void *labels, const char *k)
{
	return json_string_value(json_object_get(labels, k));
}

int label_selector_match(const struct label_selector *sel, const struct node *n)
{
	return sel_match(sel, get_node_label, n);
}

int label_selector_match_json(const struct label_selector *sel, const json_t *labels)
{
	return sel_match(sel, get_json_label, labels);
}

void label_selector_free(struct label_selector *sel)
{
	free(sel);
}
