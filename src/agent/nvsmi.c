/* agent/nvsmi.c - parsers of `nvidia-smi -q` (text), `nvidia-smi -q -x` (XML, through libxml2)
 * and `nvidia-smi nvlink --status`, and the health findings of the nvidia-smi detector
 * (agent/nvsmi.h has the contract). Field names follow the nvidia-smi(1) man page ("ECC
 * Errors", "Retired Pages", "Remapped Rows", "Clocks Event Reasons" - "Clocks Throttle
 * Reasons" before driver 535 -, "Temperature") and the nvsmi_device_v11/v12 DTD tags for the
 * XML. Values nvidia-smi cannot read ("N/A", "[N/A]", "[Not Supported]", "ERR!",
 * "[Unknown Error]", empty) are Unknown (-1), never 0: the findings then say "unknown", so a
 * broken reading never passes for a healthy GPU (DESIGN.md principle 8). Pure: no I/O, no
 * clock; bounded input (NVSMI_MAX_INPUT) and GPU count (NVSMI_MAX_GPUS). */
#include "agent/nvsmi.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "base/err.h"

#include "agent/text.h"
#include "base/banned.h"

#define LINE_MAX_LEN 512
#define VAL_MAX_LEN 256
#define MAX_LEVELS 8

/* ---------- values ---------- */

/* A count: decimal digits, optionally followed by a blank and a unit ("639 bank(s)"). */
static int64_t parse_count(const char *v)
{
	int64_t n = 0;
	const char *p = v;
	if (!isdigit((unsigned char)*p))
		return NVSMI_UNKNOWN;
	for (; isdigit((unsigned char)*p); p++) {
		if (n > (INT64_MAX - 9) / 10)
			return NVSMI_UNKNOWN;
		n = n * 10 + (*p - '0');
	}
	if (*p != '\0' && *p != ' ')
		return NVSMI_UNKNOWN;
	return n;
}

/* A temperature "29 C" / "-8 C"; unknown when not of that form. */
static int parse_temp(const char *v, int unknown)
{
	int neg = 0, n = 0;
	const char *p = v;
	if (*p == '-') {
		neg = 1;
		p++;
	}
	if (!isdigit((unsigned char)*p))
		return unknown;
	for (; isdigit((unsigned char)*p); p++) {
		if (n > 1000)
			return unknown;
		n = n * 10 + (*p - '0');
	}
	if (!(*p == '\0' || strcmp(p, " C") == 0 || strcmp(p, "C") == 0))
		return unknown;
	return neg ? -n : n;
}

/* A utilisation "37 %" (or "37%"), 0..100; unknown when not of that form. */
static int parse_pct(const char *v)
{
	int n = 0;
	const char *p = v;
	if (!isdigit((unsigned char)*p))
		return NVSMI_UNKNOWN;
	for (; isdigit((unsigned char)*p); p++) {
		n = n * 10 + (*p - '0');
		if (n > 100)
			return NVSMI_UNKNOWN;
	}
	if (strcmp(p, " %") != 0 && strcmp(p, "%") != 0)
		return NVSMI_UNKNOWN;
	return n;
}

/* "N/A", "[N/A]", "Not Supported", "[Not Supported]" and (drivers 575+, the deprecated reset
 * status fields) "Requested functionality has been deprecated": no such reading here. */
static int is_na(const char *v)
{
	return strcmp(v, "N/A") == 0 || strcmp(v, "[N/A]") == 0 ||
	       strcmp(v, "Not Supported") == 0 || strcmp(v, "[Not Supported]") == 0 ||
	       strcmp(v, "Requested functionality has been deprecated") == 0;
}

/* nvidia-smi's placeholder for a reading NVML answered NVML_ERROR_RESET_REQUIRED. */
static int is_requires_reset(const char *v)
{
	return strcasecmp(v, "[GPU requires reset]") == 0 ||
	       strcasecmp(v, "GPU requires reset") == 0;
}

/* An error placeholder: "ERR!" or a bracketed value that is not [N/A] / [Not Supported]
 * ("[Unknown Error]", "[GPU requires reset]", "[GPU is lost]", "[Insufficient
 * Permissions]"). */
static int is_error_value(const char *v)
{
	return strcmp(v, "ERR!") == 0 || is_requires_reset(v) || (v[0] == '[' && !is_na(v));
}

/* "Yes" 1, "No" 0, N/A NVSMI_NA, else NVSMI_UNKNOWN. */
static int parse_yesno_na(const char *v)
{
	if (is_na(v))
		return NVSMI_NA;
	if (strcmp(v, "Yes") == 0)
		return 1;
	if (strcmp(v, "No") == 0)
		return 0;
	return NVSMI_UNKNOWN;
}

/* "GPU Recovery Action" words -> enum agent_recovery (finding.h); N/A NVSMI_NA; others
 * NVSMI_UNKNOWN. nvidia-smi prints "None", "Reset", "Reboot", "Drain P2P", "Drain and Reset";
 * the longer forms of NVML's enum names are accepted too. */
static int parse_recovery(const char *v)
{
	static const struct {
		const char *w;
		int action;
	} words[] = {
		{"None", AGENT_RECOVERY_NONE},
		{"Reset", AGENT_RECOVERY_GPU_RESET},
		{"GPU Reset", AGENT_RECOVERY_GPU_RESET},
		{"GPU Reset Required", AGENT_RECOVERY_GPU_RESET},
		{"Reboot", AGENT_RECOVERY_NODE_REBOOT},
		{"Node Reboot", AGENT_RECOVERY_NODE_REBOOT},
		{"Node Reboot Required", AGENT_RECOVERY_NODE_REBOOT},
		{"OS Reboot", AGENT_RECOVERY_NODE_REBOOT},
		{"Drain P2P", AGENT_RECOVERY_DRAIN_P2P},
		{"Drain and Reset", AGENT_RECOVERY_DRAIN_AND_RESET},
		{"Drain P2P and Reset", AGENT_RECOVERY_DRAIN_AND_RESET},
		{"Recover IMEX Domain", AGENT_RECOVERY_RECOVER_IMEX_DOMAIN},
		{"Bus Reset", AGENT_RECOVERY_BUS_RESET},
		{"System Reboot", AGENT_RECOVERY_SYSTEM_REBOOT},
	};
	if (is_na(v))
		return NVSMI_NA;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasecmp(v, words[i].w) == 0)
			return words[i].action;
	return NVSMI_UNKNOWN;
}

static int parse_yesno(const char *v)
{
	if (strcmp(v, "Yes") == 0)
		return 1;
	if (strcmp(v, "No") == 0)
		return 0;
	return NVSMI_UNKNOWN;
}

