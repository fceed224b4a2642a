/* bmc_sim.c - simulated machines behind a simulated BMC (see bmc_sim.h for the model).
 *
 * Each machine is a struct sim_machine under the driver's lock, loaded lazily from the persist
 * callback. A side effect changes the machine, saves it, and only then returns, so a crash of
 * the control plane after the call can never lose it. Boot and burn-in completion are clock
 * timers; their due times are saved as wall-clock milliseconds so bmc_sim_resume_node can re-arm
 * them after a restart. */
#include "driver/bmc_sim.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/jsonx.h"

/* Real-world durations in milliseconds, before dividing by speed. */
#define SIM_BMC_MIN_MS 200
#define SIM_BMC_MAX_MS 1000
#define SIM_PXE_BOOT_MIN_MS 240000
#define SIM_PXE_BOOT_MAX_MS 360000
#define SIM_DISK_BOOT_MIN_MS 90000
#define SIM_DISK_BOOT_MAX_MS 120000
#define SIM_BURNIN_MIN_MS 120000
#define SIM_BURNIN_MAX_MS 180000
#define SIM_GPU_RESET_MIN_MS 10000 /* nvidia-smi --gpu-reset of one idle GPU */
#define SIM_GPU_RESET_MAX_MS 30000

struct sim_machine {
	char *node;
	enum bmc_power power;
	enum bmc_boot_device boot_dev;
	int boot_persistent;
	uint64_t boot_seq;       /* increments on each power-on */
	int64_t boot_due_wall;   /* agent callback due (0 = none pending) */
	int64_t burnin_due_wall; /* burn-in report due (0 = none pending) */
	int64_t reset_due_wall;  /* agent GPU reset answer due (0 = none pending) */
	int boot_pxe;            /* the pending boot is a PXE boot (then burn-in follows) */
	uint64_t timer;          /* pending clock timer, 0 = none */
	uint64_t gen;            /* bumps on every power change; stale timers compare it */
	long power_on, power_off, power_cycle, boot_set, gpu_reset;
	/* Saving without s->mu: the store write (durable: ~1 ms) would otherwise serialize every
	 * machine's calls and timers behind one mutex (at 3,000 nodes, most of the time to
	 * available). Each snapshot taken under s->mu gets the next snap_seq; save_mu orders the
	 * writes of this machine, and a snapshot older than one already written is not written
	 * (the newer one holds its change). */
	uint64_t snap_seq, saved_seq;
	pthread_mutex_t save_mu;
};

struct sim {
	struct bmc_sim_config cfg;
	struct fp_rng rng;       /* latencies */
	struct fp_rng fault_rng; /* faults, seeded */
	pthread_mutex_t mu;
	struct hmap machines;
	struct timer_arg *timers;
};

struct timer_arg {
	struct sim *s;
	char *node;
	uint64_t gen;
	uint64_t id;
	struct timer_arg *prev, *next; /* s->timers: every timer not yet fired */
};

static void timer_unlink(struct sim *s, struct timer_arg *ta)
{
	if (ta->prev)
		ta->prev->next = ta->next;
	else
		s->timers = ta->next;
	if (ta->next)
		ta->next->prev = ta->prev;
}

static struct sim *sim_of(struct bmc *b)
{
	return b->impl;
}

static int64_t scaled(struct sim *s, int64_t lo, int64_t hi)
{
	if (s->cfg.speed <= 0)
		return 0;
	int64_t ms = lo + (int64_t)fp_rng_below(&s->rng, (uint64_t)(hi - lo + 1));
	return (int64_t)((double)ms / s->cfg.speed);
}

static int fault(struct sim *s, unsigned kind)
{
	return s->cfg.fault_seed && (s->cfg.fault_kinds & kind) &&
	       fp_rng_double(&s->fault_rng) < s->cfg.fault_rate;
}

