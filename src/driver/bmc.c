/* bmc.c - the BMC driver table and the wrappers every caller goes through (see bmc.h). */
#include "driver/bmc.h"

#include <pthread.h>
#include <string.h>

#include "base/err.h"
#include "base/metrics.h"
#include "driver/bmc_ipmi.h"
#include "driver/bmc_redfish.h"
#include "driver/bmc_sim.h"

static const struct bmc_driver_ops *const drivers[] = {
	&bmc_sim_ops,
	&bmc_ipmi_ops,
	&bmc_redfish_ops,
};

const struct bmc_driver_ops *bmc_driver_lookup(const char *name)
{
	for (size_t i = 0; name && i < sizeof(drivers) / sizeof(drivers[0]); i++)
		if (strcmp(drivers[i]->name, name) == 0)
			return drivers[i];
	return NULL;
}

const char *bmc_power_name(enum bmc_power p)
{
	return p == BMC_POWER_ON ? "on" : p == BMC_POWER_OFF ? "off" : "unknown";
}

static const char *const action_names[] = {"", "on", "off", "cycle", "soft", "reset"};

const char *bmc_action_name(enum bmc_power_action a)
{
	return (a >= BMC_ACTION_ON && a <= BMC_ACTION_RESET) ? action_names[a] : "unknown";
}

int bmc_action_parse(const char *s, enum bmc_power_action *out)
{
	for (int i = BMC_ACTION_ON; s && i <= BMC_ACTION_RESET; i++)
		if (strcmp(s, action_names[i]) == 0) {
			*out = (enum bmc_power_action)i;
			return 0;
		}
	return FP_EINVAL;
}

const char *bmc_boot_name(enum bmc_boot_device d)
{
	return d == BMC_BOOT_PXE ? "pxe" : d == BMC_BOOT_DISK ? "disk" : "unknown";
}

const char *bmc_boot_mode_name(enum bmc_boot_mode m)
{
	return m == BMC_BOOT_MODE_UEFI ? "uefi" : m == BMC_BOOT_MODE_LEGACY ? "legacy" : "unknown";
}

static struct metric_family *m_requests, *m_duration;
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;

static void metrics_init(void)
{
	{
		m_requests = metrics_register(METRIC_COUNTER, "fleetplane_bmc_requests_total",
					      "BMC requests by driver, operation and result.",
					      "driver,op,result", NULL, 0);
		m_duration = metrics_register(METRIC_HISTOGRAM,
					      "fleetplane_bmc_request_duration_seconds",
					      "BMC request latency by driver and operation.",
					      "driver,op", metrics_buckets_fast,
					      METRICS_BUCKETS_FAST_N);
	}
}

static void record(struct bmc *b, const char *op, int rc, int64_t t0)
{
	pthread_once(&metrics_once, metrics_init);
	const char *result = rc == 0 ? "success" : rc == FP_ETIMEDOUT ? "timeout" : "error";
	metric_add(m_requests, (const char *[]){b->ops->name, op, result}, 1);
	metric_observe(m_duration, (const char *[]){b->ops->name, op},
		       (double)(clock_now_ms(b->clock) - t0) / 1000.0);
}

static int precheck(struct bmc *b, const struct bmc_target *t, int64_t deadline, const void *fn,
		    char *err, size_t errlen)
{
	if (!b || !t || !t->node)
		return fp_errf(FP_EINVAL, err, errlen, "bmc call without a target");
	if (!fn)
		return fp_errf(FP_EUNSUPPORTED, err, errlen, "driver %s does not support this call",
			       b->ops->name);
	if (deadline && clock_now_ms(b->clock) >= deadline)
		return fp_errf(FP_ETIMEDOUT, err, errlen, "deadline passed before the call");
	return 0;
}

#define BMC_WRAP(opname, call)                                                                 \
	do {                                                                                   \
		int rc_ = precheck(b, t, deadline, (const void *)b->ops->opname, err, errlen); \
		if (rc_ < 0)                                                                   \
			return rc_;                                                            \
		int64_t t0_ = clock_now_ms(b->clock);                                          \
		rc_ = call;                                                                    \
		if (rc_ == 0 && deadline && clock_now_ms(b->clock) > deadline)                 \
			rc_ = fp_errf(FP_ETIMEDOUT, err, errlen,                               \
				      "BMC answered after the deadline");                      \
		record(b, #opname, rc_, t0_);                                                  \
		return rc_;                                                                    \
	} while (0)

int bmc_power_get(struct bmc *b, const struct bmc_target *t, int64_t deadline, enum bmc_power *out,
		  char *err, size_t errlen)
{
	*out = BMC_POWER_UNKNOWN;
	BMC_WRAP(power_get, b->ops->power_get(b, t, deadline, out, err, errlen));
}

int bmc_power_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
		  enum bmc_power_action a, char *err, size_t errlen)
{
	BMC_WRAP(power_set, b->ops->power_set(b, t, deadline, a, err, errlen));
}

