/* layers: base core agent */
/* fuzz_nvsmi.c - libFuzzer target for the nvidia-smi parsers (agent/nvsmi.h): one input goes
 * through nvsmi_parse_text, nvsmi_parse_xml (libxml2: no network, no entity substitution, no
 * DTD loading), nvsmi_parse (XML when it starts with '<') and nvsmi_nvlink_status_parse, and
 * every report that parses goes through its findings. Properties checked (a failure aborts):
 * a report never holds more than NVSMI_MAX_GPUS GPUs and GPU i has index i; a failed parse
 * leaves no GPUs; every count is -1 or >= 0, every yes/no field is -1, 0 or 1 and the GPU
 * utilisation is -1 or 0..100; the
 * findings never exceed the array they are given, every string in them is NUL-terminated
 * inside its buffer, their codes are from the contract, notice is 1 exactly for the notice
 * codes, and *unknown is 0 or 1; a truncated report is always unknown; gpu:count_mismatch
 * comes only from a whole report (not truncated, "Attached GPUs" equal to its GPUs: break
 * report 4b #5), and a partial GPU section gives no finding; the recovery fields are in their
 * ranges and a "[GPU requires reset]" reading of a whole section gives a gpu:* finding. Seeds: tests/fuzz/corpus/fuzz_nvsmi/ (the real samples of
 * tests/data/nvidia-smi). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nvsmi.h"

#include "base/banned.h"

#define CHECK(c)                                                                            \
	do {                                                                                \
		if (!(c)) {                                                                 \
			fprintf(stderr, "fuzz_nvsmi: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                            \
		}                                                                           \
	} while (0)

static struct nvsmi_report rep;
static struct nvsmi_nvlink_report nv;

static void check_str(const char *s, size_t n)
{
	CHECK(memchr(s, '\0', n) != NULL);
}

static void check_findings(const struct agent_finding *f, size_t n, size_t max, int unknown)
{
	static const char *const codes[] = {"ecc:dbe_volatile",     "row_remap:pending",
					    "row_remap:failure",    "retired_pages:pending",
					    "gpu:count_mismatch",   "thermal:hw_slowdown",
					    "thermal:sw_slowdown",  "thermal:over_limit",
					    "power:brake_slowdown", "nvlink:link_down",
					    "gpu:reset_required",   "gpu:reboot_required",
					    "gpu:drain_p2p",        "gpu:drain_and_reset"};
	CHECK(n <= max);
	CHECK(unknown == 0 || unknown == 1);
	for (size_t i = 0; i < n; i++) {
		int known = 0;
		check_str(f[i].source, sizeof(f[i].source));
		check_str(f[i].code, sizeof(f[i].code));
		check_str(f[i].pci_bus_id, sizeof(f[i].pci_bus_id));
		check_str(f[i].message, sizeof(f[i].message));
		check_str(f[i].key, sizeof(f[i].key));
		CHECK(strcmp(f[i].source, "nvidia-smi") == 0);
		for (size_t c = 0; c < sizeof(codes) / sizeof(codes[0]); c++)
			known |= strcmp(f[i].code, codes[c]) == 0;
		CHECK(known);
		CHECK(f[i].notice == (strcmp(f[i].code, "power:brake_slowdown") == 0 ||
				      strcmp(f[i].code, "thermal:sw_slowdown") == 0 ||
				      strcmp(f[i].code, "ecc:sbe_volatile") == 0));
	}
}

/* The report-level properties of nvsmi_findings (break report 4b #5). */
static void check_whole(const struct agent_finding *f, size_t n)
{
	int whole = !rep.truncated && rep.attached_gpus >= 0 &&
		    (size_t)rep.attached_gpus == rep.ngpus;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(f[i].code, "gpu:count_mismatch") == 0) {
			CHECK(whole);
			continue;
		}
		CHECK(f[i].gpu_index >= 0 && (size_t)f[i].gpu_index < rep.ngpus);
		CHECK(!rep.gpus[f[i].gpu_index].partial);
	}
}