static json_t *machine_json(const struct sim_machine *m)
{
	char boot_id[32];
	snprintf(boot_id, sizeof(boot_id), "%s-%" PRIu64, m->node, m->boot_seq);
	return json_pack("{s:s,s:s,s:b,s:s,s:I,s:I,s:I,s:I,s:b,s:{s:I,s:I,s:I,s:I,s:I}}", "power",
			 bmc_power_name(m->power), "bootDevice", bmc_boot_name(m->boot_dev),
			 "bootPersistent", m->boot_persistent, "bootId", boot_id, "bootSeq",
			 (json_int_t)m->boot_seq, "bootDueAt", (json_int_t)m->boot_due_wall,
			 "burnInDueAt", (json_int_t)m->burnin_due_wall, "resetDueAt",
			 (json_int_t)m->reset_due_wall, "bootPxe", m->boot_pxe, "counters",
			 "powerOn", (json_int_t)m->power_on, "powerOff", (json_int_t)m->power_off,
			 "powerCycle", (json_int_t)m->power_cycle, "bootSet",
			 (json_int_t)m->boot_set, "gpuReset", (json_int_t)m->gpu_reset);
}

/* m's state as the text to save, numbered (*seq); NULL when nothing is saved. Caller holds
 * s->mu. */
static char *snapshot(struct sim *s, struct sim_machine *m, uint64_t *seq)
{
	if (!s->cfg.save)
		return NULL;
	json_t *j = machine_json(m);
	char *txt = jsonx_dumps(j);
	json_decref(j);
	*seq = ++m->snap_seq;
	return txt;
}

/* Writes snapshot txt (freed) of m, numbered seq, unless a newer one is written already.
 * Called without s->mu (m is never freed while the sim runs). Returns 0 or the save's error. */
static int save_snapshot(struct sim *s, struct sim_machine *m, char *txt, uint64_t seq)
{
	if (!txt)
		return 0;
	int rc = 0;
	pthread_mutex_lock(&m->save_mu);
	if (seq > m->saved_seq) {
		rc = s->cfg.save(s->cfg.arg, m->node, txt);
		if (rc == 0)
			m->saved_seq = seq;
	}
	pthread_mutex_unlock(&m->save_mu);
	free(txt);
	return rc;
}

/* Caller holds s->mu. */
static struct sim_machine *machine_get(struct sim *s, const char *node)
{
	struct sim_machine *m = hmap_get(&s->machines, node);
	if (m)
		return m;
	m = xcalloc(1, sizeof(*m));
	m->node = xstrdup(node);
	pthread_mutex_init(&m->save_mu, NULL);
	m->power = BMC_POWER_OFF;
	m->boot_dev = BMC_BOOT_DISK;
	char *txt = NULL;
	if (s->cfg.load && s->cfg.load(s->cfg.arg, node, &txt) == 0 && txt) {
		json_t *j = NULL;
		if (jsonx_parse(txt, strlen(txt), &j, NULL, 0) == 0) {
			const char *p = json_string_value(json_object_get(j, "power"));
			const char *d = json_string_value(json_object_get(j, "bootDevice"));
			m->power = p && strcmp(p, "on") == 0 ? BMC_POWER_ON : BMC_POWER_OFF;
			m->boot_dev = d && strcmp(d, "pxe") == 0 ? BMC_BOOT_PXE : BMC_BOOT_DISK;
			m->boot_persistent = json_is_true(json_object_get(j, "bootPersistent"));
			m->boot_seq = (uint64_t)json_integer_value(json_object_get(j, "bootSeq"));
			m->boot_due_wall = json_integer_value(json_object_get(j, "bootDueAt"));
			m->burnin_due_wall = json_integer_value(json_object_get(j, "burnInDueAt"));
			m->reset_due_wall = json_integer_value(json_object_get(j, "resetDueAt"));
			m->boot_pxe = json_is_true(json_object_get(j, "bootPxe"));
			json_t *c = json_object_get(j, "counters");
			m->power_on = (long)json_integer_value(json_object_get(c, "powerOn"));
			m->power_off = (long)json_integer_value(json_object_get(c, "powerOff"));
			m->power_cycle = (long)json_integer_value(json_object_get(c, "powerCycle"));
			m->boot_set = (long)json_integer_value(json_object_get(c, "bootSet"));
			m->gpu_reset = (long)json_integer_value(json_object_get(c, "gpuReset"));
			json_decref(j);
		}
	}
	free(txt);
	hmap_put(&s->machines, node, m);
	return m;
}

