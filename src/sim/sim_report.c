/* sim_report.c - the outcomes of `fleetplane sim` (sim.h): the schedulable-nodes step function
 * and what is derived from it (GPU availability, the ETTR of a fleet-wide job with checkpoints
 * and restarts, spares needed for a target ETTR), the naive baseline computed on the same fault
 * schedule, and the report as JSON, text, CSV and a gnuplot PNG.
 *
 * ETTR (effective training time ratio) is the share of wall time a job spends on progress it
 * keeps, as ByteRobust ("Robust LLM Training Infrastructure at ByteDance", 2025) and Meta's
 * Llama 3 report use it. The job runs on nodes - spares nodes while that many are schedulable;
 * a fault on one of its nodes (or capacity falling below its size) loses the work since the
 * last checkpoint and costs a restart. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "sim/sim_int.h"

void sim_metrics_sched_point(struct sim_metrics *m, int64_t t, int sched)
{
	if (m->npts && m->pts[m->npts - 1].t == t) {
		m->pts[m->npts - 1].n = sched;
		return;
	}
	if (m->npts == m->cappts) {
		m->cappts = m->cappts ? 2 * m->cappts : 1024;
		m->pts = xrealloc(m->pts, m->cappts * sizeof(*m->pts));
	}
	m->pts[m->npts++] = (struct sim_step){t, sched};
}

/* a deterministic uniform from (t, node) */
static double unif(int64_t t, int node)
{
	uint64_t x = (uint64_t)t * 0x9e3779b97f4a7c15ULL ^
		     (uint64_t)(node + 1) * 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return (double)(x >> 11) / 9007199254740992.0;
}

void sim_metrics_interruption(struct sim_metrics *m, int64_t t, int node, int sched)
{
	if (m->nintr == m->capintr) {
		m->capintr = m->capintr ? 2 * m->capintr : 256;
		m->intr = xrealloc(m->intr, m->capintr * sizeof(*m->intr));
	}
	m->intr[m->nintr++] = (struct sim_intr){t, node, sched, 1, unif(t, node)};
}

void sim_metrics_release(struct sim_metrics *m)
{
	free(m->pts);
	free(m->intr);
	free(m->det_to_hold_ms);
	memset(m, 0, sizeof(*m));
}

int sim_step_at(const struct sim_step *pts, size_t npts, int64_t t)
{
	size_t lo = 0, hi = npts;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (pts[mid].t <= t)
			lo = mid;
		else
			hi = mid;
	}
	return npts ? pts[lo].n : 0;
}

