/* sim_world.c - the world of `fleetplane sim` (sim.h) and its run loop: a store (mem: or SQLite
 * in a temp dir), a virtual clock, the simulated machines (driver/bmc_sim.c) behind a BMC
 * network that can go down (the bmc profile's site outages), the control plane (sim_plane.h:
 * the stepped fleet), and the people and programs around it:
 *   - each node's agent: reports the fault signals of sim_faults.c through health_report as
 *     the API would deliver them, after its detector's delay; its boot, burn-in and GPU reset
 *     callbacks wait while the control plane is down and are delivered when it is back;
 *   - the hardware truth: a fault stays until a rung strong enough ran (a GPU reset, a disk
 *     boot, a PXE boot) or a technician came; until then burn-in fails;
 *   - an operator who holds nodes for host maintenance and releases their own hold;
 *   - a technician who repairs failed nodes (RMA) after tech_hours and retries the ladder;
 *   - an on-call engineer who resets open correlated-failure breakers.
 * The fault window starts once every node is onboarded (available); metrics cover that window. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/timefmt.h"
#include "controller/gc.h"
#include "controller/health.h"
#include "core/codec.h"
#include "driver/bmc_sim.h"
#include "engine/clock.h"
#include "engine/objects.h"
#include "engine/ratelimit.h"
#include "sim/sim_int.h"
#include "sim/sim_plane.h"
#include "store/store.h"

#define START_WALL 1796000000000LL /* 2026-11-30T00:53:20Z */

/* numbers rounded to 6 decimals so the text is the same everywhere */
static json_t *num6(double v)
{
	return json_real(round(v * 1e6) / 1e6);
}

/* the hardware truth of one node */
struct sim_hw {
	enum sim_fix fix;
	int cause;         /* of the fault in force; -1 none */
	int64_t signal_at; /* virtual ms the last signal was emitted (0 none) */
	int false_hold;    /* the fault in force needs no repair (FIX_NONE / FIX_SELF) */
	int release_health, release_operator; /* marks for the checker */
	int tech_pending;
	int64_t held_at;
	int maint_active;
	int late;     /* PhaseDeadlineExceeded True at the last look */
	uint64_t seq; /* event ids */
};

enum wev_kind {
	WEV_FAULT = 1, /* schedule index in arg */
	WEV_REPORT,    /* node, cause in arg, repeat in arg2 */
	WEV_SELF_CLEAR,
	WEV_TECH,
	WEV_OP_RELEASE,
	WEV_GROUP_CLEAR, /* correlated group fixed by people: arg = first node, arg2 = span */
	WEV_OUTAGE_END,
	WEV_ONCALL,
	WEV_RESTART,
	WEV_SAMPLE,
	WEV_GC,
};

struct wev {
	int64_t at;
	uint64_t seq;
	int kind, node;
	long arg, arg2;
};

struct notice {
	int node;
	enum bmc_sim_notice what;
	char boot_id[64];
	int passed;
};

struct sim_world {
	struct sim_config cfg;
	const struct sim_plane_ops *ops;
	void *plane; /* NULL while down */
	struct store *store;
	char tmpdir[128];
	struct fp_clock *clock;
	struct bmc *machines;
	struct bmc net; /* the BMC network in front of the machines */
	struct bmc_driver_ops net_ops;
	struct ratelimit_config limits;
	long n;
	char **names;
	struct hmap idx;
	struct sim_hw *hw;
	struct sim_schedule sched;
	/* world events: a binary heap */
	struct wev *ev;
	size_t nev, capev;
	uint64_t evseq;
	struct notice *pend;
	size_t npend, cappend;
	int64_t t0;           /* clock now_ms when the fault window began (-1 before) */
	int64_t outage_until; /* now_ms scale */
	int64_t last_correlated;
	int faults_on;
	long steps;
	long crashes;
	long faults_injected;
	long by_cause[32];
	long correlated_events, outages;
	struct sim_checker chk;
	struct sim_metrics m;
	struct sim_sample *samples;
	size_t nsamples, capsamples;
	int stop;
	int onboarded;
	long available; /* nodes available without holds (for onboarding) */
	int *avail_flag;
	struct fp_rng rng;
};

/* ---------------------------------------------------------------- small accessors */

static int64_t sim_world_now(struct sim_world *w)
{
	int64_t now = clock_now_ms(w->clock);
	return w->t0 >= 0 ? now - w->t0 : now;
}

static int sim_world_node_index(struct sim_world *w, const char *name)
{
	uintptr_t v = (uintptr_t)hmap_get(&w->idx, name);
	return v ? (int)(v - 1) : -1;
}

static long sim_world_steps(struct sim_world *w)
{
	return w->steps;
}

static int sim_world_release_expected(struct sim_world *w, int i, const char *owner)
{
	int *f = strcmp(owner, "health") == 0 ? &w->hw[i].release_health
					      : &w->hw[i].release_operator;
	int v = *f;
	*f = 0;
	return v;
}

static int64_t hook_now(void *arg)
{
	return sim_world_now(arg);
}

static long hook_steps(void *arg)
{
	return sim_world_steps(arg);
}

static int hook_node_index(void *arg, const char *name)
{
	return sim_world_node_index(arg, name);
}

static int hook_release_expected(void *arg, int i, const char *owner)
{
	return sim_world_release_expected(arg, i, owner);
}

static void sim_world_node_seen(struct sim_world *w, int i, const struct sim_node_track *prev,
				const struct node *n);

static void hook_node_seen(void *arg, int i, const struct sim_node_track *prev,
			   const struct node *n)
{
	sim_world_node_seen(arg, i, prev, n);
}

/* ---------------------------------------------------------------- world events */

static void wev_push(struct sim_world *w, int64_t at, int kind, int node, long arg, long arg2)
{
	if (w->nev == w->capev) {
		w->capev = w->capev ? 2 * w->capev : 1024;
		w->ev = xrealloc(w->ev, w->capev * sizeof(*w->ev));
	}
	struct wev e = {at, w->evseq++, kind, node, arg, arg2};
	size_t i = w->nev++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (w->ev[p].at < e.at || (w->ev[p].at == e.at && w->ev[p].seq < e.seq))
			break;
		w->ev[i] = w->ev[p];
		i = p;
	}
	w->ev[i] = e;
}

