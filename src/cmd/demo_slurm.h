/* demo_slurm.h - `fleetplane demo --slurm`: a real Slurm of the demo's own (munged, slurmctld
 * and one slurmd per node, child processes of the demo, everything under <data-dir>/slurm/ and
 * on loopback), the Slurm backend in the fleet's scheduler slot (as `serve --slurm`), and the
 * job scenario: a job on a node that gets a real XID 79 line; the node is held and drained in
 * Slurm, waits for the job, then heals and returns (docs/slurm.md "Demo").
 *
 * Slurm 22.05 as Debian 12 packages it (slurmctld, slurmd, slurm-client, munge); the daemon
 * options are from slurmctld(8) (-D foreground, -c clear state, -f conf), slurmd(8) (-D, -f,
 * -N node name) and munged(8) (-F foreground, --socket, --key-file, --pid-file,
 * --seed-file); the slurm.conf and gres.conf keys from slurm.conf(5) and gres.conf(5). */
#ifndef FP_CMD_DEMO_SLURM_H
#define FP_CMD_DEMO_SLURM_H

#include <stddef.h>

struct demo;
struct fleet_config;

#define DEMO_SLURM_RACK "s01"
#define DEMO_SLURM_NODES 2 /* the dedicated sim nodes s01n01, s01n02: Slurm NodeNames */

/* The name of dedicated node i (0 .. DEMO_SLURM_NODES-1): "s01n01", "s01n02". Static. */
const char *demo_slurm_node(int i);

/* Looks for every program the Slurm part runs in PATH (munged, munge, slurmctld, slurmd,
 * scontrol, sbatch, scancel, squeue). 0 when all are there; else FP_ENOTFOUND with err saying which
 * are missing and how to install them. */
int demo_slurm_check(char *err, size_t errlen);

/* Writes <data-dir>/slurm/{munge/munge.key (1024 random bytes, 0600, kept when present),
 * slurm.conf, gres.conf, dev/nvidia[0-7] -> /dev/null}, picks free loopback ports, starts
 * munged, slurmctld and one slurmd per dedicated node as child processes (own process group,
 * default signals, stdout/stderr to slurm/log/NAME.stdout) and waits, at most 15 s a step,
 * for munge, `scontrol ping` UP and both nodes IDLE. Sets SLURM_CONF in the environment: call
 * it before the fleet starts any thread. On success d->ds holds the running Slurm; on failure
 * err says which step and which log to read, and d->ds holds what was started (stop it with
 * demo_slurm_stop). Makes the data dir 0711: munged refuses a socket under a directory that
 * others cannot search, and checks every directory above it for the same (FP_EINVAL, naming
 * it). Returns 0, FP_ECLOSED (a stop signal), or <0. */
int demo_slurm_start(struct demo *d, char *err, size_t errlen);

/* Puts the Slurm backend (scontrol through sched/slurm_cli.h, sched/slurm_sync.h threaded,
 * a full pass every 2 s) into cfg->scheduler. Its state lives in d->ds. 0, or <0 with err. */
int demo_slurm_scheduler(struct demo *d, struct fleet_config *cfg, char *err, size_t errlen);

/* The job scenario, printed step by step; call it when every node is available. 0 when all of
 * it happened, else <0 after printing which step did not (each wait is bounded). */
int demo_slurm_scenario(struct demo *d);

/* Prints the SLURM_CONF line of the demo's summary. */
void demo_slurm_summary(struct demo *d);

/* After the fleet is freed: frees the backend, cancels the scenario's job when it may still
 * run, and stops the daemons (SIGTERM in the order slurmd, slurmctld, munged; SIGKILL after
 * 5 s; each reaped). Sets d->ds NULL; a NULL d->ds is a no-op. */
void demo_slurm_stop(struct demo *d);

#endif