double sim_ettr(const struct sim_step *pts, size_t npts, int64_t window_ms,
		const struct sim_intr *intr, size_t nintr, int naive, long job, double ckpt_s,
		double restart_s)
{
	if (!npts || window_ms <= 0)
		return 0;
	double ckpt = ckpt_s * 1000, restart = restart_s * 1000;
	double useful = 0, since = 0, left = 0;
	int S = pts[0].n;
	int64_t t = 0;
	size_t p = 1, k = 0;
	for (;;) {
		int64_t tp = p < npts ? pts[p].t : window_ms;
		int64_t ti = k < nintr ? intr[k].t : window_ms;
		int64_t tn = tp < ti ? tp : ti;
		if (tn > window_ms)
			tn = window_ms;
		double dt = (double)(tn - t);
		if (S >= job && dt > 0) {
			double r = dt < left ? dt : left;
			left -= r;
			useful += dt - r;
			since = fmod(since + dt - r, ckpt);
		}
		t = tn;
		if (t >= window_ms)
			break;
		if (ti <= tp && k < nintr) {
			const struct sim_intr *in = &intr[k++];
			int on = naive ? in->naive_sched : in->fp_sched;
			if (S >= job && on && S > 0 && in->u < (double)job / (double)S) {
				useful -= since;
				since = 0;
				left = restart;
			}
		} else if (p < npts) {
			int was = S >= job;
			S = pts[p++].n;
			if (was && S < job) {
				useful -= since;
				since = 0;
				left = restart;
			}
		}
	}
	return useful > 0 ? useful / (double)window_ms : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double sim_p99(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	size_t r = (size_t)ceil(0.99 * (double)n);
	return v[r ? r - 1 : 0];
}

struct span {
	int64_t a, b;
	int node;
};

static int cmp_step(const void *x, const void *y)
{
	const struct sim_step *a = x, *b = y;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->n < b->n ? -1 : a->n > b->n;
}

long sim_naive(const struct sim_config *cfg, const struct sim_schedule *s, struct sim_intr *intr,
	       size_t nintr, struct sim_step **pts_out, size_t *npts_out, long *false_holds,
	       long *peak_rack, long *peak_leaf)
{
	long n = cfg->nodes, drains = 0;
	int64_t repair = (int64_t)(cfg->naive_repair_hours * (double)HOUR);
	int64_t *until = xcalloc((size_t)n, sizeof(*until));
	int64_t *from = xcalloc((size_t)n, sizeof(*from));
	struct span *sp = NULL;
	size_t nsp = 0, capsp = 0;
	size_t k = 0;
	*false_holds = 0;
	for (size_t f = 0; f < s->n; f++) {
		const struct sim_fault *ft = &s->f[f];
		int64_t t = ft->at_ms;
		/* interruptions are recorded in schedule order: fill naive_sched as we pass */
		while (k < nintr && intr[k].t < t)
			k++;
		for (size_t q = k; q < nintr && intr[q].t == t; q++)
			if (intr[q].node >= 0 && intr[q].node < n)
				intr[q].naive_sched = until[intr[q].node] <= t;
		if (ft->cause == SIM_EV_CRASH || ft->cause == SIM_EV_BMC_OUTAGE)
			continue;
		long first = ft->node, last = ft->node;
		int64_t dur = repair;
		int is_false = 0;
		if (ft->cause == SIM_EV_LEAF || ft->cause == SIM_EV_NVSWITCH) {
			long span = ft->cause == SIM_EV_LEAF
					    ? (long)cfg->rack_size * cfg->racks_per_leaf
					    : cfg->rack_size;
			last = first + span - 1;
		} else {
			const struct sim_cause *c = &sim_causes[ft->cause];
			if (c->signal == SIG_NONE)
				continue;
			if (c->signal == SIG_OPERATOR)
				dur = ft->clear_ms;
			else
				is_false = ft->fix == FIX_NONE || ft->fix == FIX_SELF;
		}
		for (long i = first; i <= last && i < n; i++) {
			if (until[i] > t) { /* already out: the repair covers it */
				if (t + dur > until[i])
					until[i] = t + dur;
				continue;
			}
			if (until[i] > 0) { /* close the previous span */
				if (nsp == capsp) {
					capsp = capsp ? 2 * capsp : 256;
					sp = xrealloc(sp, capsp * sizeof(*sp));
				}
				sp[nsp++] = (struct span){from[i], until[i], (int)i};
			}
			from[i] = t;
			until[i] = t + dur;
			drains++;
			*false_holds += is_false;
		}
	}
	for (long i = 0; i < n; i++)
		if (until[i] > 0) {
			if (nsp == capsp) {
				capsp = capsp ? 2 * capsp : 256;
				sp = xrealloc(sp, capsp * sizeof(*sp));
			}
			sp[nsp++] = (struct span){from[i], until[i], (int)i};
		}
	/* step function: -1 at each start, +1 at each end */
	struct sim_step *ev = xcalloc(2 * nsp + 1, sizeof(*ev));
	size_t ne = 0;
	for (size_t q = 0; q < nsp; q++) {
		ev[ne++] = (struct sim_step){sp[q].a, -1};
		ev[ne++] = (struct sim_step){sp[q].b, +1};
	}
	qsort(ev, ne, sizeof(*ev), cmp_step);
	struct sim_step *pts = xcalloc(ne + 1, sizeof(*pts));
	size_t np = 0;
	int cur = (int)n;
	pts[np++] = (struct sim_step){0, cur};
	for (size_t q = 0; q < ne; q++) {
		cur += ev[q].n;
		if (pts[np - 1].t == ev[q].t)
			pts[np - 1].n = cur;
		else
			pts[np++] = (struct sim_step){ev[q].t, cur};
	}
	/* nodes out at once per rack and leaf: sweep the spans per domain */
	long rack_peak = 0, leaf_peak = 0;
	for (int level = 0; level < 2; level++) {
		long span = level == 0 ? cfg->rack_size
				       : (long)cfg->rack_size * cfg->racks_per_leaf;
		long groups = (n + span - 1) / span;
		long *cnt = xcalloc((size_t)groups, sizeof(*cnt));
		struct sim_step *gev = xcalloc(2 * nsp + 1, sizeof(*gev));
		size_t g = 0;
		for (size_t q = 0; q < nsp; q++) {
			gev[g++] = (struct sim_step){sp[q].a, (int)(sp[q].node / span) * 2 + 1};
			gev[g++] = (struct sim_step){sp[q].b, (int)(sp[q].node / span) * 2};
		}
		qsort(gev, g, sizeof(*gev), cmp_step); /* ends (even) before starts at one time */
		long peak = 0;
		for (size_t q = 0; q < g; q++) {
			long grp = gev[q].n / 2;
			cnt[grp] += (gev[q].n & 1) ? 1 : -1;
			if (cnt[grp] > peak)
				peak = cnt[grp];
		}
		if (level == 0)
			rack_peak = peak;
		else
			leaf_peak = peak;
		free(cnt);
		free(gev);
	}
	*peak_rack = rack_peak;
	*peak_leaf = leaf_peak;
	free(ev);
	free(sp);
	free(until);
	free(from);
	*pts_out = pts;
	*npts_out = np;
	return drains;
}

/* ---------------------------------------------------------------- outputs */

void sim_result_release(struct sim_result *res)
{
	json_decref(res->fleetplane);
	json_decref(res->baseline);
	json_decref(res->faults);
	free(res->samples);
	memset(res, 0, sizeof(*res));
}

/* numbers are rounded so that the text is the same on every machine */
static json_t *num(double v, int digits)
{
	double p = pow(10, digits);
	return json_real(round(v * p) / p);
}

json_t *sim_report_json(const struct sim_result *res)
{
	char prof[128];
	sim_faults_format(res->cfg.faults, prof, sizeof(prof));
	json_t *o = json_object();
	json_object_set_new(o, "seed", json_integer((json_int_t)res->cfg.seed));
	json_object_set_new(o, "nodes", json_integer(res->cfg.nodes));
	json_object_set_new(o, "days", num(res->cfg.days, 3));
	json_object_set_new(o, "faults", json_string(prof));
	json_object_set_new(o, "store", json_string(res->cfg.store_sqlite ? "sqlite" : "mem"));
	json_object_set_new(o, "spares", json_integer(res->cfg.spares));
	json_object_set_new(o, "invariant_violations", json_integer(res->violations));
	if (res->violations)
		json_object_set_new(o, "violation", json_string(res->violation));
	json_object_set_new(o, "steps", json_integer(res->steps));
	json_object_set_new(o, "crashes", json_integer(res->crashes));
	json_object_set_new(o, "faults_injected", json_integer(res->faults_injected));
	const char *k;
	json_t *v;
	json_object_foreach(res->fleetplane, k, v)
		json_object_set(o, k, v);
	json_object_set(o, "baseline", res->baseline);
	json_object_set(o, "faults_by_cause", res->faults);
	return o;
}

static double jd(const json_t *o, const char *path)
{
	return json_number_value(jsonx_path(o, path));
}

char *sim_report_text(const struct sim_result *res)
{
	struct buf b;
	buf_init(&b, 0);
	char prof[128];
	sim_faults_format(res->cfg.faults, prof, sizeof(prof));
	buf_printf(&b, "fleetplane sim: %ld nodes, %.1f days, seed %llu, faults %s, store %s\n",
		   res->cfg.nodes, res->cfg.days, (unsigned long long)res->cfg.seed, prof,
		   res->cfg.store_sqlite ? "sqlite" : "mem");
	buf_printf(&b, "invariant violations: %ld\n", res->violations);
	if (res->violations)
		buf_printf(&b, "first violation (seed %llu): %s\n",
			   (unsigned long long)res->cfg.seed, res->violation);
	buf_printf(&b, "steps %ld, control-plane crashes %ld, node faults %ld\n", res->steps,
		   res->crashes, res->faults_injected);
	const json_t *f = res->fleetplane, *n = res->baseline;
	buf_printf(&b, "\n%-28s %12s %12s\n", "", "fleetplane", "naive");
	buf_printf(&b, "%-28s %12.5f %12.5f\n", "gpu_availability", jd(f, "gpu_availability"),
		   jd(n, "gpu_availability"));
	buf_printf(&b, "%-28s %12.5f %12.5f\n", "ettr", jd(f, "ettr"), jd(n, "ettr"));
	buf_printf(&b, "%-28s %12.0f %12.0f\n", "spares_needed", jd(f, "spares_needed"),
		   jd(n, "spares_needed"));
	buf_printf(&b, "%-28s %12.0f %12.0f\n", "holds", jd(f, "holds"), jd(n, "holds"));
	buf_printf(&b, "%-28s %12.0f %12.0f\n", "false_holds", jd(f, "false_holds"),
		   jd(n, "false_holds"));
	buf_printf(&b, "%-28s %12.1f %12s\n", "detection_to_hold_p99_s",
		   jd(f, "detection_to_hold_p99_s"), "-");
	buf_printf(&b, "%-28s %12.0f %12.0f\n", "nodes_out_peak rack", jd(f, "nodes_out_peak.rack"),
		   jd(n, "nodes_out_peak.rack"));
	buf_printf(&b, "%-28s %12.0f %12.0f\n", "nodes_out_peak leaf", jd(f, "nodes_out_peak.leaf"),
		   jd(n, "nodes_out_peak.leaf"));
	buf_printf(&b, "\nmttr_s by rung (fleetplane):");
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(f, "mttr_s"), k, v)
		buf_printf(&b, " %s=%.0f", k, json_number_value(v));
	buf_printf(&b, "\nfaults by cause:");
	json_object_foreach(res->faults, k, v)
		buf_printf(&b, " %s=%lld", k, (long long)json_integer_value(v));
	buf_printf(&b, "\n");
	return buf_detach(&b, NULL);
}