static struct wev wev_pop(struct sim_world *w)
{
	struct wev top = w->ev[0], last = w->ev[--w->nev];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct wev *best = &last;
		if (l < w->nev && (w->ev[l].at < best->at ||
				   (w->ev[l].at == best->at && w->ev[l].seq < best->seq))) {
			m = l;
			best = &w->ev[l];
		}
		if (r < w->nev && (w->ev[r].at < best->at ||
				   (w->ev[r].at == best->at && w->ev[r].seq < best->seq)))
			m = r;
		if (m == i)
			break;
		w->ev[i] = w->ev[m];
		i = m;
	}
	if (w->nev)
		w->ev[i] = last;
	return top;
}

/* ---------------------------------------------------------------- the hook after each unit */

static void each(void *arg)
{
	struct sim_world *w = arg;
	w->steps++;
	sim_checker_step(&w->chk);
}

/* ---------------------------------------------------------------- machines and agents */

static int hw_save(void *arg, const char *node, const char *json)
{
	struct sim_world *w = arg;
	char key[STORE_MAX_KEY + 1];
	snprintf(key, sizeof(key), "/sim/hw/%s", node);
	return store_put(w->store, key, json, STORE_ANY, NULL);
}

static int hw_load(void *arg, const char *node, char **json)
{
	struct sim_world *w = arg;
	char key[STORE_MAX_KEY + 1];
	struct store_kv kv = {0};
	snprintf(key, sizeof(key), "/sim/hw/%s", node);
	*json = NULL;
	if (store_get(w->store, key, &kv) < 0)
		return 0;
	*json = kv.value;
	kv.value = NULL;
	store_kv_release(&kv);
	return 0;
}

/* a unresolved fault fails burn-in */
static int hw_broken(const struct sim_hw *h)
{
	return h->fix >= FIX_SELF;
}

static void hw_fixed_by(struct sim_hw *h, enum sim_fix strength)
{
	if (h->fix >= FIX_GPU_RESET && h->fix <= strength) {
		h->fix = FIX_NONE;
		h->cause = -1;
	}
}

static void deliver(struct sim_world *w, const struct notice *nt)
{
	const char *node = w->names[nt->node];
	if (nt->what == BMC_SIM_BOOTED)
		w->ops->booted(w->plane, node, nt->boot_id);
	else if (nt->what == BMC_SIM_REMEDIATED)
		w->ops->remediated(w->plane, node, nt->passed,
				   nt->passed ? "GPU reset" : "GPU reset failed");
	else
		w->ops->validated(w->plane, node, nt->boot_id, nt->passed);
}

/* The machines' agent calls back (from a clock timer): the hardware truth decides burn-in. */
static void hw_notify(void *arg, const char *node, enum bmc_sim_notice what, const char *boot_id,
		      int passed)
{
	struct sim_world *w = arg;
	int i = sim_world_node_index(w, node);
	if (i < 0)
		return;
	struct sim_hw *h = &w->hw[i];
	if (what == BMC_SIM_REMEDIATED) {
		hw_fixed_by(h, FIX_GPU_RESET);
	} else if (what == BMC_SIM_BOOTED) {
		json_t *st = bmc_sim_state(w->machines, node);
		int pxe = json_is_true(json_object_get(st, "bootPxe"));
		json_decref(st);
		hw_fixed_by(h, pxe ? FIX_REIMAGE : FIX_REBOOT);
	} else if (what == BMC_SIM_VALIDATED) {
		passed = passed && !hw_broken(h);
	}
	struct notice nt = {.node = i, .what = what, .passed = passed};
	snprintf(nt.boot_id, sizeof(nt.boot_id), "%s", boot_id ? boot_id : "");
	if (w->plane) {
		deliver(w, &nt);
		return;
	}
	if (w->npend == w->cappend) {
		w->cappend = w->cappend ? 2 * w->cappend : 256;
		w->pend = xrealloc(w->pend, w->cappend * sizeof(*w->pend));
	}
	w->pend[w->npend++] = nt;
}

/* The BMC network: while the site's BMC network is down every call times out. */
static int net_down(struct bmc *b, int64_t deadline, char *err, size_t errlen)
{
	struct sim_world *w = b->impl;
	int64_t now = clock_now_ms(w->clock);
	if (now >= w->outage_until)
		return 0;
	int64_t wait = deadline > now ? deadline - now : 0;
	clock_sleep_ms(w->clock, wait < 10 * SEC ? wait : 10 * SEC);
	return fp_errf(FP_ETIMEDOUT, err, errlen, "simulated BMC network outage");
}

static int net_power_get(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			 enum bmc_power *out, char *err, size_t errlen)
{
	struct sim_world *w = b->impl;
	int rc = net_down(b, deadline, err, errlen);
	return rc ? rc : bmc_sim_ops.power_get(w->machines, t, deadline, out, err, errlen);
}

static int net_power_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			 enum bmc_power_action a, char *err, size_t errlen)
{
	struct sim_world *w = b->impl;
	int rc = net_down(b, deadline, err, errlen);
	return rc ? rc : bmc_sim_ops.power_set(w->machines, t, deadline, a, err, errlen);
}

static int net_boot_get(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			struct bmc_boot *out, char *err, size_t errlen)
{
	struct sim_world *w = b->impl;
	int rc = net_down(b, deadline, err, errlen);
	return rc ? rc : bmc_sim_ops.boot_get(w->machines, t, deadline, out, err, errlen);
}

static int net_boot_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			const struct bmc_boot *want, char *err, size_t errlen)
{
	struct sim_world *w = b->impl;
	int rc = net_down(b, deadline, err, errlen);
	return rc ? rc : bmc_sim_ops.boot_set(w->machines, t, deadline, want, err, errlen);
}

static int net_inventory(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
			 char *err, size_t errlen)
{
	struct sim_world *w = b->impl;
	int rc = net_down(b, deadline, err, errlen);
	return rc ? rc : bmc_sim_ops.inventory(w->machines, t, deadline, out, err, errlen);
}

/* the agent's channel is the data network, not the BMC's: no outage here */
static int net_agent_action(struct bmc *b, const struct bmc_target *t, const char *action,
			    int64_t deadline, char *err, size_t errlen)
{
	struct sim_world *w = b->impl;
	return bmc_sim_ops.agent_action(w->machines, t, action, deadline, err, errlen);
}