static int parse_enabled(const char *v)
{
	if (strcmp(v, "Enabled") == 0)
		return 1;
	if (strcmp(v, "Disabled") == 0)
		return 0;
	if (is_na(v))
		return NVSMI_NA;
	return NVSMI_UNKNOWN;
}

/* "00000000:3B:00.0" (or "0000:3b:00.0") -> "0000:3b:00.0"; "" when not a PCI bus id. */
static void norm_bus_id(const char *in, char *out, size_t outlen)
{
	unsigned dom_len = 0;
	const char *p = in;
	char tmp[FINDING_BUS_ID_LEN];
	out[0] = '\0';
	while (isxdigit((unsigned char)p[dom_len]))
		dom_len++;
	if (dom_len < 4 || dom_len > 8 || p[dom_len] != ':')
		return;
	p += dom_len - 4;
	/* dddd:bb:dd.f */
	for (int i = 0; i < 12; i++) {
		char c = p[i];
		int want_hex = !(i == 4 || i == 7 || i == 10);
		if (want_hex ? !isxdigit((unsigned char)c) : c != (i == 10 ? '.' : ':'))
			return;
		tmp[i] = (char)tolower((unsigned char)c);
	}
	if (p[12] != '\0' && !isspace((unsigned char)p[12]))
		return;
	tmp[12] = '\0';
	snprintf(out, outlen, "%s", tmp);
}

static void copy_str(char *dst, size_t dstlen, const char *v)
{
	/* unknown tokens leave the field "" */
	if (strcmp(v, "N/A") == 0 || strcmp(v, "[N/A]") == 0 || v[0] == '\0')
		dst[0] = '\0';
	else
		snprintf(dst, dstlen, "%s", v);
}

/* ECC counts are either a "Total" or the sum of the memory locations given; an unknown addend
 * makes the sum unknown. */
struct ecc_acc {
	int64_t sum, total;
	int n, unknown, has_total;
};

static void acc_add(struct ecc_acc *a, int64_t v)
{
	a->n++;
	if (v < 0 || a->unknown)
		a->unknown = 1;
	else if (a->sum > INT64_MAX - v)
		a->unknown = 1;
	else
		a->sum += v;
}

static int64_t acc_value(const struct ecc_acc *a)
{
	if (a->has_total)
		return a->total;
	if (a->n == 0 || a->unknown)
		return NVSMI_UNKNOWN;
	return a->sum;
}

enum {
	ACC_VOL_SBE,
	ACC_VOL_DBE,
	ACC_AGG_SBE,
	ACC_AGG_DBE,
	ACC_N
};

struct gpu_state {
	struct ecc_acc acc[ACC_N];
	int retired_yes, retired_no; /* pending blacklist / retirement answers */
	int complete;                /* the text section reached "Processes" */
	unsigned thr_seen;           /* NVSMI_THR_* whose line was read */
};

static void gpu_init(struct nvsmi_gpu *g, size_t index)
{
	memset(g, 0, sizeof(*g));
	g->index = (int)index;
	g->minor_number = NVSMI_UNKNOWN;
	g->ecc_mode_current = NVSMI_UNKNOWN;
	g->ecc_volatile_sbe = g->ecc_volatile_dbe = NVSMI_UNKNOWN;
	g->ecc_aggregate_sbe = g->ecc_aggregate_dbe = NVSMI_UNKNOWN;
	g->retired_sbe = g->retired_dbe = NVSMI_UNKNOWN;
	g->retired_pending = NVSMI_UNKNOWN;
	g->remap_correctable = g->remap_uncorrectable = NVSMI_UNKNOWN;
	g->remap_pending = g->remap_failure = NVSMI_UNKNOWN;
	g->temp_gpu = g->temp_mem = g->temp_slowdown = NVSMI_UNKNOWN;
	g->temp_shutdown = g->temp_max_operating = NVSMI_UNKNOWN;
	g->tlimit_margin = g->tlimit_slowdown = NVSMI_TLIMIT_UNKNOWN;
	g->tlimit_shutdown = g->tlimit_max_operating = NVSMI_TLIMIT_UNKNOWN;
	g->gpu_util = NVSMI_UNKNOWN;
	g->recovery_action = g->reset_required = g->drain_and_reset = NVSMI_NA;
}

static void gpu_finish(struct nvsmi_gpu *g, const struct gpu_state *st)
{
	g->ecc_volatile_sbe = acc_value(&st->acc[ACC_VOL_SBE]);
	g->ecc_volatile_dbe = acc_value(&st->acc[ACC_VOL_DBE]);
	g->ecc_aggregate_sbe = acc_value(&st->acc[ACC_AGG_SBE]);
	g->ecc_aggregate_dbe = acc_value(&st->acc[ACC_AGG_DBE]);
	g->retired_pending = st->retired_yes ? 1 : st->retired_no ? 0 : NVSMI_UNKNOWN;
	/* A reasons list without its HW Slowdown line cannot show the slowdown. */
	if (!(st->thr_seen & NVSMI_THR_HW_SLOWDOWN))
		g->throttle_unknown |= NVSMI_THR_HW_SLOWDOWN;
}

/* Notes a value of any GPU field: "[GPU requires reset]" anywhere, and in a health section
 * (health 1) an error placeholder (nvsmi.h, unreadable). */
static void note_value(struct nvsmi_gpu *g, const char *field, const char *v, int health)
{
	if (is_requires_reset(v)) {
		if (g->requires_reset++ == 0)
			snprintf(g->requires_reset_field, sizeof(g->requires_reset_field), "%s",
				 field);
	}
	if (health && is_error_value(v))
		g->unreadable++;
}

static void report_init(struct nvsmi_report *out)
{
	memset(out, 0, sizeof(*out));
	out->attached_gpus = NVSMI_UNKNOWN;
}

/* Clock event reason names: the text label and the XML tag suffix. */
static const struct {
	const char *text, *xml;
	unsigned bit;
} reasons[] = {
	{"Idle", "gpu_idle", NVSMI_THR_GPU_IDLE},
	{"Applications Clocks Setting", "applications_clocks_setting", NVSMI_THR_APP_CLOCKS},
	{"SW Power Cap", "sw_power_cap", NVSMI_THR_SW_POWER_CAP},
	{"HW Slowdown", "hw_slowdown", NVSMI_THR_HW_SLOWDOWN},
	{"HW Thermal Slowdown", "hw_thermal_slowdown", NVSMI_THR_HW_THERMAL_SLOWDOWN},
	{"HW Power Brake Slowdown", "hw_power_brake_slowdown", NVSMI_THR_HW_POWER_BRAKE_SLOWDOWN},
	{"Sync Boost", "sync_boost", NVSMI_THR_SYNC_BOOST},
	{"SW Thermal Slowdown", "sw_thermal_slowdown", NVSMI_THR_SW_THERMAL_SLOWDOWN},
	{"Display Clock Setting", "display_clocks_setting", NVSMI_THR_DISPLAY_CLOCKS},
};