int bmc_boot_get(struct bmc *b, const struct bmc_target *t, int64_t deadline, struct bmc_boot *out,
		 char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	BMC_WRAP(boot_get, b->ops->boot_get(b, t, deadline, out, err, errlen));
}

int bmc_boot_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
		 const struct bmc_boot *want, char *err, size_t errlen)
{
	if (!want || want->device == BMC_BOOT_UNKNOWN)
		return fp_errf(FP_EINVAL, err, errlen, "boot device to set is unknown");
	BMC_WRAP(boot_set, b->ops->boot_set(b, t, deadline, want, err, errlen));
}

static int inventory_call(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
			  char *err, size_t errlen)
{
	BMC_WRAP(inventory, b->ops->inventory(b, t, deadline, out, err, errlen));
}

int bmc_inventory(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
		  char *err, size_t errlen)
{
	*out = NULL;
	int rc = inventory_call(b, t, deadline, out, err, errlen);
	if (rc < 0 && *out) {
		/* e.g. the answer came after the deadline: the caller gets nothing */
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

static int chassis_call(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
			char *err, size_t errlen)
{
	BMC_WRAP(chassis_status, b->ops->chassis_status(b, t, deadline, out, err, errlen));
}

static int sel_call(struct bmc *b, const struct bmc_target *t, int64_t deadline, size_t max_entries,
		    json_t **out, char *err, size_t errlen)
{
	BMC_WRAP(sel_read, b->ops->sel_read(b, t, deadline, max_entries, out, err, errlen));
}

static int firmware_call(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			 const struct bmc_firmware_req *req, json_t **out, char *err, size_t errlen)
{
	BMC_WRAP(firmware_update, b->ops->firmware_update(b, t, deadline, req, out, err, errlen));
}

int bmc_agent_action(struct bmc *b, const struct bmc_target *t, const char *action,
		     int64_t deadline, char *err, size_t errlen)
{
	if (!action || !*action)
		return fp_errf(FP_EINVAL, err, errlen, "agent action without a name");
	BMC_WRAP(agent_action, b->ops->agent_action(b, t, action, deadline, err, errlen));
}

/* The JSON-returning wrappers hand *out to the caller only on success (firmware_update also
 * on FP_ETIMEDOUT, with the task's last state). */
int bmc_chassis_status(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
		       char *err, size_t errlen)
{
	*out = NULL;
	int rc = chassis_call(b, t, deadline, out, err, errlen);
	if (rc < 0 && *out) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

int bmc_sel_read(struct bmc *b, const struct bmc_target *t, int64_t deadline, size_t max_entries,
		 json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	int rc = sel_call(b, t, deadline, max_entries, out, err, errlen);
	if (rc < 0 && *out) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

int bmc_firmware_update(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			const struct bmc_firmware_req *req, json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!req ||
	    ((!req->image_uri || !req->image_uri[0]) && (!req->image_path || !req->image_path[0])))
		return fp_errf(FP_EINVAL, err, errlen,
			       "firmware update without an image URI or path");
	int rc = firmware_call(b, t, deadline, req, out, err, errlen);
	if (rc < 0 && rc != FP_ETIMEDOUT && *out) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

int bmc_spec_validate(const struct node_bmc *spec, const char **field, char *err, size_t errlen)
{
	*field = "spec.bmc.driver";
	if (!spec || !spec->driver)
		return fp_errf(FP_EINVAL, err, errlen, "spec.bmc.driver: required");
	const struct bmc_driver_ops *ops = bmc_driver_lookup(spec->driver);
	if (!ops)
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.driver: \"%.32s\" is not a driver in this build",
			       spec->driver);
	*field = NULL;
	if (!ops->validate)
		return 0;
	int rc = ops->validate(spec, field, err, errlen);
	if (rc < 0 && !*field)
		*field = "spec.bmc";
	return rc;
}

unsigned bmc_caps(const struct bmc *b)
{
	return b->ops->caps;
}

void bmc_free(struct bmc *b)
{
	if (b && b->ops->free)
		b->ops->free(b);
}