int sim_write_csv(const struct sim_result *res, const char *dir, char *err, size_t errlen)
{
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return fp_errf(FP_EIO, err, errlen, "cannot create %s", dir);
	char path[4200];
	snprintf(path, sizeof(path), "%s/timeseries.csv", dir);
	FILE *fp = fopen(path, "w");
	if (!fp)
		return fp_errf(FP_EIO, err, errlen, "cannot write %s", path);
	fprintf(fp, "hours,fleetplane_schedulable,naive_schedulable,out_health,out_maintenance,"
		    "out_failed,out_other\n");
	for (size_t i = 0; i < res->nsamples; i++) {
		const struct sim_sample *s = &res->samples[i];
		fprintf(fp, "%.3f,%d,%d,%d,%d,%d,%d\n", s->t_h, s->sched, s->naive, s->out_health,
			s->out_maint, s->out_failed, s->out_other);
	}
	int bad = fclose(fp) != 0;
	snprintf(path, sizeof(path), "%s/summary.csv", dir);
	fp = fopen(path, "w");
	if (!fp)
		return fp_errf(FP_EIO, err, errlen, "cannot write %s", path);
	fprintf(fp, "metric,fleetplane,naive\n");
	static const char *const keys[] = {"gpu_availability",    "ettr",
					   "spares_needed",       "holds",
					   "false_holds",         "detection_to_hold_p99_s",
					   "nodes_out_peak.rack", "nodes_out_peak.leaf"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		fprintf(fp, "%s,%.6g,%.6g\n", keys[i], jd(res->fleetplane, keys[i]),
			jd(res->baseline, keys[i]));
	fprintf(fp, "invariant_violations,%ld,\n", res->violations);
	bad |= fclose(fp) != 0;
	return bad ? fp_errf(FP_EIO, err, errlen, "cannot write the CSV files in %s", dir) : 0;
}

int sim_plot(const struct sim_result *res, const char *png, char *err, size_t errlen)
{
	int in[2];
	if (pipe(in) < 0)
		return fp_errf(FP_EIO, err, errlen, "pipe failed");
	pid_t pid = fork();
	if (pid < 0)
		return fp_errf(FP_EIO, err, errlen, "fork failed");
	if (pid == 0) {
		dup2(in[0], 0);
		close(in[0]);
		close(in[1]);
		char *const argv[] = {"gnuplot", NULL};
		execvp("gnuplot", argv);
		_exit(127);
	}
	close(in[0]);
	FILE *fp = fdopen(in[1], "w");
	if (!fp) {
		close(in[1]);
		waitpid(pid, NULL, 0);
		return fp_errf(FP_EIO, err, errlen, "fdopen failed");
	}
	/* the output name goes through gnuplot's quoted string: no quote or backslash */
	int safe = strpbrk(png, "'\"\\\n") == NULL;
	fprintf(fp, "set terminal pngcairo size 1200,600\nset output '%s'\n",
		safe ? png : "/dev/null");
	fprintf(fp,
		"set title 'fleetplane sim: %ld nodes, seed %llu'\nset xlabel 'hours'\n"
		"set ylabel 'GPU availability'\nset key bottom left\nset grid\n",
		res->cfg.nodes, (unsigned long long)res->cfg.seed);
	fprintf(fp, "plot '-' using 1:2 with steps title 'fleetplane', '-' using 1:2 with steps "
		    "title 'naive'\n");
	for (int series = 0; series < 2; series++) {
		for (size_t i = 0; i < res->nsamples; i++) {
			const struct sim_sample *s = &res->samples[i];
			fprintf(fp, "%.3f %.6f\n", s->t_h,
				(double)(series ? s->naive : s->sched) / (double)res->cfg.nodes);
		}
		fprintf(fp, "e\n");
	}
	fclose(fp);
	int st = 0;
	waitpid(pid, &st, 0);
	if (!safe)
		return fp_errf(FP_EINVAL, err, errlen, "--plot: the file name has a quote");
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		return fp_errf(FP_ENOTFOUND, err, errlen,
			       "gnuplot not found (apt install gnuplot)");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return fp_errf(FP_EIO, err, errlen, "gnuplot failed (status %d)", st);
	return 0;
}
