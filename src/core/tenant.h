/* core/tenant.h - tenants (issue 10 part 7): a fleetplane tenant is a Slurm account with an
 * optional GPU quota. Stored at /tenants/<name> as {"kind": "Tenant", "metadata": {"name"},
 * "spec": {"slurmAccount", "gpuQuota"}}; `fleetplane serve --slurm` applies the quota as the
 * account's GrpTRES=gres/gpu=<gpuQuota> (sched/slurm_tenant.h) and GET /v1/tenants/{name}
 * reports it against use (docs/api.md "Tenants"). */
#ifndef FP_CORE_TENANT_H
#define FP_CORE_TENANT_H

#include <jansson.h>
#include <stddef.h>

#define TENANT_ACCOUNT_MAX 64u    /* bytes of spec.slurmAccount */
#define TENANT_QUOTA_MAX 1000000L /* largest spec.gpuQuota */
#define TENANT_MAX 10000u         /* tenants one fleet may hold */

struct tenant {
	char name[64];                        /* metadata.name (name_validate) */
	char account[TENANT_ACCOUNT_MAX + 1]; /* spec.slurmAccount */
	long quota;                           /* spec.gpuQuota; -1 when absent or null */
};

/* Decodes doc strictly: members kind ("Tenant" when present), metadata ({"name"} plus the
 * read-only resourceVersion, createdAt, which are ignored), spec (required: slurmAccount, 1..64
 * of a-z 0-9 _ . - not starting with '-', since sacctmgr lowercases account names; gpuQuota an
 * integer 0..TENANT_QUOTA_MAX, null or absent = no limit) and status (ignored); anything else
 * is refused. When path_name is set, metadata.name may be absent (it is taken) and otherwise
 * must equal it. 0, or FP_EINVAL with err naming the field ("spec.gpuQuota: expected an
 * integer 0..1000000 or null"). */
int tenant_from_json(const json_t *doc, const char *path_name, struct tenant *out, char *err,
		     size_t errlen);
/* The stored document of t (new reference): {"kind","metadata":{"name"},"spec":{"slurmAccount",
 * "gpuQuota" (null when -1)}}. */
json_t *tenant_to_json(const struct tenant *t);

#endif
