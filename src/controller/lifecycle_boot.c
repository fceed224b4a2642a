/* lifecycle_boot.c - network-boot provisioning in the lifecycle controller (see lifecycle.h
 * lifecycle_boot_reported; docs/provisioning.md). A node with spec.provision is provisioned and
 * reimaged with the operation's network-boot steps (engine/objects.c): set_boot_pxe,
 * power_on_or_cycle, then here wait_inspection (the inspection ramdisk's inventory), wait_deploy
 * (the deploy ramdisk wrote the image and checked its sha256), set_boot_disk, reboot_to_disk
 * (the power cycle step) and wait_disk_boot (the written system's own boot report).
 *
 * The boot service (boot/boot_server.c) checks each callback's per-attempt token and hands the
 * report here; it is recorded in the operation's params (inspection, deploy, diskBoot), once
 * per attempt, by a task on the report lane, like the GPU reset answer
 * (lifecycle_remediation.c). The wait steps read those params: a report is always matched to
 * the operation it was sent for, never to the clock. Every wait has its deadline (the step's,
 * or lifecycle_config.boot_wait_ms) and keeps the NetworkBoot condition naming what it waits
 * for; at the deadline the condition says which step got stuck (InspectionTimeout,
 * DeployTimeout, DiskBootTimeout) and the step fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "controller/lifecycle.h"
#include "controller/lifecycle_int.h"
#include "core/model.h"
#include "base/executor.h"
#include "engine/workqueue.h"

#include "base/banned.h"

#define BOOT_CONDITION "NetworkBoot"

static const char *or_q(const char *s)
{
	return s ? s : "?";
}

static const char *const report_keys[] = {"inspection", "deploy", "diskBoot"};

/* 1 when the step's deadline has passed: the condition says so and the step fails. */
static int timed_out(struct step_ctx *x, const char *reason, const char *what)
{
	if (lifecycle_step_left(x->lc, x->n->name, x->op) > 0)
		return 0;
	char msg[300];
	snprintf(msg, sizeof(msg), "%s (step %s of operation %s)", what, x->op->steps[x->op->step],
		 x->op->id);
	lifecycle_step_condition(x, BOOT_CONDITION, COND_FALSE, reason, msg);
	snprintf(x->err, sizeof(x->err), "%.250s", what);
	return 1;
}

static enum step_result waiting(struct step_ctx *x, const char *reason, const char *msg)
{
	lifecycle_step_condition(x, BOOT_CONDITION, COND_FALSE, reason, msg);
	snprintf(x->err, sizeof(x->err), "%.250s", msg);
	x->wait_ms = lifecycle_step_left(x->lc, x->n->name, x->op);
	return STEP_WAIT;
}

enum step_result lifecycle_step_wait_inspection(struct step_ctx *x)
{
	json_t *r = json_object_get(x->op->params, "inspection");
	json_t *inv = json_object_get(r, "inventory");
	if (json_is_object(inv)) {
		if (!(x->n->inventory && json_equal(x->n->inventory, inv))) {
			json_decref(x->n->inventory);
			x->n->inventory = json_deep_copy(inv);
			x->delta->inventory = 1;
		}
		lifecycle_step_condition(x, BOOT_CONDITION, COND_FALSE, "Inspected",
					 "the inspection ramdisk reported the inventory; waiting "
					 "for the deploy ramdisk");
		return STEP_DONE;
	}
	if (timed_out(x, "InspectionTimeout",
		      "no inspection report from the ramdisk: the machine did not PXE boot "
		      "fleetplane's ramdisk, or the ramdisk cannot reach the boot service"))
		return STEP_FAIL;
	return waiting(x, "WaitingForInspection",
		       "waiting for the inspection ramdisk (PXE boot, then POST /boot/inspect)");
}