/* The last line naming a reason wins (a reason is never both active and unknown). */
static void set_reason(struct nvsmi_gpu *g, struct gpu_state *st, unsigned bit, const char *v)
{
	st->thr_seen |= bit;
	g->throttle_active &= ~bit;
	g->throttle_unknown &= ~bit;
	if (strcmp(v, "Active") == 0)
		g->throttle_active |= bit;
	else if (strcmp(v, "Not Active") != 0)
		g->throttle_unknown |= bit;
}

static void set_retired_pending(struct gpu_state *st, const char *v)
{
	int yn = parse_yesno(v);
	if (yn == 1)
		st->retired_yes = 1;
	else if (yn == 0)
		st->retired_no = 1;
}

/* ---------- nvidia-smi's own failure ---------- */

int nvsmi_tool_error(const char *buf, size_t len, char *err, size_t errlen)
{
	static const char *const lines[] = {
		"Unable to determine the device handle",
		"No devices were found",
		"NVIDIA-SMI has failed",
		"Failed to initialize NVML",
	};
	size_t pos = 0;
	while (pos < len) {
		size_t end = pos, b = pos;
		while (end < len && buf[end] != '\n')
			end++;
		while (b < end && (buf[b] == ' ' || buf[b] == '\t' || buf[b] == '\r'))
			b++;
		for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
			size_t l = strlen(lines[i]);
			if (end - b >= l && memcmp(buf + b, lines[i], l) == 0) {
				char line[LINE_MAX_LEN];
				size_t n = end - b < sizeof(line) - 1 ? end - b : sizeof(line) - 1;
				memcpy(line, buf + b, n);
				line[n] = '\0';
				agent_text_trim(line);
				snprintf(err, errlen, "nvidia-smi failed: %s", line);
				return 1;
			}
		}
		pos = end + 1;
	}
	return 0;
}

/* ---------- text ---------- */

/* The sections (directly under a GPU) whose readings decide health. */
static int health_section(const char *s1)
{
	static const char *const names[] = {
		"ECC Mode",
		"ECC Errors",
		"Retired Pages",
		"Remapped Rows",
		"Temperature",
		"Clocks Event Reasons",
		"Clocks Throttle Reasons",
		"GPU Reset Status",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(s1, names[i]) == 0)
			return 1;
	return 0;
}

/* Applies one "key : value" line of a GPU section; sec[1..level-1] are the enclosing section
 * names (sec[1] the one directly under the GPU). */
static void text_field(struct nvsmi_gpu *g, struct gpu_state *st, char sec[][64], int level,
		       const char *key, const char *v)
{
	const char *s1 = level >= 2 ? sec[1] : "";
	note_value(g, key, v,
		   level == 1 ? strcmp(key, "GPU Recovery Action") == 0 : health_section(s1));
	if (level == 1) {
		if (strcmp(key, "Product Name") == 0)
			copy_str(g->product, sizeof(g->product), v);
		else if (strcmp(key, "Serial Number") == 0)
			copy_str(g->serial, sizeof(g->serial), v);
		else if (strcmp(key, "GPU UUID") == 0)
			copy_str(g->uuid, sizeof(g->uuid), v);
		else if (strcmp(key, "Minor Number") == 0) {
			int64_t n = parse_count(v);
			g->minor_number = n > 1000000 ? NVSMI_UNKNOWN : (int)n;
		} else if (strcmp(key, "GPU Recovery Action") == 0)
			g->recovery_action = parse_recovery(v);
		else if (strcmp(key, "Processes") == 0)
			st->complete = 1;
		return;
	}
	if (strcmp(s1, "ECC Mode") == 0 && level == 2 && strcmp(key, "Current") == 0) {
		g->ecc_mode_current = parse_enabled(v);
	} else if (strcmp(s1, "ECC Errors") == 0 && level >= 3) {
		int vol = strcmp(sec[2], "Volatile") == 0, agg = strcmp(sec[2], "Aggregate") == 0;
		int dbe;
		struct ecc_acc *a;
		if (!vol && !agg)
			return;
		if (level == 3) { /* 510+: SRAM/DRAM Correctable / Uncorrectable [Parity|SEC-DED] */
			if (strstr(key, "Uncorrectable"))
				dbe = 1;
			else if (strstr(key, "Correctable"))
				dbe = 0;
			else
				return;
			a = &st->acc[(vol ? ACC_VOL_SBE : ACC_AGG_SBE) + dbe];
			acc_add(a, parse_count(v));
		} else if (level == 4) { /* older: Single Bit / Double Bit > locations, Total */
			if (strcmp(sec[3], "Single Bit") == 0)
				dbe = 0;
			else if (strcmp(sec[3], "Double Bit") == 0)
				dbe = 1;
			else
				return;
			a = &st->acc[(vol ? ACC_VOL_SBE : ACC_AGG_SBE) + dbe];
			if (strcmp(key, "Total") == 0) {
				a->has_total = 1;
				a->total = parse_count(v);
			} else {
				acc_add(a, parse_count(v));
			}
		}
	} else if (strcasecmp(s1, "Retired Pages") == 0 && level == 2) {
		if (strcmp(key, "Single Bit ECC") == 0)
			g->retired_sbe = parse_count(v);
		else if (strcmp(key, "Double Bit ECC") == 0)
			g->retired_dbe = parse_count(v);
		else if (strncmp(key, "Pending", 7) == 0)
			set_retired_pending(st, v);
	} else if (strcmp(s1, "Remapped Rows") == 0 && level == 2) {
		if (strcmp(key, "Correctable Error") == 0)
			g->remap_correctable = parse_count(v);
		else if (strcmp(key, "Uncorrectable Error") == 0)
			g->remap_uncorrectable = parse_count(v);
		else if (strcmp(key, "Pending") == 0)
			g->remap_pending = parse_yesno(v);
		else if (strcmp(key, "Remapping Failure Occurred") == 0)
			g->remap_failure = parse_yesno(v);
	} else if (strcmp(s1, "Temperature") == 0 && level == 2) {
		if (strcmp(key, "GPU Current Temp") == 0)
			g->temp_gpu = parse_temp(v, NVSMI_UNKNOWN);
		else if (strcmp(key, "Memory Current Temp") == 0)
			g->temp_mem = parse_temp(v, NVSMI_UNKNOWN);
		else if (strcmp(key, "GPU Slowdown Temp") == 0)
			g->temp_slowdown = parse_temp(v, NVSMI_UNKNOWN);
		else if (strcmp(key, "GPU Shutdown Temp") == 0)
			g->temp_shutdown = parse_temp(v, NVSMI_UNKNOWN);
		else if (strcmp(key, "GPU Max Operating Temp") == 0)
			g->temp_max_operating = parse_temp(v, NVSMI_UNKNOWN);
		else if (strcmp(key, "GPU T.Limit Temp") == 0)
			g->tlimit_margin = parse_temp(v, NVSMI_TLIMIT_UNKNOWN);
		else if (strcmp(key, "GPU Slowdown T.Limit Temp") == 0)
			g->tlimit_slowdown = parse_temp(v, NVSMI_TLIMIT_UNKNOWN);
		else if (strcmp(key, "GPU Shutdown T.Limit Temp") == 0)
			g->tlimit_shutdown = parse_temp(v, NVSMI_TLIMIT_UNKNOWN);
		else if (strcmp(key, "GPU Max Operating T.Limit Temp") == 0)
			g->tlimit_max_operating = parse_temp(v, NVSMI_TLIMIT_UNKNOWN);
	} else if (strcmp(s1, "Utilization") == 0 && level == 2) {
		if (strcmp(key, "Gpu") == 0)
			g->gpu_util = parse_pct(v);
	} else if (strcmp(s1, "Clocks Event Reasons") == 0 ||
		   strcmp(s1, "Clocks Throttle Reasons") == 0) {
		for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
			if (strcmp(key, reasons[i].text) == 0)
				set_reason(g, st, reasons[i].bit, v);
	} else if (strcmp(s1, "GPU Reset Status") == 0 && level == 2) {
		if (strcmp(key, "Reset Required") == 0)
			g->reset_required = parse_yesno_na(v);
		else if (strcmp(key, "Drain and Reset Recommended") == 0)
			g->drain_and_reset = parse_yesno_na(v);
	}
}