static void arm(struct sim *s, struct sim_machine *m);

static void on_timer(void *arg)
{
	struct timer_arg *ta = arg;
	struct sim *s = ta->s;
	enum bmc_sim_notice what = 0;
	char boot_id[96];
	int passed = 1, lost = 0;
	char *snap = NULL;
	uint64_t seq = 0;
	pthread_mutex_lock(&s->mu);
	timer_unlink(s, ta);
	struct sim_machine *m = hmap_get(&s->machines, ta->node);
	if (m && m->gen == ta->gen && m->power == BMC_POWER_ON) {
		m->timer = 0;
		int64_t now = clock_wall_ms(s->cfg.clock);
		snprintf(boot_id, sizeof(boot_id), "%s-%" PRIu64, m->node, m->boot_seq);
		if (m->boot_due_wall) {
			what = BMC_SIM_BOOTED;
			lost = fault(s, BMC_SIM_FAULT_LOST_CALLBACK);
			m->boot_due_wall = 0;
			/* the deploy image (PXE) or the node agent (disk) runs burn-in */
			m->burnin_due_wall = now + scaled(s, SIM_BURNIN_MIN_MS, SIM_BURNIN_MAX_MS);
			if (m->burnin_due_wall == 0)
				m->burnin_due_wall = 1;
		} else if (m->reset_due_wall) {
			what = BMC_SIM_REMEDIATED;
			passed = !fault(s, BMC_SIM_FAULT_GPU_RESET);
			m->reset_due_wall = 0;
			/* after a reset the node agent re-runs burn-in on the same boot */
			m->burnin_due_wall = now + scaled(s, SIM_BURNIN_MIN_MS, SIM_BURNIN_MAX_MS);
			if (m->burnin_due_wall == 0)
				m->burnin_due_wall = 1;
		} else if (m->burnin_due_wall) {
			what = BMC_SIM_VALIDATED;
			m->burnin_due_wall = 0;
			m->boot_pxe = 0;
		}
		snap = snapshot(s, m, &seq);
		arm(s, m);
	}
	pthread_mutex_unlock(&s->mu);
	if (snap)
		save_snapshot(s, m, snap, seq);
	if (what && !lost && s->cfg.notify)
		s->cfg.notify(s->cfg.arg, ta->node, what, boot_id, passed);
	free(ta->node);
	free(ta);
}

/* Arms the timer for the next due event of m. Caller holds s->mu. */
static void arm(struct sim *s, struct sim_machine *m)
{
	int64_t due = m->boot_due_wall    ? m->boot_due_wall
		      : m->reset_due_wall ? m->reset_due_wall
					  : m->burnin_due_wall;
	if (!due || m->timer || m->power != BMC_POWER_ON)
		return;
	int64_t delay = due - clock_wall_ms(s->cfg.clock);
	struct timer_arg *ta = xmalloc(sizeof(*ta));
	ta->s = s;
	ta->node = xstrdup(m->node);
	ta->gen = m->gen;
	ta->prev = NULL;
	ta->next = s->timers;
	if (s->timers)
		s->timers->prev = ta;
	s->timers = ta;
	ta->id = m->timer = clock_after(s->cfg.clock, delay < 0 ? 0 : delay, on_timer, ta);
}

static void power_off_locked(struct sim *s, struct sim_machine *m)
{
	m->power = BMC_POWER_OFF;
	m->gen++;
	m->timer = 0; /* a pending timer sees the new gen and does nothing */
	m->boot_due_wall = m->burnin_due_wall = m->reset_due_wall = 0;
	m->boot_pxe = 0;
}