/* ---------------------------------------------------------------- the control plane */

static int plane_up(struct sim_world *w, char *err, size_t errlen)
{
	struct sim_plane_config pc = {.store = w->store,
				      .clock = w->clock,
				      .driver = &w->net,
				      .rng_seed = w->cfg.seed * 1000003ULL + (uint64_t)w->crashes,
				      .heartbeat_timeout_s = 3650L * 86400,
				      .bmc_limits = &w->limits};
	w->plane = w->ops->up(&pc, err, errlen);
	if (!w->plane)
		return FP_EIO;
	/* the machines re-arm what was in flight (boots, resets, burn-ins) */
	for (long i = 0; i < w->n; i++)
		bmc_sim_resume_node(w->machines, w->names[i]);
	for (size_t k = 0; k < w->npend; k++)
		deliver(w, &w->pend[k]);
	w->npend = 0;
	return 0;
}

static void plane_down(struct sim_world *w)
{
	void *p = w->plane;
	w->plane = NULL;
	if (p)
		w->ops->down(p);
}

/* ---------------------------------------------------------------- building the world */

static void put_json(struct sim_world *w, const char *key, json_t *doc)
{
	char *v = jsonx_dumps(doc);
	store_put(w->store, key, v, STORE_ANY, NULL);
	free(v);
	json_decref(doc);
}

static int world_build(struct sim_world *w, char *err, size_t errlen)
{
	char uri[256];
	if (w->cfg.store_sqlite) {
		snprintf(w->tmpdir, sizeof(w->tmpdir), "/tmp/fleetplane-sim-XXXXXX");
		if (!mkdtemp(w->tmpdir))
			return fp_errf(FP_EIO, err, errlen, "cannot make a temp dir");
		snprintf(uri, sizeof(uri), "sqlite:%s/fleetplane.db", w->tmpdir);
	} else {
		snprintf(uri, sizeof(uri), "mem:");
	}
	int rc = store_open(uri, &w->store, err, errlen);
	if (rc < 0)
		return rc;
	w->clock = clock_virtual_new(START_WALL);
	struct bmc_sim_config sc = {.clock = w->clock,
				    .speed = 1,
				    .fault_seed = (w->cfg.faults & SIM_FAULT_BMC) ? w->cfg.seed : 0,
				    .fault_rate = 0.01,
				    .notify = hw_notify,
				    .save = hw_save,
				    .load = hw_load,
				    .arg = w};
	w->machines = bmc_sim_new(&sc);
	w->net_ops = bmc_sim_ops;
	w->net_ops.power_get = net_power_get;
	w->net_ops.power_set = net_power_set;
	w->net_ops.boot_get = net_boot_get;
	w->net_ops.boot_set = net_boot_set;
	w->net_ops.inventory = net_inventory;
	w->net_ops.agent_action = net_agent_action;
	w->net_ops.free = NULL;
	w->net = (struct bmc){.ops = &w->net_ops, .clock = w->clock, .impl = w};
	w->limits = (struct ratelimit_config){.bmc_max_concurrency = 1,
					      .site_rate_per_s = 50,
					      .site_burst = 100,
					      .max_keys = 1u << 20};
	/* nodes: racks of rack_size, leaves of racks_per_leaf racks; one site */
	int64_t now = clock_wall_ms(w->clock);
	char ts[FP_TIME_LEN];
	fp_time_format(now, ts);
	w->names = xcalloc((size_t)w->n, sizeof(*w->names));
	hmap_init(&w->idx);
	json_t *site = json_pack("{s:s,s:{s:s,s:s},s:{s:s}}", "kind", "Site", "metadata", "name",
				 "sim-a", "createdAt", ts, "spec", "description",
				 "simulated site of fleetplane sim");
	put_json(w, "/sites/sim-a", site);
	for (long i = 0; i < w->n; i++) {
		long r = i / w->cfg.rack_size, l = r / w->cfg.racks_per_leaf;
		char name[64], rack[32], leaf[32], nvl[48];
		snprintf(rack, sizeof(rack), "r%04ld", r + 1);
		snprintf(leaf, sizeof(leaf), "leaf%03ld", l + 1);
		snprintf(nvl, sizeof(nvl), "nvl-%s", rack);
		snprintf(name, sizeof(name), "%sn%02ld", rack, i % w->cfg.rack_size + 1);
		w->names[i] = xstrdup(name);
		hmap_put(&w->idx, w->names[i], (void *)(uintptr_t)(i + 1));
		struct node *nd = node_new();
		nd->name = xstrdup(name);
		nd->uid = xstrdup(name);
		nd->site = xstrdup("sim-a");
		nd->rack = xstrdup(rack);
		nd->provider = xstrdup("sim");
		nd->bmc.driver = xstrdup("sim");
		nd->gpu_count = 8;
		nd->phase = PHASE_ENROLLED;
		nd->phase_since = nd->created_at = now;
		nd->labels = xcalloc(3, sizeof(*nd->labels));
		nd->labels[0].key = xstrdup("leaf");
		nd->labels[0].value = xstrdup(leaf);
		nd->labels[1].key = xstrdup("nvlink_domain");
		nd->labels[1].value = xstrdup(nvl);
		nd->labels[2].key = xstrdup("pdu");
		nd->labels[2].value = xstrdup(rack);
		nd->nlabels = 3;
		char key[STORE_MAX_KEY + 1];
		objects_key_node(key, sizeof(key), name);
		put_json(w, key, node_to_json(nd, NODE_JSON_STORE));
		node_free(nd);
	}
	put_json(w, "/budgets/rack",
		 json_pack("{s:s,s:{s:s},s:{s:s,s:i}}", "kind", "DisruptionBudget", "metadata",
			   "name", "rack", "spec", "domain", "rack", "maxUnavailable",
			   w->cfg.budget_rack));
	put_json(w, "/budgets/leaf",
		 json_pack("{s:s,s:{s:s},s:{s:s,s:i}}", "kind", "DisruptionBudget", "metadata",
			   "name", "leaf", "spec", "domain", "leaf", "maxUnavailable",
			   w->cfg.budget_leaf));
	w->hw = xcalloc((size_t)w->n, sizeof(*w->hw));
	for (long i = 0; i < w->n; i++)
		w->hw[i].cause = -1;
	w->avail_flag = xcalloc((size_t)w->n, sizeof(*w->avail_flag));
	return 0;
}

