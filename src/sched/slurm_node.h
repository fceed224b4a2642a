/* sched/slurm_node.h - one node of `scontrol show node -o` (one node per line), the fields the
 * Slurm backend reads: NodeName, State (through sched/slurm_state.h), Reason with its
 * "[user@time]", Gres, GresUsed, CPUTot, CPUAlloc, RealMemory, AllocMem, CfgTRES, AllocTRES and
 * Partitions.
 *
 * The shape is slurm_sprint_node_table's (Slurm src/api/node_info.c, 22.05 and later): "Key=Value"
 * pairs separated by blanks (with -o the "\n   " between its lines become single spaces, so two
 * blanks may follow OS=). Values have no blanks except four, which are greedy, each running up
 * to the first key Slurm prints after it:
 *   OS=       up to " RealMemory=" ("OS=Linux 5.10.0-153 #1 SMP Wed Jun 28 23:04:48 CST 2023");
 *   Reason=   up to " Comment=", " Extra=", " InstanceId=", " InstanceType=",
 *             " ReservationName=", " TLSCertTokenSet=", " TLSCertLastRenewal=", " Topology=" or
 *             " Parameters=", else the end; its first line ends in " [user@YYYY-MM-DDTHH:MM:SS]"
 *             when Slurm knows who set it, and later lines follow after eight blanks;
 *   Comment=  and Extra= likewise, each up to the keys after it.
 * The record may also be the multi-line form of plain `scontrol show node` (newlines count as
 * blanks), so one parser reads both. The reason time is as scontrol prints it with
 * SLURM_TIME_FORMAT unset or "standard": local time of the host that ran scontrol, no zone.
 *
 * Pure; bounded (SLURM_NODE_MAX_TEXT bytes, SLURM_NODE_MAX_FIELDS pairs); fuzzed by
 * tests/fuzz/fuzz_slurm_node.c. */
#ifndef FP_SCHED_SLURM_NODE_H
#define FP_SCHED_SLURM_NODE_H

#include <stddef.h>

#include "sched/hostlist.h"
#include "sched/slurm_state.h"

#define SLURM_NODE_MAX_TEXT (64u << 10)
#define SLURM_NODE_MAX_FIELDS 128
#define SLURM_NODE_VALUE_LEN 512 /* Gres, GresUsed, CfgTRES, AllocTRES, Partitions */
#define SLURM_NODE_REASON_LEN 1024

struct slurm_node {
	char name[HOSTLIST_MAX_NAME + 1]; /* NodeName */
	struct slurm_state state;         /* State=; state.unknown when Slurm said something new */
	int has_reason;
	char reason[SLURM_NODE_REASON_LEN]; /* without " [user@time]"; later lines after '\n' */
	int reason_truncated;               /* 1: the reason was longer than the buffer */
	char reason_user[64];               /* "root", or a uid Slurm could not name; "" unknown */
	char reason_time[32];               /* "2023-04-11T11:42:06" as printed; "" unknown */
	char gres[SLURM_NODE_VALUE_LEN];    /* "gpu:a100:8", "gpu:4(S:0-1)", "(null)" as printed */
	char gres_used[SLURM_NODE_VALUE_LEN];
	char cfg_tres[SLURM_NODE_VALUE_LEN];   /* "cpu=32,mem=250G,billing=154,gres/gpu=4" */
	char alloc_tres[SLURM_NODE_VALUE_LEN]; /* "" when nothing is allocated */
	char partitions[SLURM_NODE_VALUE_LEN];
	long long cpu_tot, cpu_alloc; /* CPUs; -1 when absent */
	long long real_memory_mb;     /* RealMemory, MiB (slurm.conf(5)); -1 when absent */
	long long alloc_mem_mb;       /* AllocMem, MiB; -1 when absent */
	size_t nfields;               /* Key=Value pairs read, known or not */
};

/* Parses one record s (len bytes, no NUL needed; a trailing newline and surrounding blanks are
 * ignored) into out (always fully written). Keys this parser does not read are skipped, so a
 * later Slurm's new keys do not break it; State= is read with SLURM_SRC_SCONTROL and a state it
 * does not understand leaves out->state.unknown = 1 without failing the record.
 *
 * Refused with FP_EPARSE, err naming the key or token and its offset in s: a token that is not
 * Key=Value (a key is a letter then letters, digits or '_'), a key given twice, a record that
 * does not start with NodeName= or has no State=, an empty NodeName or one longer than
 * HOSTLIST_MAX_NAME, a CPUTot/CPUAlloc/RealMemory/AllocMem that is not a decimal number of at most
 * 18 digits, a Gres/GresUsed/CfgTRES/AllocTRES/Partitions value of SLURM_NODE_VALUE_LEN bytes or
 * more, more than SLURM_NODE_MAX_FIELDS pairs, a NUL or other control byte (tabs and newlines
 * count as blanks). Refused with FP_ETOOBIG: len over SLURM_NODE_MAX_TEXT. Returns 0 or the
 * code; after an error out holds no node (name "" and state unknown). */
int slurm_node_parse(const char *s, size_t len, struct slurm_node *out, char *err, size_t errlen);

#endif