static void power_on_locked(struct sim *s, struct sim_machine *m)
{
	m->power = BMC_POWER_ON;
	m->gen++;
	m->timer = 0;
	m->boot_seq++;
	m->boot_pxe = m->boot_dev == BMC_BOOT_PXE;
	int64_t now = clock_wall_ms(s->cfg.clock);
	m->boot_due_wall = now + (m->boot_pxe
					  ? scaled(s, SIM_PXE_BOOT_MIN_MS, SIM_PXE_BOOT_MAX_MS)
					  : scaled(s, SIM_DISK_BOOT_MIN_MS, SIM_DISK_BOOT_MAX_MS));
	if (m->boot_due_wall == now)
		m->boot_due_wall = now ? now : 1;
	m->burnin_due_wall = m->reset_due_wall = 0;
	if (!m->boot_persistent && m->boot_pxe)
		m->boot_dev = BMC_BOOT_DISK; /* a one-time override is consumed by the boot */
}

/* BMC request latency; a timeout fault sleeps to the deadline. */
static int bmc_latency(struct sim *s, int64_t deadline, char *err, size_t errlen)
{
	if (fault(s, BMC_SIM_FAULT_TIMEOUT)) {
		int64_t now = clock_now_ms(s->cfg.clock);
		int64_t wait = deadline > now ? deadline - now : 0;
		int64_t cap = scaled(s, 30000, 30000);
		clock_sleep_ms(s->cfg.clock, wait < cap || !cap ? wait : cap);
		return fp_errf(FP_ETIMEDOUT, err, errlen, "simulated BMC did not answer");
	}
	int64_t ms = scaled(s, SIM_BMC_MIN_MS, SIM_BMC_MAX_MS);
	if (ms)
		clock_sleep_ms(s->cfg.clock, ms);
	return 0;
}

static int sim_power_get(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			 enum bmc_power *out, char *err, size_t errlen)
{
	struct sim *s = sim_of(b);
	int rc = bmc_latency(s, deadline, err, errlen);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->mu);
	*out = machine_get(s, t->node)->power;
	pthread_mutex_unlock(&s->mu);
	if (fault(s, BMC_SIM_FAULT_WRONG_POWER)) /* a BMC that lies about power */
		*out = *out == BMC_POWER_ON ? BMC_POWER_OFF : BMC_POWER_ON;
	return 0;
}

static int sim_power_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			 enum bmc_power_action a, char *err, size_t errlen)
{
	struct sim *s = sim_of(b);
	int rc = bmc_latency(s, deadline, err, errlen);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->mu);
	struct sim_machine *m = machine_get(s, t->node);
	switch (a) {
	case BMC_ACTION_ON:
		if (m->power != BMC_POWER_ON) {
			power_on_locked(s, m);
			m->power_on++;
		}
		break;
	case BMC_ACTION_OFF:
	case BMC_ACTION_SOFT:
		if (m->power != BMC_POWER_OFF) {
			power_off_locked(s, m);
			m->power_off++;
		}
		break;
	case BMC_ACTION_CYCLE:
	case BMC_ACTION_RESET:
		power_off_locked(s, m);
		power_on_locked(s, m);
		m->power_cycle++;
		break;
	default:
		pthread_mutex_unlock(&s->mu);
		return fp_errf(FP_EINVAL, err, errlen, "unknown power action");
	}
	uint64_t seq = 0;
	char *snap = snapshot(s, m, &seq);
	arm(s, m);
	pthread_mutex_unlock(&s->mu);
	if (save_snapshot(s, m, snap, seq) < 0)
		return fp_errf(FP_EIO, err, errlen, "sim: could not save machine state");
	return 0;
}