/* ---------------------------------------------------------------- what the checker tells us */

static void metrics_sched(struct sim_world *w, int delta)
{
	struct sim_metrics *m = &w->m;
	m->cur_sched += delta;
	if (w->t0 >= 0)
		sim_metrics_sched_point(m, sim_world_now(w), m->cur_sched);
}

static void push_det(struct sim_metrics *m, double v)
{
	if (m->ndet == m->capdet) {
		m->capdet = m->capdet ? 2 * m->capdet : 256;
		m->det_to_hold_ms = xrealloc(m->det_to_hold_ms, m->capdet * sizeof(double));
	}
	m->det_to_hold_ms[m->ndet++] = v;
}

static void sim_world_node_seen(struct sim_world *w, int i, const struct sim_node_track *prev,
				const struct node *n)
{
	struct sim_hw *h = &w->hw[i];
	int first = prev->phase == PHASE__COUNT;
	int sched = node_schedulable(n);
	int was = first ? 0 : prev->schedulable;
	if (sched != was)
		metrics_sched(w, sched - was);
	((struct sim_node_track *)prev)->schedulable = sched;
	int avail = n->phase == PHASE_AVAILABLE && n->nholds == 0;
	if (avail != w->avail_flag[i]) {
		w->available += avail - w->avail_flag[i];
		w->avail_flag[i] = avail;
	}
	if (w->t0 < 0)
		return; /* onboarding: not measured */
	int held = node_hold_find(n, "health") != NULL;
	if (held && !prev->health_held) {
		w->m.holds++;
		h->held_at = sim_world_now(w);
		if (h->fix == FIX_NONE || h->fix == FIX_SELF)
			w->m.false_holds++;
		if (h->signal_at)
			push_det(&w->m, (double)(h->held_at - h->signal_at));
	}
	if (prev->phase == PHASE_VALIDATING && n->phase == PHASE_AVAILABLE &&
	    sim_hist_new_success(n, prev->hist_at) && h->held_at) {
		const struct node_remediation_record
			*r = &n->remediation_history[n->nremediation_history - 1];
		int rung = strcmp(r->result, "succeeded") == 0 ? (int)r->rung : -1;
		if (rung >= 0) {
			int slot = h->tech_pending == 2 ? RUNG__COUNT : rung;
			w->m.mttr_sum_ms[slot] += (double)(sim_world_now(w) - h->held_at);
			w->m.mttr_n[slot]++;
			w->m.remediations_ok++;
			h->held_at = 0;
			h->tech_pending = 0;
		}
	}
	if (n->phase == PHASE_FAILED && prev->phase != PHASE_FAILED && h->tech_pending != 1) {
		h->tech_pending = 1;
		w->m.remediations_failed++;
		wev_push(w, clock_now_ms(w->clock) + (int64_t)(w->cfg.tech_hours * (double)HOUR),
			 WEV_TECH, i, 0, 0);
	}
	if (n->phase == PHASE_MAINTENANCE && held && h->tech_pending != 1) {
		/* a health hold on a node in maintenance: a rule without a ladder (cooling), or a
		 * fault that came while the node was in maintenance - its remediation never starts
		 * there (maintenance -> repairing is not in the phase table): a human looks */
		h->tech_pending = 1;
		wev_push(w, clock_now_ms(w->clock) + (int64_t)(w->cfg.tech_hours * (double)HOUR),
			 WEV_TECH, i, 0, 0);
	}
	const struct node_condition *dl = node_condition_get(n, "PhaseDeadlineExceeded");
	int late = dl && dl->status == COND_TRUE;
	if (late && !h->late) {
		w->m.deadline_exceeded++;
		if (!w->faults_on)
			sim_violation(&w->chk,
				      "%s: phase %s past its deadline after faults stopped: %s",
				      n->name, node_phase_name(n->phase),
				      dl->message ? dl->message : "");
	}
	h->late = late;
}

/* ---------------------------------------------------------------- agents report */

static void agent_report(struct sim_world *w, int i, json_t *event, const char *detector)
{
	if (!event)
		return;
	const char *node = w->names[i];
	json_t *body = json_pack("{s:{s:s, s:s, s:i}, s:[{s:s, s:b, s:s}], s:[o]}", "agent",
				 "version", "0.4.0", "bootId", "sim-boot", "intervalSeconds", 30,
				 "detectors", "name", detector, "live", 1, "status", "unhealthy",
				 "events", event);
	char actor[96], err[512] = "";
	snprintf(actor, sizeof(actor), "agent:%s", node);
	json_t *res = NULL;
	struct health *hc = w->ops->health(w->plane);
	int rc = health_report(hc, node, actor, body, clock_wall_ms(w->clock), &res, err,
			       sizeof(err));
	if (rc < 0)
		sim_violation(&w->chk, "health_report %s refused the agent's report: %s", node,
			      err);
	size_t k;
	json_t *d;
	json_array_foreach(json_object_get(res, "decisions"), k, d) {
		const char *a = jsonx_str(d, "action");
		if (a && strcmp(a, "suppressed") == 0)
			w->m.suppressed++;
	}
	json_decref(res);
	json_decref(body);
	w->steps++;
	sim_checker_step(&w->chk);
}

static void agent_event(struct sim_world *w, int i, int cause, uint64_t seq)
{
	char id[80];
	snprintf(id, sizeof(id), "sim-%s-%06" PRIu64, w->names[i], seq);
	int64_t wall = clock_wall_ms(w->clock);
	json_t *e = NULL;
	const char *det = "kernel";
	if (cause == SIM_EV_LEAF) {
		e = sim_signal_leaf(id, wall);
		det = "ibstat";
	} else if (cause == SIM_EV_NVSWITCH) {
		e = sim_signal_sxid(id, wall);
	} else {
		const struct sim_cause *c = &sim_causes[cause];
		e = sim_signal_event(c, id, wall);
		det = c->signal == SIG_IBSTAT ? "ibstat"
		      : c->signal == SIG_SMI  ? "nvidia-smi"
					      : "kernel";
	}
	agent_report(w, i, e, det);
}