static void text_end_gpu(struct nvsmi_report *out, struct gpu_state *st, struct nvsmi_gpu **cur)
{
	if (!*cur)
		return;
	gpu_finish(*cur, st);
	if (!st->complete) {
		(*cur)->partial = 1;
		out->truncated = 1;
	}
	*cur = NULL;
}

int nvsmi_parse_text(const char *buf, size_t len, struct nvsmi_report *out, char *err,
		     size_t errlen)
{
	struct nvsmi_gpu *cur = NULL;
	struct gpu_state st;
	char sec[MAX_LEVELS][64];
	char line[LINE_MAX_LEN];
	int seen = 0;
	size_t pos = 0;

	report_init(out);
	memset(&st, 0, sizeof(st));
	memset(sec, 0, sizeof(sec));
	if (len > NVSMI_MAX_INPUT)
		return fp_errf(FP_EINVAL, err, errlen,
			       "nvidia-smi -q output is %zu bytes, more than the %u allowed", len,
			       NVSMI_MAX_INPUT);
	if (nvsmi_tool_error(buf, len, err, errlen))
		return FP_EIO;
	while (pos < len) {
		size_t end = pos, n, indent = 0;
		char *colon, *key, *val;
		int level, has_val = 0;

		while (end < len && buf[end] != '\n')
			end++;
		/* nvidia-smi ends every line with a newline: a last line without one was cut
		 * (the output was read while it was being written), and its value may be cut
		 * too ("87 C" -> "8"). It is not read, unless the GPU section it is in already
		 * ended at "Processes" (nothing read there any more). */
		if (end >= len && !(cur && st.complete)) {
			if (cur)
				out->truncated = 1;
			break;
		}
		n = end - pos;
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, buf + pos, n);
		line[n] = '\0';
		pos = end + 1;
		for (size_t i = 0; line[i] == ' ' || line[i] == '\t'; i++)
			indent += line[i] == '\t' ? 4 : 1;
		agent_text_trim(line);
		if (line[0] == '\0')
			continue;

		colon = strstr(line, " : ");
		if (colon) {
			*colon = '\0';
			val = colon + 3;
			has_val = 1;
		} else if (line[strlen(line) - 1] == ':') {
			line[strlen(line) - 1] = '\0';
			val = line + strlen(line);
			has_val = 1;
		} else {
			val = line + strlen(line);
		}
		key = line;
		agent_text_trim(key);
		agent_text_trim(val);

		if (indent == 0) {
			if (!has_val && strncmp(key, "GPU ", 4) == 0 && strchr(key + 4, ':')) {
				text_end_gpu(out, &st, &cur);
				seen = 1;
				memset(&st, 0, sizeof(st));
				if (out->ngpus >= NVSMI_MAX_GPUS) {
					out->truncated = 1;
					continue;
				}
				cur = &out->gpus[out->ngpus];
				gpu_init(cur, out->ngpus);
				out->ngpus++;
				norm_bus_id(key + 4, cur->pci_bus_id, sizeof(cur->pci_bus_id));
				continue;
			}
			/* any other column-0 line ends a GPU section */
			text_end_gpu(out, &st, &cur);
			if (!has_val)
				continue;
			if (strcmp(key, "Attached GPUs") == 0) {
				int64_t a = parse_count(val);
				seen = 1;
				out->attached_gpus = a > 100000 ? NVSMI_UNKNOWN : (int)a;
			} else if (strcmp(key, "Driver Version") == 0) {
				copy_str(out->driver_version, sizeof(out->driver_version), val);
			} else if (strcmp(key, "CUDA Version") == 0) {
				copy_str(out->cuda_version, sizeof(out->cuda_version), val);
			}
			continue;
		}
		if (!cur)
			continue;
		level = (int)(indent / 4);
		if (level < 1)
			level = 1;
		if (level >= MAX_LEVELS)
			continue;
		{
			size_t kl = strnlen(key, sizeof(sec[level]) - 1);
			memcpy(sec[level], key, kl);
			sec[level][kl] = '\0';
		}
		for (int l = level + 1; l < MAX_LEVELS; l++)
			sec[l][0] = '\0';
		if (!has_val) {
			if (level == 1 && strcmp(key, "Processes") == 0)
				st.complete = 1;
			continue;
		}
		text_field(cur, &st, sec, level, key, val);
	}
	text_end_gpu(out, &st, &cur);
	if (!seen)
		return fp_errf(
			FP_EINVAL, err, errlen,
			"not nvidia-smi -q output: no \"Attached GPUs\" line and no GPU section");
	return 0;
}

