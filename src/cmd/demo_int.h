/* demo_int.h - what demo.c (`fleetplane demo`) shares with demo_slurm.c (its --slurm part): the
 * demo's state and the few helpers both use. Private to those two files. */
#ifndef FP_CMD_DEMO_INT_H
#define FP_CMD_DEMO_INT_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "cmd/client.h"

#define DEMO_SITE "demo-a"

struct demo_slurm;

struct demo {
	long nodes;
	char *data_dir;
	int keep;
	double speed;
	long timeout_s;
	int slurm;             /* --slurm: run a Slurm of its own and the job scenario */
	struct demo_slurm *ds; /* that Slurm (demo_slurm.h); NULL without --slurm */
	struct serve_opts *so; /* serve's defaults, as the fleet's config borrows them */
	struct fleet *fl;      /* the control plane, in this process */
	FILE *log;             /* <data-dir>/serve.log: the fleet's log lines */
	sigset_t stop;         /* SIGINT, SIGTERM: blocked in every thread, polled for */
	int sig;               /* the stop signal received, 0 = none */
	char url[64];
	int tty;
	struct client cl;
	int64_t t0;
	int64_t h0; /* when the GPU health scenario (or the Slurm scenario) started */
};

/* CLOCK_MONOTONIC in milliseconds. */
int64_t demo_mono_ms(void);

/* Sleeps up to ms, or less when a stop signal (SIGINT, SIGTERM) arrives; ms 0 only polls.
 * Returns 1 once a stop signal was received (d->sig), 0 otherwise. */
int demo_nap(struct demo *d, long ms);

/* Prints "error: demo: WHAT: WHY" (WHY from rc: interrupted, timed out, or fp_err_msg) and
 * where the data dir and serve log are, on stderr. Returns rc when it is negative, else
 * FP_EIO. */
int demo_fail(struct demo *d, const char *what, int rc);

/* GET /v1/nodes/NAME into *out (owned, json_decref); 0 or <0 (*out NULL). */
int demo_get_node(struct demo *d, const char *name, json_t **out);

/* The `health` hold of node document n, or NULL; the condition `type` of n, or NULL.
 * Borrowed from n. */
const json_t *demo_health_hold(const json_t *n);
const json_t *demo_node_cond(const json_t *n, const char *type);

/* Feeds the demo's real XID 79 line ("NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the
 * bus", the first line of the GPU health scenario) to `fleetplane agent --once` for node
 * (a fresh agent token scoped to it, its kernel log under <data-dir>/agents/<node>/), waits
 * for the agent and prints the line and the decision the server took, as the health scenario
 * does. 0, or <0 after printing what went wrong (demo_fail). */
int demo_feed_xid79(struct demo *d, const char *node);

#endif