/* The agent sees the signal after its detector's delay: the kernel log within seconds, the
 * probes (ibstat, nvidia-smi) on their 60 s round. */
static int64_t detect_delay(struct sim_world *w, int cause)
{
	int probe = cause == SIM_EV_LEAF ||
		    (cause >= 0 && (sim_causes[cause].signal == SIG_IBSTAT ||
				    sim_causes[cause].signal == SIG_SMI));
	return probe ? SEC + (int64_t)fp_rng_below(&w->rng, 60) * SEC
		     : 200 + (int64_t)fp_rng_below(&w->rng, 4800);
}

static int hold_mutate(struct node *n, struct objects_txn *tx, void *arg)
{
	int64_t now = *(int64_t *)arg;
	int rc = node_hold_add(n, "operator:ops", "host maintenance (sim)", now, 0);
	return rc < 0 ? rc : 1; /* objects_mutate_fn: 1 = write */
}

static int release_mutate(struct node *n, struct objects_txn *tx, void *arg)
{
	const char *owner = arg;
	return node_hold_release(n, owner) == 0; /* 1 = write, 0 = it had none */
}

static int update(struct sim_world *w, int i, objects_mutate_fn fn, void *arg, const char *actor,
		  const char *reason, const char *msg)
{
	char err[256] = "";
	struct objects_update u = {.actor = actor,
				   .ev_type = "Normal",
				   .ev_reason = reason,
				   .ev_msg = msg,
				   .now_ms = clock_wall_ms(w->clock),
				   .rnd = fp_rng_u64(&w->rng)};
	int rc = objects_update_node(w->store, w->names[i], fn, arg, &u, NULL, err, sizeof(err));
	if (getenv("FP_SIM_TRACE"))
		fprintf(stderr, "update node=%s reason=%s rc=%d rev=%lld %s\n", w->names[i], reason,
			rc, (long long)u.revision, err);
	w->steps++;
	sim_checker_step(&w->chk);
	return rc;
}

static int tech_mutate(struct node *n, struct objects_txn *tx, void *arg)
{
	int64_t now = *(int64_t *)arg;
	if (n->phase == PHASE_FAILED) {
		/* the part is replaced: a human retries the ladder from a reboot (DESIGN.md
		 * "failed -> repairing: a human decides") */
		n->phase = PHASE_REPAIRING;
		n->phase_since = now;
		node_remediation_release(&n->remediation);
		n->remediation.active = 1;
		n->remediation.ladder[0] = RUNG_REBOOT;
		n->remediation.nladder = 1;
		n->remediation.rung = 0;
		n->remediation.code = xstrdup("sim:technician");
		n->remediation.reason = xstrdup("part replaced by the technician; ladder retried");
		n->remediation.policy = xstrdup("default");
		n->remediation.since = now;
		return 1;
	}
	if (n->phase == PHASE_MAINTENANCE && node_hold_find(n, "health")) {
		/* an admin's audited release (DESIGN.md API) after the repair; a remediation the
		 * hold recorded is void with it */
		node_hold_release(n, "health");
		node_remediation_release(&n->remediation);
		return 1;
	}
	return 0; /* nothing to do */
}

static void technician(struct sim_world *w, int i)
{
	struct sim_hw *h = &w->hw[i];
	h->fix = FIX_NONE;
	h->cause = -1;
	int64_t now = clock_wall_ms(w->clock);
	h->release_health = 1;
	h->tech_pending = 2;
	int rc = update(w, i, tech_mutate, &now, "operator:technician", "TechnicianRepair",
			"sim: technician repaired the node");
	if (getenv("FP_SIM_TRACE"))
		fprintf(stderr, "technician node=%s rc=%d\n", w->names[i], rc);
	h->release_health = 0;
}

static void on_call(struct sim_world *w)
{
	struct health *hc = w->ops->health(w->plane);
	json_t *b = health_breakers(hc);
	size_t k;
	json_t *it;
	int64_t now = clock_now_ms(w->clock);
	json_array_foreach(json_object_get(b, "items"), k, it) {
		const char *name = jsonx_str(it, "metadata.name");
		if (!name || now < w->last_correlated)
			continue; /* the incident is still on: leave it open */
		/* a correlated incident the people fixed: nothing to replay; otherwise let
		 * fleetplane act on what it suppressed */
		int replay = now - w->last_correlated > 6 * HOUR;
		char err[256];
		json_t *res = NULL;
		health_breaker_reset_ex(hc, name, "operator:oncall", "sim: on-call reset", replay,
					&res, err, sizeof(err));
		json_decref(res);
		w->steps++;
		sim_checker_step(&w->chk);
	}
	json_decref(b);
}

static void inject(struct sim_world *w, const struct sim_fault *f)
{
	int64_t now = clock_now_ms(w->clock);
	if (f->cause == SIM_EV_CRASH) {
		if (!w->plane)
			return;
		plane_down(w);
		w->crashes++;
		wev_push(w, now + 20 * SEC, WEV_RESTART, -1, 0, 0);
		return;
	}
	if (f->cause == SIM_EV_BMC_OUTAGE) {
		w->outages++;
		if (now + f->clear_ms > w->outage_until)
			w->outage_until = now + f->clear_ms;
		return;
	}
	if (f->cause == SIM_EV_LEAF || f->cause == SIM_EV_NVSWITCH) {
		long span = f->cause == SIM_EV_LEAF ? (long)w->cfg.rack_size * w->cfg.racks_per_leaf
						    : w->cfg.rack_size;
		w->correlated_events++;
		if (now + f->clear_ms > w->last_correlated)
			w->last_correlated = now + f->clear_ms;
		for (long j = f->node; j < f->node + span && j < w->n; j++) {
			struct sim_hw *h = &w->hw[j];
			if (h->fix < FIX_TECH) {
				h->fix = FIX_TECH;
				h->cause = f->cause;
			}
			h->signal_at = sim_world_now(w);
			wev_push(w, now + detect_delay(w, f->cause), WEV_REPORT, (int)j, f->cause,
				 (long)++h->seq);
		}
		sim_metrics_interruption(&w->m, sim_world_now(w), f->node,
					 w->chk.tr[f->node].schedulable);
		wev_push(w, now + f->clear_ms, WEV_GROUP_CLEAR, (int)f->node, span, f->cause);
		return;
	}
	int i = f->node;
	const struct sim_cause *c = &sim_causes[f->cause];
	struct sim_hw *h = &w->hw[i];
	w->faults_injected++;
	w->by_cause[f->cause]++;
	if (c->interrupts)
		sim_metrics_interruption(&w->m, sim_world_now(w), i, w->chk.tr[i].schedulable);
	if (f->fix > h->fix) {
		h->fix = f->fix;
		h->cause = f->cause;
	}
	if (f->fix == FIX_SELF)
		wev_push(w, now + f->clear_ms, WEV_SELF_CLEAR, i, 0, 0);
	if (c->signal == SIG_NONE)
		return;
	h->signal_at = sim_world_now(w);
	if (c->signal == SIG_OPERATOR) {
		if (!h->maint_active) {
			h->maint_active = 1;
			update(w, i, hold_mutate, &now, "operator:ops", "HoldAdded",
			       "sim: host maintenance");
			wev_push(w, now + f->clear_ms, WEV_OP_RELEASE, i, 0, 0);
		}
		return;
	}
	wev_push(w, now + detect_delay(w, f->cause), WEV_REPORT, i, f->cause, (long)++h->seq);
}