/* ---------- XML ---------- */

static int is_elem(const xmlNode *n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static const xmlNode *child(const xmlNode *n, const char *name)
{
	for (const xmlNode *c = n ? n->children : NULL; c; c = c->next)
		if (is_elem(c, name))
			return c;
	return NULL;
}

/* The element's own text and CDATA children only (never entity content), trimmed, bounded. */
static void node_text(const xmlNode *n, char *out, size_t outlen)
{
	size_t used = 0;
	out[0] = '\0';
	for (const xmlNode *c = n ? n->children : NULL; c; c = c->next) {
		if ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) && c->content) {
			size_t l = strlen((const char *)c->content);
			if (used + l >= outlen)
				l = outlen - 1 - used;
			memcpy(out + used, c->content, l);
			used += l;
			out[used] = '\0';
		}
	}
	agent_text_trim(out);
}

static void child_text(const xmlNode *n, const char *name, char *out, size_t outlen)
{
	node_text(child(n, name), out, outlen);
}

static void xml_ecc(const xmlNode *side, struct ecc_acc *sbe, struct ecc_acc *dbe)
{
	char v[VAL_MAX_LEN];
	for (const xmlNode *c = side ? side->children : NULL; c; c = c->next) {
		const char *nm;
		if (c->type != XML_ELEMENT_NODE)
			continue;
		nm = (const char *)c->name;
		if (strcmp(nm, "single_bit") == 0 || strcmp(nm, "double_bit") == 0) {
			struct ecc_acc *a = nm[0] == 's' ? sbe : dbe;
			for (const xmlNode *l = c->children; l; l = l->next) {
				if (l->type != XML_ELEMENT_NODE)
					continue;
				node_text(l, v, sizeof(v));
				if (strcmp((const char *)l->name, "total") == 0) {
					a->has_total = 1;
					a->total = parse_count(v);
				} else {
					acc_add(a, parse_count(v));
				}
			}
		} else if (strstr(nm, "uncorrectable")) {
			node_text(c, v, sizeof(v));
			acc_add(dbe, parse_count(v));
		} else if (strstr(nm, "correctable")) {
			node_text(c, v, sizeof(v));
			acc_add(sbe, parse_count(v));
		}
	}
}