static void check_report(int rc)
{
	struct agent_finding f[16];
	int unknown = -1, need_reset = 0;
	size_t n;
	CHECK(rep.ngpus <= NVSMI_MAX_GPUS);
	if (rc != 0) {
		CHECK(rep.ngpus == 0);
		return;
	}
	check_str(rep.driver_version, sizeof(rep.driver_version));
	check_str(rep.cuda_version, sizeof(rep.cuda_version));
	for (size_t i = 0; i < rep.ngpus; i++) {
		const struct nvsmi_gpu *g = &rep.gpus[i];
		CHECK(g->index == (int)i);
		check_str(g->pci_bus_id, sizeof(g->pci_bus_id));
		check_str(g->product, sizeof(g->product));
		check_str(g->uuid, sizeof(g->uuid));
		check_str(g->serial, sizeof(g->serial));
		CHECK(g->ecc_volatile_sbe >= -1 && g->ecc_volatile_dbe >= -1);
		CHECK(g->ecc_aggregate_sbe >= -1 && g->ecc_aggregate_dbe >= -1);
		CHECK(g->retired_sbe >= -1 && g->retired_dbe >= -1);
		CHECK(g->remap_correctable >= -1 && g->remap_uncorrectable >= -1);
		CHECK(g->remap_pending >= -1 && g->remap_pending <= 1);
		CHECK(g->remap_failure >= -1 && g->remap_failure <= 1);
		CHECK(g->retired_pending >= -1 && g->retired_pending <= 1);
		CHECK(g->ecc_mode_current >= NVSMI_NA && g->ecc_mode_current <= 1);
		CHECK(g->recovery_action >= NVSMI_NA &&
		      g->recovery_action <= AGENT_RECOVERY_SYSTEM_REBOOT);
		CHECK(g->reset_required >= NVSMI_NA && g->reset_required <= 1);
		CHECK(g->drain_and_reset >= NVSMI_NA && g->drain_and_reset <= 1);
		CHECK(g->requires_reset >= 0 && g->unreadable >= 0);
		check_str(g->requires_reset_field, sizeof(g->requires_reset_field));
		/* a "[GPU requires reset]" reading is always a finding, never only unknown */
		if (g->requires_reset > 0 && !g->partial)
			need_reset = 1;
		CHECK(g->gpu_util >= -1 && g->gpu_util <= 100);
		CHECK((g->throttle_active & g->throttle_unknown) == 0);
	}
	n = nvsmi_findings(&rep, 8, f, 16, &unknown);
	check_findings(f, n, 16, unknown);
	if (need_reset && n < 16) {
		int found = 0;
		for (size_t i = 0; i < n; i++)
			found |= strncmp(f[i].code, "gpu:", 4) == 0;
		CHECK(found);
	}
	check_whole(f, n);
	if (rep.truncated)
		CHECK(unknown == 1);
	n = nvsmi_findings(&rep, 0, f, 1, &unknown);
	check_findings(f, n, 1, unknown);
	check_whole(f, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	char err[256];
	struct agent_finding f[8];
	int unknown = -1, rc;

	rc = nvsmi_parse_text(buf, size, &rep, err, sizeof(err));
	check_report(rc);
	rc = nvsmi_parse_xml(buf, size, &rep, err, sizeof(err));
	check_report(rc);
	rc = nvsmi_parse(buf, size, &rep, err, sizeof(err));
	check_report(rc);
	if (nvsmi_nvlink_status_parse(buf, size, &nv, err, sizeof(err)) == 0) {
		size_t n;
		CHECK(nv.ngpus <= NVSMI_MAX_GPUS);
		n = nvsmi_nvlink_findings(&nv, f, 8, &unknown);
		check_findings(f, n, 8, unknown);
	}
	return 0;
}