static void sample(struct sim_world *w)
{
	if (w->nsamples == w->capsamples) {
		w->capsamples = w->capsamples ? 2 * w->capsamples : 1024;
		w->samples = xrealloc(w->samples, w->capsamples * sizeof(*w->samples));
	}
	struct sim_sample *s = &w->samples[w->nsamples++];
	memset(s, 0, sizeof(*s));
	s->t_h = (double)sim_world_now(w) / (double)HOUR;
	s->sched = w->m.cur_sched;
	for (long i = 0; i < w->n; i++) {
		const struct sim_node_track *t = &w->chk.tr[i];
		if (t->schedulable)
			continue;
		switch (t->phase) {
		case PHASE_DRAINING:
		case PHASE_REPAIRING:
		case PHASE_VALIDATING: s->out_health++; break;
		case PHASE_MAINTENANCE: s->out_maint++; break;
		case PHASE_FAILED: s->out_failed++; break;
		default: s->out_other++; break;
		}
	}
}

static void handle(struct sim_world *w, const struct wev *e)
{
	int64_t now = clock_now_ms(w->clock);
	switch (e->kind) {
	case WEV_FAULT:
		if (w->faults_on)
			inject(w, &w->sched.f[e->arg]);
		break;
	case WEV_REPORT:
		if (!w->plane) { /* the agent's outbox retries */
			wev_push(w, now + 30 * SEC, WEV_REPORT, e->node, e->arg, e->arg2);
			break;
		}
		agent_event(w, e->node, (int)e->arg, (uint64_t)e->arg2);
		if (e->arg >= 0 && sim_causes[e->arg].repeat && e->arg2 > 0 && w->faults_on &&
		    w->hw[e->node].fix == FIX_GPU_RESET && w->hw[e->node].cause == e->arg &&
		    !(e->arg2 & (1L << 40)))
			wev_push(w, now + 10 * MIN, WEV_REPORT, e->node, e->arg,
				 (long)(++w->hw[e->node].seq | (1L << 40)));
		break;
	case WEV_SELF_CLEAR:
		if (w->hw[e->node].fix == FIX_SELF) {
			w->hw[e->node].fix = FIX_NONE;
			w->hw[e->node].cause = -1;
		}
		break;
	case WEV_TECH: technician(w, e->node); break;
	case WEV_OP_RELEASE:
		w->hw[e->node].maint_active = 0;
		w->hw[e->node].release_operator = 1;
		update(w, e->node, release_mutate, "operator:ops", "operator:ops", "HoldReleased",
		       "sim: host maintenance done");
		w->hw[e->node].release_operator = 0;
		break;
	case WEV_GROUP_CLEAR:
		for (long j = e->node; j < e->node + e->arg && j < w->n; j++)
			if (w->hw[j].fix == FIX_TECH && w->hw[j].cause == (int)e->arg2) {
				w->hw[j].fix = FIX_NONE;
				w->hw[j].cause = -1;
			}
		break;
	case WEV_OUTAGE_END: break;
	case WEV_ONCALL:
		if (w->plane)
			on_call(w);
		wev_push(w, now + 30 * MIN, WEV_ONCALL, -1, 0, 0);
		break;
	case WEV_RESTART: {
		char err[512];
		if (plane_up(w, err, sizeof(err)) < 0)
			sim_violation(&w->chk, "control plane did not come back: %s", err);
		break;
	}
	case WEV_SAMPLE:
		if (w->faults_on) {
			sample(w);
			wev_push(w, now + (int64_t)w->cfg.sample_s * SEC, WEV_SAMPLE, -1, 0, 0);
		}
		break;
	case WEV_GC: {
		struct gc_config gc = {0};
		struct gc_result gr;
		gc_run_once(w->store, &gc, clock_wall_ms(w->clock), &gr);
		w->steps++;
		sim_checker_step(&w->chk);
		wev_push(w, now + DAY, WEV_GC, -1, 0, 0);
		break;
	}
	default: break;
	}
}

/* Moves time to `until` (now_ms scale): the plane's timers one by one, or, while it is down,
 * the clock alone (the machines keep running; their callbacks wait). */
static void run_to(struct sim_world *w, int64_t until)
{
	while (!w->chk.violations) {
		int64_t now = clock_now_ms(w->clock);
		if (now >= until)
			return;
		if (!w->plane) {
			clock_virtual_advance(w->clock, until - now);
			return;
		}
		int rc = w->ops->advance(w->plane, until, each, w);
		if (rc <= 0)
			return;
	}
}

static int converged(struct sim_world *w)
{
	return w->plane && w->available == w->n && sim_checker_running_ops(&w->chk) == 0 &&
	       w->npend == 0;
}