static int sim_boot_get(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			struct bmc_boot *out, char *err, size_t errlen)
{
	struct sim *s = sim_of(b);
	int rc = bmc_latency(s, deadline, err, errlen);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->mu);
	struct sim_machine *m = machine_get(s, t->node);
	out->device = m->boot_dev;
	out->persistent = m->boot_persistent;
	out->mode = BMC_BOOT_MODE_UEFI; /* simulated machines boot UEFI */
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static int sim_boot_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			const struct bmc_boot *want, char *err, size_t errlen)
{
	enum bmc_boot_device d = want->device;
	int persistent = want->persistent;
	struct sim *s = sim_of(b);
	int rc = bmc_latency(s, deadline, err, errlen);
	if (rc < 0)
		return rc;
	if (d != BMC_BOOT_PXE && d != BMC_BOOT_DISK)
		return fp_errf(FP_EINVAL, err, errlen, "unknown boot device");
	pthread_mutex_lock(&s->mu);
	struct sim_machine *m = machine_get(s, t->node);
	m->boot_dev = d;
	m->boot_persistent = persistent;
	m->boot_set++;
	uint64_t seq = 0;
	char *snap = snapshot(s, m, &seq);
	pthread_mutex_unlock(&s->mu);
	rc = save_snapshot(s, m, snap, seq);
	return rc < 0 ? fp_errf(FP_EIO, err, errlen, "sim: could not save machine state") : 0;
}

static int sim_inventory(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
			 char *err, size_t errlen)
{
	struct sim *s = sim_of(b);
	int rc = bmc_latency(s, deadline, err, errlen);
	if (rc < 0)
		return rc;
	json_t *gpus = json_array();
	static const char *const bus[] = {"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0",
					  "0000:5d:00.0", "0000:9a:00.0", "0000:ab:00.0",
					  "0000:ba:00.0", "0000:db:00.0"};
	for (int i = 0; i < 8; i++) {
		char serial[40];
		snprintf(serial, sizeof(serial), "SIM%08x%02d",
			 (unsigned)(strlen(t->node) * 2654435761u), i);
		json_array_append_new(gpus, json_pack("{s:i,s:s,s:s,s:s}", "index", i, "model",
						      "NVIDIA H100 80GB HBM3", "pciBusId", bus[i],
						      "serial", serial));
	}
	*out = json_pack("{s:{s:s,s:s,s:s},s:{s:s,s:i},s:i,s:o}", "system", "manufacturer",
			 "fleetplane-sim", "model", "SIM-HGX-H100-8", "serialNumber", t->node,
			 "cpu", "model", "Intel Xeon Platinum 8480+", "sockets", 2, "memoryGiB",
			 2048, "gpus", gpus);
	return 0;
}

/* The simulated node agent takes "gpu_reset" on a running machine: it answers (notify
 * BMC_SIM_REMEDIATED) 10-30 s later, then runs burn-in again on the same boot. A reset asked
 * while one is pending is the same request (answered once). */
static int sim_agent_action(struct bmc *b, const struct bmc_target *t, const char *action,
			    int64_t deadline, char *err, size_t errlen)
{
	struct sim *s = sim_of(b);
	if (strcmp(action, "gpu_reset") != 0)
		return fp_errf(FP_EUNSUPPORTED, err, errlen,
			       "sim agent: unknown action \"%.32s\" (known: gpu_reset)", action);
	pthread_mutex_lock(&s->mu);
	struct sim_machine *m = machine_get(s, t->node);
	int rc = 0;
	char *snap = NULL;
	uint64_t seq = 0;
	if (m->power != BMC_POWER_ON || m->boot_due_wall) {
		rc = fp_errf(FP_ESTATE, err, errlen,
			     "sim agent: the machine is %s; its agent cannot reset a GPU",
			     m->power != BMC_POWER_ON ? "off" : "still booting");
	} else if (!m->reset_due_wall) {
		int64_t now = clock_wall_ms(s->cfg.clock);
		m->reset_due_wall = now + scaled(s, SIM_GPU_RESET_MIN_MS, SIM_GPU_RESET_MAX_MS);
		if (m->reset_due_wall == 0)
			m->reset_due_wall = 1;
		m->burnin_due_wall = 0; /* a burn-in in progress is cut short by the reset */
		m->gpu_reset++;
		m->gen++; /* a pending burn-in timer is stale now */
		m->timer = 0;
		snap = snapshot(s, m, &seq);
		arm(s, m);
	}
	pthread_mutex_unlock(&s->mu);
	if (snap && save_snapshot(s, m, snap, seq) < 0)
		rc = fp_errf(FP_EIO, err, errlen, "sim: could not save machine state");
	return rc;
}