enum step_result lifecycle_step_wait_deploy(struct step_ctx *x)
{
	json_t *r = json_object_get(x->op->params, "deploy");
	if (json_is_object(r)) {
		const char *m = jsonx_str(r, "message");
		char msg[400];
		if (json_is_true(json_object_get(r, "ok"))) {
			snprintf(msg, sizeof(msg),
				 "image %.63s written to %.64s (%lld bytes, sha256 %.64s)",
				 or_q(jsonx_str(json_object_get(x->op->params, "networkBoot"),
						"image")),
				 or_q(jsonx_str(r, "disk")),
				 (long long)json_integer_value(json_object_get(r, "bytes")),
				 or_q(jsonx_str(r, "sha256")));
			lifecycle_step_condition(x, BOOT_CONDITION, COND_FALSE, "Deployed", msg);
			return STEP_DONE;
		}
		snprintf(msg, sizeof(msg), "the deploy ramdisk failed: %.300s",
			 m && *m ? m : "(no message)");
		lifecycle_step_condition(x, BOOT_CONDITION, COND_FALSE, "DeployFailed", msg);
		snprintf(x->err, sizeof(x->err), "%.250s", msg);
		return STEP_FAIL;
	}
	if (timed_out(x, "DeployTimeout",
		      "no deploy report from the ramdisk: it stopped between inspection and the "
		      "end of the image write"))
		return STEP_FAIL;
	return waiting(x, "WaitingForDeploy",
		       "waiting for the deploy ramdisk to write the image (POST /boot/deployed)");
}

enum step_result lifecycle_step_wait_disk_boot(struct step_ctx *x)
{
	json_t *r = json_object_get(x->op->params, "diskBoot");
	const char *id = jsonx_str(r, "bootId");
	if (id) {
		/* lifecycle_agent_booted recorded it as the node's last boot too; validation's
		 * burn-in report is matched to that boot id */
		char msg[200];
		snprintf(msg, sizeof(msg), "the written system booted from disk (boot %.64s)", id);
		lifecycle_step_condition(x, BOOT_CONDITION, COND_TRUE, "BootedFromDisk", msg);
		return STEP_DONE;
	}
	if (timed_out(x, "DiskBootTimeout",
		      "no boot report from the written system: it did not boot from disk, or "
		      "cannot reach the boot service"))
		return STEP_FAIL;
	return waiting(x, "WaitingForDiskBoot",
		       "waiting for the written system to boot from disk (POST /boot/booted)");
}

/* ---------------------------------------------------------------- reports */

struct boot_report {
	struct lifecycle *lc;
	char *node;
	char *op_id;
	enum lifecycle_boot_kind kind;
	json_t *doc;
};

static void boot_report_free(struct boot_report *r)
{
	free(r->node);
	free(r->op_id);
	json_decref(r->doc);
	free(r);
}

static void boot_report_task(void *arg)
{
	struct boot_report *r = arg;
	struct lifecycle *lc = r->lc;
	const char *key = report_keys[r->kind];
	for (int attempt = 0; attempt < 8; attempt++) {
		struct operation *op = NULL;
		int rc = lifecycle_load_op(lc, r->op_id, &op);
		if (rc < 0 || strcmp(op->node, r->node) != 0 || op_state_terminal(op->state) ||
		    !json_is_object(json_object_get(op->params, "networkBoot")) ||
		    json_object_get(op->params, key) ||
		    !operation_at_or_before(op, netboot_report_step((int)r->kind))) {
			log_info("lifecycle: boot report ignored (operation not waiting for it) "
				 "node=%s op=%s report=%s",
				 r->node, r->op_id, key);
			operation_free(op);
			break;
		}
		json_t *v = json_deep_copy(r->doc);
		json_object_set_new(v, "at", json_integer(now_wall(lc)));
		json_object_set_new(lifecycle_op_params(op), key, v);
		rc = lifecycle_save_op(lc, op);
		operation_free(op);
		if (rc == 0) {
			workqueue_add(lc->wq, r->node);
			break;
		}
		if (rc != FP_ECONFLICT) {
			log_warn("lifecycle: could not record boot report node=%s report=%s rc=%s",
				 r->node, key, fp_err_name(rc));
			break;
		}
	}
	boot_report_free(r);
}

void lifecycle_boot_reported(struct lifecycle *lc, const char *node, const char *op_id,
			     enum lifecycle_boot_kind kind, const json_t *doc)
{
	if (!lc || !node || !op_id || (unsigned)kind > LIFECYCLE_BOOT_DISK_BOOTED ||
	    !json_is_object(doc))
		return;
	if (kind == LIFECYCLE_BOOT_DISK_BOOTED && jsonx_str(doc, "bootId"))
		lifecycle_agent_booted(lc, node, jsonx_str(doc, "bootId"));
	struct boot_report *r = xcalloc(1, sizeof(*r));
	r->lc = lc;
	r->node = xstrdup(node);
	r->op_id = xstrdup(op_id);
	r->kind = kind;
	r->doc = json_deep_copy(doc);
	struct fp_executor *e = lc->cfg.report_exec ? lc->cfg.report_exec : lc->cfg.exec;
	if (executor_submit(e, boot_report_task, r) < 0)
		boot_report_free(r);
}
