/* core/tenant.c - the Tenant document's strict codec (core/tenant.h). */
#include "core/tenant.h"

#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "core/codec.h"

#include "base/banned.h"

static int only_keys(const json_t *o, const char *const *keys, const char *where, char *err,
		     size_t errlen)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v) {
		int ok = 0;
		for (size_t i = 0; keys[i]; i++)
			if (strcmp(k, keys[i]) == 0)
				ok = 1;
		if (!ok)
			return fp_errf(FP_EINVAL, err, errlen, "%s%.64s: unknown field", where, k);
	}
	return 0;
}

int tenant_from_json(const json_t *doc, const char *path_name, struct tenant *out, char *err,
		     size_t errlen)
{
	static const char *const top[] = {"kind", "metadata", "spec", "status", NULL};
	static const char *const md_keys[] = {"name", "resourceVersion", "createdAt", NULL};
	static const char *const spec_keys[] = {"slurmAccount", "gpuQuota", NULL};
	int rc;
	memset(out, 0, sizeof(*out));
	out->quota = -1;
	if (!json_is_object(doc))
		return fp_errf(FP_EINVAL, err, errlen, "expected a JSON object");
	if ((rc = only_keys(doc, top, "", err, errlen)) < 0)
		return rc;
	const json_t *kind = json_object_get(doc, "kind");
	if (kind && !(json_is_string(kind) && strcmp(json_string_value(kind), "Tenant") == 0))
		return fp_errf(FP_EINVAL, err, errlen, "kind: expected \"Tenant\"");
	const json_t *md = json_object_get(doc, "metadata");
	if (md && !json_is_object(md))
		return fp_errf(FP_EINVAL, err, errlen, "metadata: expected an object");
	if (md && (rc = only_keys(md, md_keys, "metadata.", err, errlen)) < 0)
		return rc;
	const json_t *name = md ? json_object_get(md, "name") : NULL;
	const char *nm = json_string_value(name);
	if (name && !nm)
		return fp_errf(FP_EINVAL, err, errlen, "metadata.name: expected a string");
	if (!nm)
		nm = path_name;
	if (!nm)
		return fp_errf(FP_EINVAL, err, errlen, "metadata.name: required");
	if ((rc = name_validate("metadata.name", nm, err, errlen)) < 0)
		return rc;
	if (path_name && strcmp(nm, path_name) != 0)
		return fp_errf(FP_EINVAL, err, errlen,
			       "metadata.name: %s is not the name in the path (%s)", nm, path_name);
	snprintf(out->name, sizeof(out->name), "%s", nm);
	const json_t *spec = json_object_get(doc, "spec");
	if (!json_is_object(spec))
		return fp_errf(FP_EINVAL, err, errlen, "spec: required object");
	if ((rc = only_keys(spec, spec_keys, "spec.", err, errlen)) < 0)
		return rc;
	const char *acc = json_string_value(json_object_get(spec, "slurmAccount"));
	size_t n = acc ? strlen(acc) : 0;
	if (!acc || n == 0 || n > TENANT_ACCOUNT_MAX ||
	    strspn(acc, "abcdefghijklmnopqrstuvwxyz0123456789_.-") != n || acc[0] == '-')
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.slurmAccount: expected a Slurm account name, 1..%u of a-z 0-9 "
			       "_ . - not starting with - (sacctmgr lowercases names)",
			       TENANT_ACCOUNT_MAX);
	memcpy(out->account, acc, n + 1);
	const json_t *q = json_object_get(spec, "gpuQuota");
	if (q && !json_is_null(q)) {
		if (!json_is_integer(q) || json_integer_value(q) < 0 ||
		    json_integer_value(q) > TENANT_QUOTA_MAX)
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.gpuQuota: expected an integer 0..%ld or null",
				       TENANT_QUOTA_MAX);
		out->quota = (long)json_integer_value(q);
	}
	return 0;
}

json_t *tenant_to_json(const struct tenant *t)
{
	return json_pack("{s:s,s:{s:s},s:{s:s,s:o}}", "kind", "Tenant", "metadata", "name", t->name,
			 "spec", "slurmAccount", t->account, "gpuQuota",
			 t->quota < 0 ? json_null() : json_integer(t->quota));
}