/* side effects at the hardware against the operations that asked for them */
static void check_side_effects(struct sim_world *w)
{
	for (long i = 0; i < w->n; i++) {
		json_t *st = bmc_sim_state(w->machines, w->names[i]);
		json_t *k = json_object_get(st, "counters");
		sim_checker_side_effects(&w->chk, (int)i, w->names[i],
					 (long)json_integer_value(json_object_get(k, "powerOn")),
					 (long)json_integer_value(json_object_get(k, "powerCycle")),
					 (long)json_integer_value(json_object_get(k, "powerOff")),
					 (long)json_integer_value(json_object_get(k, "gpuReset")));
		json_decref(st);
	}
}

static double availability(const struct sim_step *pts, size_t n, int64_t window, long nodes)
{
	double area = 0;
	for (size_t k = 0; k < n; k++) {
		int64_t a = pts[k].t, b = k + 1 < n ? pts[k + 1].t : window;
		if (b > window)
			b = window;
		if (b > a)
			area += (double)(b - a) * pts[k].n;
	}
	return window > 0 ? area / ((double)window * (double)nodes) : 0;
}

static long spares_needed(const struct sim_step *pts, size_t n, const struct sim_metrics *m,
			  int naive, const struct sim_config *cfg)
{
	long maxk = cfg->nodes / 4;
	for (long k = 0; k <= maxk; k++)
		if (sim_ettr(pts, n, m->window_ms, m->intr, m->nintr, naive, cfg->nodes - k,
			     cfg->ckpt_s, cfg->restart_s) >= cfg->ettr_target)
			return k;
	return -1;
}

static void sim_metrics_finish(struct sim_world *w, struct sim_result *res)
{
	struct sim_metrics *m = &w->m;
	const struct sim_config *cfg = &w->cfg;
	long job = cfg->nodes - cfg->spares;
	json_t *fp = json_object();
	json_object_set_new(fp, "gpu_availability",
			    num6(availability(m->pts, m->npts, m->window_ms, cfg->nodes)));
	json_object_set_new(fp, "ettr",
			    num6(sim_ettr(m->pts, m->npts, m->window_ms, m->intr, m->nintr, 0, job,
					  cfg->ckpt_s, cfg->restart_s)));
	json_object_set_new(fp, "spares_needed",
			    json_integer(spares_needed(m->pts, m->npts, m, 0, cfg)));
	json_object_set_new(fp, "holds", json_integer(m->holds));
	json_object_set_new(fp, "false_holds", json_integer(m->false_holds));
	json_object_set_new(fp, "suppressed", json_integer(m->suppressed));
	json_object_set_new(fp, "detection_to_hold_p99_s",
			    num6(sim_p99(m->det_to_hold_ms, m->ndet) / 1000.0));
	json_t *mt = json_object();
	for (int r = 0; r <= RUNG__COUNT; r++) {
		if (!m->mttr_n[r])
			continue;
		json_object_set_new(mt, r == RUNG__COUNT ? "technician" : remediation_rung_name(r),
				    num6(m->mttr_sum_ms[r] / (double)m->mttr_n[r] / 1000.0));
	}
	json_object_set_new(fp, "mttr_s", mt);
	json_t *peak = json_object();
	for (size_t b = 0; b < w->chk.nbudgets; b++)
		json_object_set_new(peak, w->chk.budgets[b].domain,
				    json_integer(w->chk.out_peak[b]));
	json_object_set_new(fp, "nodes_out_peak", peak);
	json_object_set_new(fp, "remediations_succeeded", json_integer(m->remediations_ok));
	json_object_set_new(fp, "nodes_failed", json_integer(m->remediations_failed));
	json_object_set_new(fp, "deadlines_exceeded", json_integer(m->deadline_exceeded));
	json_object_set_new(fp, "interruptions", json_integer((json_int_t)m->nintr));
	json_object_set_new(fp, "correlated_events", json_integer(w->correlated_events));
	json_object_set_new(fp, "bmc_outages", json_integer(w->outages));
	res->fleetplane = fp;

	struct sim_step *np = NULL;
	size_t nn = 0;
	long nf = 0, pr = 0, pl = 0;
	long drains = sim_naive(cfg, &w->sched, m->intr, m->nintr, &np, &nn, &nf, &pr, &pl);
	json_t *nv = json_object();
	json_object_set_new(nv, "policy",
			    json_string("naive: drain on any XID or agent finding, "
					"manual repair after a fixed delay, no "
					"budgets"));
	json_object_set_new(nv, "gpu_availability",
			    num6(availability(np, nn, m->window_ms, cfg->nodes)));
	json_object_set_new(nv, "ettr",
			    num6(sim_ettr(np, nn, m->window_ms, m->intr, m->nintr, 1, job,
					  cfg->ckpt_s, cfg->restart_s)));
	json_object_set_new(nv, "spares_needed", json_integer(spares_needed(np, nn, m, 1, cfg)));
	json_object_set_new(nv, "holds", json_integer(drains));
	json_object_set_new(nv, "false_holds", json_integer(nf));
	json_object_set_new(nv, "mttr_s",
			    json_pack("{s:o}", "manual", num6(cfg->naive_repair_hours * 3600)));
	json_object_set_new(nv, "nodes_out_peak",
			    json_pack("{s:i,s:i}", "rack", (int)pr, "leaf", (int)pl));
	res->baseline = nv;
	for (size_t k = 0; k < w->nsamples; k++)
		w->samples[k].naive = sim_step_at(np, nn,
						  (int64_t)(w->samples[k].t_h * (double)HOUR +
							    0.5));
	free(np);
	json_t *fc = json_object();
	for (size_t c = 0; c < sim_ncauses; c++)
		json_object_set_new(fc, sim_causes[c].name, json_integer(w->by_cause[c]));
	json_object_set_new(fc, "correlated", json_integer(w->correlated_events));
	res->faults = fc;
	res->samples = w->samples;
	res->nsamples = w->nsamples;
	w->samples = NULL;
}