static void sim_free(struct bmc *b)
{
	struct sim *s = sim_of(b);
	/* Timers that have not fired: cancel them and free their arguments. A timer that is
	 * firing right now waits on s->mu and unlinks itself first. */
	pthread_mutex_lock(&s->mu);
	while (s->timers) {
		struct timer_arg *ta = s->timers;
		timer_unlink(s, ta);
		if (clock_cancel(s->cfg.clock, ta->id) == 0) {
			free(ta->node);
			free(ta);
		}
	}
	pthread_mutex_unlock(&s->mu);
	for (struct hmap_iter it = hmap_iter_start(&s->machines); hmap_iter_next(&it);) {
		struct sim_machine *m = it.e->value;
		pthread_mutex_destroy(&m->save_mu);
		free(m->node);
		free(m);
	}
	hmap_release(&s->machines);
	fp_rng_release(&s->rng);
	fp_rng_release(&s->fault_rng);
	pthread_mutex_destroy(&s->mu);
	free(s);
	free(b);
}

/* bmc_driver_ops.validate: the sim takes any address, but not one with user info ('@', as in
 * "http://user:pw@host"): a password there would be stored and shown in GET /v1/nodes. The
 * message never echoes the address. */
static int sim_validate(const struct node_bmc *spec, const char **field, char *err, size_t errlen)
{
	*field = "spec.bmc.address";
	if (spec->address && strchr(spec->address, '@'))
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.address: user info ('@') is not allowed; use "
			       "spec.bmc.username and spec.bmc.password");
	*field = NULL;
	return 0;
}

const struct bmc_driver_ops bmc_sim_ops = {
	.name = "sim",
	.caps = BMC_CAP_POWER | BMC_CAP_BOOT_DEVICE | BMC_CAP_BOOT_READBACK | BMC_CAP_INVENTORY,
	.power_get = sim_power_get,
	.power_set = sim_power_set,
	.boot_get = sim_boot_get,
	.boot_set = sim_boot_set,
	.inventory = sim_inventory,
	.agent_action = sim_agent_action,
	.validate = sim_validate,
	.free = sim_free,
};

struct bmc *bmc_sim_new(const struct bmc_sim_config *cfg)
{
	if (!cfg || !cfg->clock || cfg->speed < 0)
		return NULL;
	struct sim *s = xcalloc(1, sizeof(*s));
	s->cfg = *cfg;
	if (s->cfg.fault_rate <= 0)
		s->cfg.fault_rate = 0.05;
	if (s->cfg.fault_kinds == 0)
		s->cfg.fault_kinds = BMC_SIM_FAULT_TIMEOUT | BMC_SIM_FAULT_WRONG_POWER |
				     BMC_SIM_FAULT_LOST_CALLBACK | BMC_SIM_FAULT_GPU_RESET;
	fp_rng_init(&s->rng, cfg->fault_seed ? cfg->fault_seed ^ 0x51u : 0x51u);
	fp_rng_init(&s->fault_rng, cfg->fault_seed ? cfg->fault_seed : 1);
	pthread_mutex_init(&s->mu, NULL);
	hmap_init(&s->machines);
	struct bmc *b = xcalloc(1, sizeof(*b));
	b->ops = &bmc_sim_ops;
	b->clock = cfg->clock;
	b->impl = s;
	return b;
}

int bmc_sim_resume_node(struct bmc *b, const char *node)
{
	struct sim *s = sim_of(b);
	pthread_mutex_lock(&s->mu);
	struct sim_machine *m = machine_get(s, node);
	arm(s, m);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

json_t *bmc_sim_state(struct bmc *b, const char *node)
{
	struct sim *s = sim_of(b);
	pthread_mutex_lock(&s->mu);
	json_t *j = machine_json(machine_get(s, node));
	pthread_mutex_unlock(&s->mu);
	return j;
}
