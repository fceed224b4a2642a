/* fleet/fleet_boot.h - the network boot service (boot/boot_server.h) in the fleet's boot slot.
 * boot sits below fleet and cannot name struct fleet_boot or the lifecycle, so the wrapping is
 * here: start hands the service the fleet's store, cache, clock and secret key and routes its
 * accepted reports into the lifecycle (lifecycle_boot_reported), node_changed keeps dnsmasq's
 * hosts file in step, stop stops. Header-only, as fleet_slurm.h, so the fleet layer's unit
 * tests that do not link boot still link. */
#ifndef FLEET_FLEET_BOOT_H
#define FLEET_FLEET_BOOT_H

#include "boot/boot_server.h"
#include "controller/lifecycle.h"
#include "fleet/fleet.h"

static inline void fleet_boot_reported_(void *arg, const char *node, const char *op_id,
					enum boot_report_kind k, const json_t *doc)
{
	lifecycle_boot_reported(arg, node, op_id, (enum lifecycle_boot_kind)k, doc);
}

static inline int fleet_boot_start_(void *arg, const struct fleet_ctx *ctx, char *err,
				    size_t errlen)
{
	if (!ctx->lc) {
		snprintf(err, errlen, "the boot service needs the lifecycle controller");
		return -1;
	}
	struct boot_hooks h = {.reported = fleet_boot_reported_, .arg = ctx->lc};
	return boot_server_start(arg, ctx->store, ctx->cache, ctx->clock, ctx->secret_key, &h, err,
				 errlen);
}

static inline void fleet_boot_changed_(void *arg, const char *node)
{
	boot_server_node_changed(arg, node);
}

static inline void fleet_boot_stop_(void *arg)
{
	boot_server_stop(arg);
}

/* Fills *out (name "pxe") with hooks over b (borrowed: b and *out must outlive the fleet). */
static inline void fleet_boot_wrap(struct boot_server *b, struct fleet_boot *out)
{
	*out = (struct fleet_boot){.name = "pxe",
				   .start = fleet_boot_start_,
				   .node_changed = fleet_boot_changed_,
				   .stop = fleet_boot_stop_,
				   .arg = b};
}

#endif
