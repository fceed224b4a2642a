/* sched/slurm_render.h - fleetplane's nodes as Slurm configuration (issue 10 part 4): the
 * NodeName= and PartitionName= lines of a slurm.conf include and a cluster-wide gres.conf, made
 * with sched/slurm_conf.h's generator from what fleetplane knows of each node. Used by
 * `fleetplane slurm config` (cmd/cmd_slurm.c) and by the Slurm backend, which keeps the files
 * named by `serve --slurm-nodes-conf/--slurm-gres-conf` equal to it (sched/slurm_sync.h).
 *
 * Which nodes: a node enters Slurm only after it passed validation once (status.servedAt set:
 * it became available; an adopted node does on its takeover), and leaves it when it is retired
 * (retiring and retired nodes are not written: a retiring node is drained by the projection
 * first, since it is not schedulable). Per node: CPUs, Sockets, CoresPerSocket, ThreadsPerCore
 * and RealMemory from the labels `fleetplane slurm import` sets (slurm/cpus,
 * slurm/sockets, slurm/cores-per-socket, slurm/threads-per-core, slurm/real-memory-mb), else
 * sockets and memory from status.inventory (cpu.sockets, memoryGiB x 1024); Gres=gpu[:type]:N
 * with N the GPUs inspect found (status.inventory.gpus), else spec.gpus.count, and the type from
 * the model as Slurm's AutoDetect=nvml names it; the partition is spec.pool. */
#ifndef FP_SCHED_SLURM_RENDER_H
#define FP_SCHED_SLURM_RENDER_H

#include <stddef.h>

#include "base/buf.h"
#include "core/model.h"

/* 1 when n belongs in the generated configuration (see above). */
int slurm_render_wanted(const struct node *n);

/* A GPU model as a Slurm GRES type: lower case with every run of other bytes as one '_'
 * ("NVIDIA H100 80GB HBM3" -> "nvidia_h100_80gb_hbm3"); "" for NULL. */
void slurm_render_gres_type(const char *model, char *out, size_t outlen);

/* Appends to nodes the NodeName=/PartitionName= lines and to gres the gres.conf lines of the
 * wanted nodes among v[0..n) (borrowed; any order: the output is sorted and deterministic),
 * each after a first line "# <header>" when header is not NULL. *count (may be NULL) is the
 * nodes written. Errors as slurm_conf_render_nodes (a name or pool Slurm cannot take:
 * FP_EINVAL with err naming it); nodes and gres are then left as they were. Returns 0 or the
 * code. */
int slurm_render(struct node *const *v, size_t n, const char *header, struct buf *nodes,
		 struct buf *gres, size_t *count, char *err, size_t errlen);

#endif