int sim_run(const struct sim_config *cfg_in, const struct sim_plane_ops *ops,
	    struct sim_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof(*res));
	struct sim_world *w = xcalloc(1, sizeof(*w));
	w->cfg = *cfg_in;
	struct sim_config *cfg = &w->cfg;
	if (!cfg->ckpt_s)
		cfg->ckpt_s = 300;
	if (!cfg->restart_s)
		cfg->restart_s = 180;
	if (!cfg->ettr_target)
		cfg->ettr_target = 0.97;
	if (!cfg->tech_hours)
		cfg->tech_hours = 24;
	if (!cfg->naive_repair_hours)
		cfg->naive_repair_hours = 24;
	if (!cfg->rack_size)
		cfg->rack_size = 8;
	if (!cfg->racks_per_leaf)
		cfg->racks_per_leaf = 4;
	if (!cfg->budget_rack)
		cfg->budget_rack = 2;
	if (!cfg->budget_leaf)
		cfg->budget_leaf = 4;
	if (!cfg->sample_s)
		cfg->sample_s = 3600;
	if (!cfg->quiet_tail_days)
		cfg->quiet_tail_days = 7;
	res->cfg = *cfg;
	w->ops = ops;
	w->n = cfg->nodes;
	w->t0 = -1;
	fp_rng_init(&w->rng, cfg->seed ^ 0x5157u);
	int rc = world_build(w, err, errlen);
	if (rc < 0)
		goto out;
	sim_schedule_build(cfg, &w->sched);
	struct sim_checker_hooks hooks = {.arg = w,
					  .store = w->store,
					  .nodes = w->n,
					  .now = hook_now,
					  .steps = hook_steps,
					  .node_index = hook_node_index,
					  .node_seen = hook_node_seen,
					  .release_expected = hook_release_expected};
	sim_checker_init(&w->chk, &hooks);
	rc = plane_up(w, err, errlen);
	if (rc < 0)
		goto out;
	/* onboarding: every node enrolled -> inspecting -> provisioning -> validating ->
	 * available, with the BMC faults on but no node faults; at most 2 days */
	int64_t limit = clock_now_ms(w->clock) + 2 * DAY;
	w->ops->step(w->plane, each, w);
	while (w->available < w->n && !w->chk.violations && clock_now_ms(w->clock) < limit) {
		int64_t to = clock_now_ms(w->clock) + 10 * MIN;
		run_to(w, to < limit ? to : limit);
	}
	if (w->available < w->n && !w->chk.violations)
		sim_violation(&w->chk, "onboarding: %ld of %ld nodes available after 2 days",
			      w->available, w->n);
	w->t0 = clock_now_ms(w->clock);
	w->onboarded = 1;
	w->faults_on = 1;
	w->m.nodes = w->n;
	w->m.window_ms = (int64_t)(cfg->days * (double)DAY);
	sim_metrics_sched_point(&w->m, 0, w->m.cur_sched);
	for (size_t k = 0; k < w->sched.n; k++)
		wev_push(w, w->t0 + w->sched.f[k].at_ms, WEV_FAULT, w->sched.f[k].node, (long)k, 0);
	wev_push(w, w->t0, WEV_SAMPLE, -1, 0, 0);
	wev_push(w, w->t0 + DAY, WEV_GC, -1, 0, 0);
	wev_push(w, w->t0 + 30 * MIN, WEV_ONCALL, -1, 0, 0);
	int64_t end = w->t0 + w->m.window_ms;
	int64_t tail_end = end + (int64_t)cfg->quiet_tail_days * DAY;
	while (!w->chk.violations) {
		int64_t now = clock_now_ms(w->clock);
		if (w->faults_on && now >= end) {
			/* faults stop: the window's metrics are final; from here every node must
			 * converge */
			w->faults_on = 0;
			w->outage_until = 0;
			sim_metrics_sched_point(&w->m, w->m.window_ms, w->m.cur_sched);
			if (!w->plane) {
				char e2[512];
				if (plane_up(w, e2, sizeof(e2)) < 0)
					sim_violation(&w->chk,
						      "control plane did not come back: %s", e2);
			}
		}
		if (!w->faults_on && converged(w))
			break;
		if (!w->faults_on && now >= tail_end) {
			long bad = 0;
			char list[512] = "";
			size_t o = 0;
			for (long i = 0; i < w->n; i++)
				if (!w->avail_flag[i] && bad++ < 5)
					o += (size_t)snprintf(list + o,
							      o < sizeof(list) ? sizeof(list) - o
									       : 0,
							      "%s%s (%s)", o ? ", " : "",
							      w->names[i],
							      node_phase_name(w->chk.tr[i].phase));
			sim_violation(&w->chk,
				      "no convergence %d days after faults stopped: %ld nodes not "
				      "available without holds (%s), %zu operations running",
				      cfg->quiet_tail_days, bad, list,
				      sim_checker_running_ops(&w->chk));
			break;
		}
		int64_t next = w->nev ? w->ev[0].at : INT64_MAX;
		if (w->faults_on && next > end)
			next = end;
		if (!w->faults_on) {
			int64_t step = now + 10 * MIN;
			if (next > step)
				next = step;
			if (next > tail_end)
				next = tail_end;
		}
		run_to(w, next);
		now = clock_now_ms(w->clock);
		while (w->nev && w->ev[0].at <= now && !w->chk.violations) {
			struct wev e = wev_pop(w);
			handle(w, &e);
		}
	}
	if (!w->chk.violations)
		check_side_effects(w);
	res->violations = w->chk.violations;
	snprintf(res->violation, sizeof(res->violation), "%s", w->chk.first);
	res->steps = w->steps;
	res->crashes = w->crashes;
	res->faults_injected = w->faults_injected;
	sim_metrics_finish(w, res);
	rc = 0;
out:
	plane_down(w);
	sim_checker_release(&w->chk);
	sim_schedule_release(&w->sched);
	if (w->machines)
		bmc_free(w->machines);
	if (w->clock)
		clock_free(w->clock);
	store_close(w->store);
	if (w->tmpdir[0]) {
		char p[256];
		snprintf(p, sizeof(p), "%s/fleetplane.db", w->tmpdir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/fleetplane.db-wal", w->tmpdir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/fleetplane.db-shm", w->tmpdir);
		unlink(p);
		rmdir(w->tmpdir);
	}
	for (long i = 0; w->names && i < w->n; i++)
		free(w->names[i]);
	free(w->names);
	hmap_release(&w->idx);
	free(w->hw);
	free(w->avail_flag);
	free(w->ev);
	free(w->pend);
	free(w->samples);
	sim_metrics_release(&w->m);
	fp_rng_release(&w->rng);
	free(w);
	return rc;
}