/* The elements (directly under <gpu>) whose readings decide health. */
static int xml_health_elem(const char *name)
{
	static const char *const names[] = {
		"ecc_mode",
		"ecc_errors",
		"retired_pages",
		"remapped_rows",
		"temperature",
		"clocks_event_reasons",
		"clocks_throttle_reasons",
		"gpu_reset_status",
		"gpu_recovery_action",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return 1;
	return 0;
}

/* note_value for every leaf element under n (depth: 0 = <gpu> itself; health: under one of
 * xml_health_elem). Bounded by the document, which libxml2 bounds (depth 256). */
static void xml_scan(const xmlNode *n, int depth, int health, struct nvsmi_gpu *g)
{
	char v[VAL_MAX_LEN];
	for (const xmlNode *c = n->children; c; c = c->next) {
		int h = health || (depth == 0 && xml_health_elem((const char *)c->name));
		int leaf = 1;
		if (c->type != XML_ELEMENT_NODE)
			continue;
		for (const xmlNode *k = c->children; k; k = k->next)
			if (k->type == XML_ELEMENT_NODE)
				leaf = 0;
		if (!leaf) {
			xml_scan(c, depth + 1, h, g);
			continue;
		}
		node_text(c, v, sizeof(v));
		note_value(g, (const char *)c->name, v, h);
	}
}

static void xml_gpu(const xmlNode *gn, struct nvsmi_gpu *g, struct gpu_state *st)
{
	char v[VAL_MAX_LEN];
	const xmlNode *n;
	xmlChar *id = xmlGetProp(gn, (const xmlChar *)"id");

	if (id) {
		norm_bus_id((const char *)id, g->pci_bus_id, sizeof(g->pci_bus_id));
		xmlFree(id);
	}
	child_text(gn, "product_name", v, sizeof(v));
	copy_str(g->product, sizeof(g->product), v);
	child_text(gn, "serial", v, sizeof(v));
	copy_str(g->serial, sizeof(g->serial), v);
	child_text(gn, "uuid", v, sizeof(v));
	copy_str(g->uuid, sizeof(g->uuid), v);
	child_text(gn, "minor_number", v, sizeof(v));
	{
		int64_t m = parse_count(v);
		g->minor_number = m > 1000000 ? NVSMI_UNKNOWN : (int)m;
	}
	child_text(child(gn, "ecc_mode"), "current_ecc", v, sizeof(v));
	g->ecc_mode_current = parse_enabled(v);

	n = child(gn, "ecc_errors");
	xml_ecc(child(n, "volatile"), &st->acc[ACC_VOL_SBE], &st->acc[ACC_VOL_DBE]);
	xml_ecc(child(n, "aggregate"), &st->acc[ACC_AGG_SBE], &st->acc[ACC_AGG_DBE]);

	n = child(gn, "retired_pages");
	child_text(child(n, "multiple_single_bit_retirement"), "retired_count", v, sizeof(v));
	g->retired_sbe = parse_count(v);
	child_text(child(n, "double_bit_retirement"), "retired_count", v, sizeof(v));
	g->retired_dbe = parse_count(v);
	child_text(n, "pending_blacklist", v, sizeof(v));
	set_retired_pending(st, v);
	child_text(n, "pending_retirement", v, sizeof(v));
	set_retired_pending(st, v);

	n = child(gn, "remapped_rows");
	child_text(n, "remapped_row_corr", v, sizeof(v));
	g->remap_correctable = parse_count(v);
	child_text(n, "remapped_row_unc", v, sizeof(v));
	g->remap_uncorrectable = parse_count(v);
	child_text(n, "remapped_row_pending", v, sizeof(v));
	g->remap_pending = parse_yesno(v);
	child_text(n, "remapped_row_failure", v, sizeof(v));
	g->remap_failure = parse_yesno(v);

	n = child(gn, "temperature");
	child_text(n, "gpu_temp", v, sizeof(v));
	g->temp_gpu = parse_temp(v, NVSMI_UNKNOWN);
	child_text(n, "memory_temp", v, sizeof(v));
	g->temp_mem = parse_temp(v, NVSMI_UNKNOWN);
	child_text(n, "gpu_temp_slow_threshold", v, sizeof(v));
	g->temp_slowdown = parse_temp(v, NVSMI_UNKNOWN);
	child_text(n, "gpu_temp_max_threshold", v, sizeof(v));
	g->temp_shutdown = parse_temp(v, NVSMI_UNKNOWN);
	child_text(n, "gpu_temp_max_gpu_threshold", v, sizeof(v));
	g->temp_max_operating = parse_temp(v, NVSMI_UNKNOWN);
	child_text(n, "gpu_temp_tlimit", v, sizeof(v));
	g->tlimit_margin = parse_temp(v, NVSMI_TLIMIT_UNKNOWN);
	child_text(n, "gpu_temp_slow_tlimit_threshold", v, sizeof(v));
	g->tlimit_slowdown = parse_temp(v, NVSMI_TLIMIT_UNKNOWN);
	child_text(n, "gpu_temp_max_tlimit_threshold", v, sizeof(v));
	g->tlimit_shutdown = parse_temp(v, NVSMI_TLIMIT_UNKNOWN);
	child_text(n, "gpu_temp_max_gpu_tlimit_threshold", v, sizeof(v));
	g->tlimit_max_operating = parse_temp(v, NVSMI_TLIMIT_UNKNOWN);

	child_text(child(gn, "utilization"), "gpu_util", v, sizeof(v));
	g->gpu_util = parse_pct(v);

	n = child(gn, "clocks_event_reasons");
	if (!n)
		n = child(gn, "clocks_throttle_reasons");
	for (const xmlNode *c = n ? n->children : NULL; c; c = c->next) {
		const char *nm = (const char *)c->name, *suffix;
		if (c->type != XML_ELEMENT_NODE)
			continue;
		if (strncmp(nm, "clocks_event_reason_", 20) == 0)
			suffix = nm + 20;
		else if (strncmp(nm, "clocks_throttle_reason_", 23) == 0)
			suffix = nm + 23;
		else
			continue;
		node_text(c, v, sizeof(v));
		for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
			if (strcmp(suffix, reasons[i].xml) == 0)
				set_reason(g, st, reasons[i].bit, v);
	}

	n = child(gn, "gpu_reset_status");
	if (child(n, "reset_required")) {
		child_text(n, "reset_required", v, sizeof(v));
		g->reset_required = parse_yesno_na(v);
	}
	if (child(n, "drain_and_reset_recommended")) {
		child_text(n, "drain_and_reset_recommended", v, sizeof(v));
		g->drain_and_reset = parse_yesno_na(v);
	}
	if (child(gn, "gpu_recovery_action")) {
		child_text(gn, "gpu_recovery_action", v, sizeof(v));
		g->recovery_action = parse_recovery(v);
	}
	xml_scan(gn, 0, 0, g);
	st->complete = 1;
}

int nvsmi_parse_xml(const char *buf, size_t len, struct nvsmi_report *out, char *err, size_t errlen)
{
	xmlParserCtxtPtr ctxt;
	xmlDocPtr doc;
	const xmlNode *root;
	char v[VAL_MAX_LEN];
	int rc = 0;

	report_init(out);
	if (len > NVSMI_MAX_INPUT)
		return fp_errf(FP_EINVAL, err, errlen,
			       "nvidia-smi -q -x output is %zu bytes, more than the %u allowed",
			       len, NVSMI_MAX_INPUT);
	if (nvsmi_tool_error(buf, len, err, errlen))
		return FP_EIO;
	ctxt = xmlNewParserCtxt();
	if (!ctxt)
		return fp_errf(FP_EINVAL, err, errlen, "libxml2 could not make a parser");
	/* no network, no entity substitution (no XML_PARSE_NOENT), no DTD loading */
	doc = xmlCtxtReadMemory(ctxt, buf, (int)len, "nvidia-smi.xml", NULL,
				XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc) {
		const xmlError *e = xmlCtxtGetLastError(ctxt);
		char msg[160];
		snprintf(msg, sizeof(msg), "%s", e && e->message ? e->message : "unknown error");
		agent_text_trim(msg);
		rc = fp_errf(FP_EINVAL, err, errlen,
			     "nvidia-smi -q -x output is not XML: line %d: %s", e ? e->line : 0,
			     msg);
		goto out;
	}
	root = xmlDocGetRootElement(doc);
	if (!root || !is_elem(root, "nvidia_smi_log")) {
		rc = fp_errf(
			FP_EINVAL, err, errlen,
			"not nvidia-smi -q -x output: the root element is not <nvidia_smi_log>");
		goto out;
	}
	child_text(root, "driver_version", v, sizeof(v));
	copy_str(out->driver_version, sizeof(out->driver_version), v);
	child_text(root, "cuda_version", v, sizeof(v));
	copy_str(out->cuda_version, sizeof(out->cuda_version), v);
	if (child(root, "attached_gpus")) {
		int64_t a;
		child_text(root, "attached_gpus", v, sizeof(v));
		a = parse_count(v);
		out->attached_gpus = a > 100000 ? NVSMI_UNKNOWN : (int)a;
	}
	for (const xmlNode *c = root->children; c; c = c->next) {
		struct gpu_state st;
		if (!is_elem(c, "gpu"))
			continue;
		if (out->ngpus >= NVSMI_MAX_GPUS) {
			out->truncated = 1;
			break;
		}
		memset(&st, 0, sizeof(st));
		gpu_init(&out->gpus[out->ngpus], out->ngpus);
		xml_gpu(c, &out->gpus[out->ngpus], &st);
		gpu_finish(&out->gpus[out->ngpus], &st);
		out->ngpus++;
	}
	if (out->ngpus == 0 && !child(root, "attached_gpus"))
		rc = fp_errf(FP_EINVAL, err, errlen,
			     "not nvidia-smi -q -x output: no <attached_gpus> and no <gpu>");
out:
	if (doc)
		xmlFreeDoc(doc);
	xmlFreeParserCtxt(ctxt);
	return rc;
}

int nvsmi_parse(const char *buf, size_t len, struct nvsmi_report *out, char *err, size_t errlen)
{
	size_t i = 0;
	while (i < len && isspace((unsigned char)buf[i]))
		i++;
	if (i < len && buf[i] == '<')
		return nvsmi_parse_xml(buf, len, out, err, errlen);
	return nvsmi_parse_text(buf, len, out, err, errlen);
}

/* ---------- findings ---------- */

/* The codes of this detector that are notices (agent/finding.h, notice): HW Power Brake
 * Slowdown is the power supply's request, SW Thermal Slowdown the driver keeping clocks under
 * its thermal target - both seen on healthy H100s (tests/data/nvidia-smi/h100-hgx-8gpu-q-*) -
 * and volatile correctable ECC errors are corrected (nvidia-smi(1), "ECC Errors"). */
static int code_is_notice(const char *code)
{
	return strcmp(code, "power:brake_slowdown") == 0 ||
	       strcmp(code, "thermal:sw_slowdown") == 0 || strcmp(code, "ecc:sbe_volatile") == 0;
}

static size_t add_finding(struct agent_finding *out, size_t max, size_t n, const char *code,
			  const struct nvsmi_gpu *g, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

static size_t add_finding(struct agent_finding *out, size_t max, size_t n, const char *code,
			  const struct nvsmi_gpu *g, const char *key, const char *fmt, ...)
{
	struct agent_finding *f;
	va_list ap;
	if (n >= max)
		return n;
	f = &out[n];
	memset(f, 0, sizeof(*f));
	snprintf(f->source, sizeof(f->source), "%s", "nvidia-smi");
	snprintf(f->code, sizeof(f->code), "%s", code);
	f->gpu_index = g ? g->index : -1;
	if (g)
		snprintf(f->pci_bus_id, sizeof(f->pci_bus_id), "%s", g->pci_bus_id);
	snprintf(f->key, sizeof(f->key), "%s", key);
	f->notice = code_is_notice(code);
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
	return n + 1;
}

/* The GPU's own requests for a reset, reboot or drain (nvsmi.h, nvsmi_findings): each code at
 * most once. */
static size_t recovery_findings(const struct nvsmi_gpu *g, struct agent_finding *out, size_t max,
				size_t n)
{
	const char *done[3] = {NULL, NULL, NULL};
	size_t nd = 0;
	const char *code = agent_recovery_code(g->recovery_action);
	char key[32];
	if (code) {
		snprintf(key, sizeof(key), "action=%d", g->recovery_action);
		n = add_finding(out, max, n, code, g, key,
				"GPU %d (%s): GPU Recovery Action %d (%s): the driver asks for it",
				g->index, g->pci_bus_id, g->recovery_action, code + 4);
		done[nd++] = code;
	}
	if (g->reset_required == 1) {
		code = g->drain_and_reset == 1 ? "gpu:drain_and_reset" : "gpu:reset_required";
		if (!(nd && strcmp(done[0], code) == 0)) {
			n = add_finding(out, max, n, code, g, "reset_status",
					"GPU %d (%s): GPU Reset Status: Reset Required Yes%s",
					g->index, g->pci_bus_id,
					g->drain_and_reset == 1
						? ", Drain and Reset Recommended Yes"
						: "");
			done[nd++] = code;
		}
	}
	if (g->requires_reset > 0) {
		int seen = 0;
		for (size_t i = 0; i < nd; i++)
			seen |= strcmp(done[i], "gpu:reset_required") == 0;
		if (!seen)
			n = add_finding(out, max, n, "gpu:reset_required", g, "placeholder",
					"GPU %d (%s): %d readings print [GPU requires reset] "
					"(first: %s)",
					g->index, g->pci_bus_id, g->requires_reset,
					g->requires_reset_field);
	}
	return n;
}

size_t nvsmi_findings(const struct nvsmi_report *r, int expected_gpus, struct agent_finding *out,
		      size_t max, int *unknown)
{
	size_t n = 0;
	char key[64];

	/* A report is whole when it has every GPU section its own header announces, each to
	 * its end: only then does a missing GPU mean a GPU the driver does not see, rather than
	 * an output cut off while it was read (break report 4b #5). */
	int whole = !r->truncated && r->attached_gpus >= 0 && (size_t)r->attached_gpus == r->ngpus;

	*unknown = whole ? 0 : 1;
	for (size_t i = 0; i < r->ngpus; i++) {
		const struct nvsmi_gpu *g = &r->gpus[i];
		/* HW Slowdown is asserted when HW Thermal Slowdown or HW Power Brake Slowdown is
		 * (nvidia-smi(1), "Clocks Event Reasons"). A power brake is the system's power
		 * supply asking the GPU to slow down, not heat: it is its own finding, so a fleet
		 * of H100s throttled by their PSUs is not held for cooling. */
		unsigned brake = g->throttle_active & NVSMI_THR_HW_POWER_BRAKE_SLOWDOWN;
		unsigned hw = (g->throttle_active & NVSMI_THR_HW_THERMAL_SLOWDOWN) ||
			      ((g->throttle_active & NVSMI_THR_HW_SLOWDOWN) && !brake);

		if (g->partial) {
			*unknown = 1;
			continue;
		}

		/* Readings that cannot be read leave health unproven (nvsmi.h): an unreadable ECC
		 * mode is not "ECC off", and the remap, temperature and slowdown checks need their
		 * values. */
		if (g->ecc_mode_current == NVSMI_UNKNOWN ||
		    (g->ecc_mode_current == 1 &&
		     (g->ecc_volatile_dbe < 0 || (g->remap_pending < 0 && g->retired_pending < 0))))
			*unknown = 1;
		if (g->remap_pending >= 0 && g->remap_failure < 0)
			*unknown = 1;
		if (g->temp_gpu == NVSMI_UNKNOWN ||
		    (g->temp_slowdown <= 0 && (g->tlimit_margin == NVSMI_TLIMIT_UNKNOWN ||
					       g->tlimit_slowdown == NVSMI_TLIMIT_UNKNOWN)))
			*unknown = 1;
		if (g->throttle_unknown & (NVSMI_THR_HW_SLOWDOWN | NVSMI_THR_HW_THERMAL_SLOWDOWN))
			*unknown = 1;
		if (g->recovery_action == NVSMI_UNKNOWN || g->reset_required == NVSMI_UNKNOWN ||
		    g->drain_and_reset == NVSMI_UNKNOWN || g->unreadable > 0)
			*unknown = 1;
		n = recovery_findings(g, out, max, n);
		if (g->ecc_volatile_dbe > 0) {
			snprintf(key, sizeof(key), "dbe=%lld", (long long)g->ecc_volatile_dbe);
			n = add_finding(out, max, n, "ecc:dbe_volatile", g, key,
					"GPU %d (%s): %lld volatile uncorrectable ECC errors",
					g->index, g->pci_bus_id, (long long)g->ecc_volatile_dbe);
		}
		if (g->remap_pending == 1)
			n = add_finding(out, max, n, "row_remap:pending", g, "",
					"GPU %d (%s): remapped rows pending (reset the GPU to "
					"activate), %lld correctable / %lld uncorrectable remaps",
					g->index, g->pci_bus_id, (long long)g->remap_correctable,
					(long long)g->remap_uncorrectable);
		if (g->remap_failure == 1)
			n = add_finding(out, max, n, "row_remap:failure", g, "",
					"GPU %d (%s): row remapping failure occurred", g->index,
					g->pci_bus_id);
		if (g->retired_pending == 1)
			n = add_finding(
				out, max, n, "retired_pages:pending", g, "",
				"GPU %d (%s): page retirement pending (%lld single bit, %lld "
				"double bit retired)",
				g->index, g->pci_bus_id, (long long)g->retired_sbe,
				(long long)g->retired_dbe);
		if (hw)
			n = add_finding(out, max, n, "thermal:hw_slowdown", g, "",
					"GPU %d (%s): clocks event HW Slowdown active%s", g->index,
					g->pci_bus_id,
					(g->throttle_active & NVSMI_THR_HW_THERMAL_SLOWDOWN)
						? " (HW Thermal Slowdown)"
						: "");
		if (brake)
			n = add_finding(out, max, n, "power:brake_slowdown", g, "",
					"GPU %d (%s): clocks event HW Power Brake Slowdown active "
					"(the system's power supply asserted the power brake)",
					g->index, g->pci_bus_id);
		if (g->throttle_active & NVSMI_THR_SW_THERMAL_SLOWDOWN)
			n = add_finding(out, max, n, "thermal:sw_slowdown", g, "",
					"GPU %d (%s): clocks event SW Thermal Slowdown active",
					g->index, g->pci_bus_id);
		if (g->temp_gpu >= 0 && g->temp_slowdown > 0 && g->temp_gpu >= g->temp_slowdown)
			n = add_finding(
				out, max, n, "thermal:over_limit", g, "",
				"GPU %d (%s): %d C, at or above its slowdown temperature %d C",
				g->index, g->pci_bus_id, g->temp_gpu, g->temp_slowdown);
		else if (g->tlimit_margin != NVSMI_TLIMIT_UNKNOWN &&
			 g->tlimit_slowdown != NVSMI_TLIMIT_UNKNOWN &&
			 g->tlimit_margin <= g->tlimit_slowdown)
			n = add_finding(
				out, max, n, "thermal:over_limit", g, "",
				"GPU %d (%s): T.Limit margin %d C, at or below its slowdown "
				"T.Limit %d C",
				g->index, g->pci_bus_id, g->tlimit_margin, g->tlimit_slowdown);
	}
	if (whole && expected_gpus > 0 && r->ngpus < (size_t)expected_gpus) {
		snprintf(key, sizeof(key), "gpus=%zu", r->ngpus);
		n = add_finding(out, max, n, "gpu:count_mismatch", NULL, key,
				"%zu GPUs seen by nvidia-smi, %d expected", r->ngpus,
				expected_gpus);
	}
	return n;
}

/* ---------- nvlink --status ---------- */

int nvsmi_nvlink_status_parse(const char *buf, size_t len, struct nvsmi_nvlink_report *out,
			      char *err, size_t errlen)
{
	struct nvsmi_nvlink_gpu *cur = NULL;
	char line[LINE_MAX_LEN];
	size_t pos = 0;
	int lineno = 0;

	memset(out, 0, sizeof(*out));
	if (len > NVSMI_MAX_INPUT)
		return fp_errf(FP_EINVAL, err, errlen,
			       "nvidia-smi nvlink output is %zu bytes, more than the %u allowed",
			       len, NVSMI_MAX_INPUT);
	if (nvsmi_tool_error(buf, len, err, errlen))
		return FP_EIO;
	while (pos < len) {
		size_t end = pos, n;
		unsigned idx;
		char rest[64];
		lineno++;
		while (end < len && buf[end] != '\n')
			end++;
		n = end - pos < sizeof(line) - 1 ? end - pos : sizeof(line) - 1;
		memcpy(line, buf + pos, n);
		line[n] = '\0';
		pos = end + 1;
		agent_text_trim(line);
		if (line[0] == '\0')
			continue;
		if (strncmp(line, "GPU ", 4) == 0 && sscanf(line + 4, "%u:", &idx) == 1) {
			if (out->ngpus >= NVSMI_MAX_GPUS) {
				out->truncated = 1;
				cur = NULL;
				continue;
			}
			cur = &out->gpus[out->ngpus++];
			cur->index = idx > 100000 ? -1 : (int)idx;
		} else if (strncmp(line, "Link ", 5) == 0 &&
			   sscanf(line + 5, "%u: %63[^\n]", &idx, rest) == 2) {
			double gbps;
			char unit[8];
			if (!cur)
				return fp_errf(FP_EINVAL, err, errlen,
					       "nvidia-smi nvlink line %d: a Link line before any "
					       "GPU line",
					       lineno);
			if (idx >= NVSMI_NVLINK_MAX_LINKS) {
				out->truncated = 1;
				continue;
			}
			cur->nlinks++;
			if (sscanf(rest, "%lf %7s", &gbps, unit) == 2 &&
			    strcmp(unit, "GB/s") == 0 && gbps > 0)
				cur->links_up++;
			else
				cur->down_mask |= 1u << idx;
		} else if (cur && strstr(line, "all links are inActive")) {
			cur->all_inactive = 1;
		}
	}
	if (out->ngpus == 0)
		return fp_errf(FP_EINVAL, err, errlen,
			       "not nvidia-smi nvlink --status output: no \"GPU N:\" line");
	return 0;
}

size_t nvsmi_nvlink_findings(const struct nvsmi_nvlink_report *r, struct agent_finding *out,
			     size_t max, int *unknown)
{
	size_t n = 0;
	int any_up = 0;

	*unknown = r->truncated ? 1 : 0;
	for (size_t i = 0; i < r->ngpus; i++)
		any_up |= r->gpus[i].links_up > 0;
	if (!any_up)
		return 0;
	for (size_t i = 0; i < r->ngpus && n < max; i++) {
		const struct nvsmi_nvlink_gpu *g = &r->gpus[i];
		struct agent_finding *f;
		if (!g->down_mask && !g->all_inactive)
			continue;
		f = &out[n++];
		memset(f, 0, sizeof(*f));
		snprintf(f->source, sizeof(f->source), "%s", "nvidia-smi");
		snprintf(f->code, sizeof(f->code), "%s", "nvlink:link_down");
		f->gpu_index = g->index;
		if (g->all_inactive && !g->down_mask) {
			snprintf(f->key, sizeof(f->key), "links=all");
			snprintf(f->message, sizeof(f->message),
				 "GPU %d: all NVLinks inactive while other GPUs' links are up",
				 g->index);
		} else {
			snprintf(f->key, sizeof(f->key), "links=%x", g->down_mask);
			snprintf(f->message, sizeof(f->message),
				 "GPU %d: NVLinks down (mask 0x%x), %d of %d up", g->index,
				 g->down_mask, g->links_up, g->nlinks);
		}
	}
	return n;
}
