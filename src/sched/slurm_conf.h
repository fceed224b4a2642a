/* sched/slurm_conf.h - slurm.conf and gres.conf read into the nodes a running cluster already
 * has (what `fleetplane slurm import` enrolls), and the NodeName=/PartitionName= lines and
 * gres.conf lines fleetplane generates back from node specs (`fleetplane slurm config`).
 *
 * The syntax is Slurm 22.05's (slurm.conf(5), gres.conf(5); src/common/parse_config.c): one
 * record per line, `Key=Value` pairs separated by blanks, keys case-insensitive, blanks allowed
 * around '=', a value either a run of non-blanks or "double quoted"; '#' starts a comment unless
 * an odd number of backslashes precede it; a line ending in '\' continues on the next; any other
 * backslash escapes the byte after it. `Include PATH` (the keyword in any case) reads another
 * file in place: a relative PATH is taken from the directory of the top file (slurm.conf(5)
 * "INCLUDE MODIFIERS"), "%c" is replaced by ClusterName. The first key of a line says what it
 * is: NodeName= (a hostlist or DEFAULT, whose keys become the defaults of later NodeName lines),
 * PartitionName= (or DEFAULT), DownNodes=, NodeSet=, FrontendName=, else a global setting.
 *
 * Never guessed: whatever this reader cannot map into a node (an unknown NodeName key, a bad
 * number, a GRES it cannot read, a hostlist it cannot expand, a node defined twice, DownNodes,
 * NodeSet by Feature, an Include it cannot follow, a gres.conf line for a node slurm.conf does
 * not define) becomes a diagnostic {file, line, text, why}; a NodeName line with such a fault
 * maps none of its nodes. Global settings are not read (they are Slurm's, not a node's) except
 * ClusterName for "%c".
 *
 * Pure but for the caller's reader of included files; bounded (the SLURM_CONF_MAX_* below);
 * fuzzed by tests/fuzz/fuzz_slurm_conf.c (slurm.conf) and fuzz_gres_conf.c (gres.conf). */
#ifndef FP_SCHED_SLURM_CONF_H
#define FP_SCHED_SLURM_CONF_H

#include <stddef.h>

#include "base/buf.h"
#include "base/hmap.h"
#include "sched/hostlist.h"

#define SLURM_CONF_MAX_TEXT (4u << 20)   /* bytes of one file */
#define SLURM_CONF_MAX_TOTAL (16u << 20) /* bytes of a file and all it includes */
#define SLURM_CONF_MAX_DEPTH 8           /* Include nesting below the top file */
#define SLURM_CONF_MAX_FILES 256         /* files read in all */
#define SLURM_CONF_MAX_LINE (64u << 10)  /* bytes of one logical line, continuations joined */
#define SLURM_CONF_MAX_PAIRS 256         /* Key=Value pairs of one line */
#define SLURM_CONF_MAX_NODES HOSTLIST_MAX_NAMES
#define SLURM_CONF_MAX_DIAGS 4096 /* more are counted in ndiags_dropped */
#define SLURM_CONF_MAX_GRES 8     /* GRES of one node ("gpu:a:1,gpu:b:1,mps:100") */
#define SLURM_CONF_MAX_DEVS 8     /* gres.conf lines that apply to one node */
#define SLURM_CONF_MAX_PARTS 8    /* partitions of one node */
#define SLURM_CONF_NAME_LEN 48    /* GRES name, GRES type, partition name, with the NUL */

/* One GRES of a node: slurm.conf(5) "Gres": name[:type][:count], count with an optional K, M,
 * G, T or P suffix (powers of 1024; default 1). */
struct slurm_gres {
	char name[SLURM_CONF_NAME_LEN]; /* "gpu", "mps", "shard", "bandwidth" */
	char type[SLURM_CONF_NAME_LEN]; /* "a100", "rtx_3090"; "" untyped (also for "(null)") */
	long long count;
};

/* One gres.conf line as it applies to a node (gres.conf(5)). */
struct slurm_gres_dev {
	char name[SLURM_CONF_NAME_LEN];
	char type[SLURM_CONF_NAME_LEN];
	long long count; /* Count=, else the number of File= devices, else 1 */
	char file[96];   /* File= as written ("/dev/nvidia[0-7]"), "" none */
	char cores[64];  /* Cores= (or the older CPUs=) as written, "" none */
};

struct slurm_conf_node {
	char name[HOSTLIST_MAX_NAME + 1];
	char addr[HOSTLIST_MAX_NAME + 1]; /* NodeAddr=, "" when not given */
	/* Slurm's effective values (read_config.c _parse_nodename): Boards, CoresPerSocket,
	 * ThreadsPerCore default to 1; Sockets is Boards x SocketsPerBoard when that is given, else
	 * CPUs / (CoresPerSocket x ThreadsPerCore) when CPUs is, else 1; CPUs defaults to
	 * Sockets x CoresPerSocket x ThreadsPerCore. */
	long long cpus, boards, sockets, cores_per_socket, threads_per_core;
	long long real_memory_mb; /* RealMemory= (MiB); -1 when not given (Slurm then uses 1) */
	long long weight;         /* Weight=; -1 when not given */
	char state[24];           /* State= upper-cased ("UNKNOWN", "FUTURE", "CLOUD"); "" none */
	char features[128];       /* Feature= / Features= as written; "" none */
	struct slurm_gres gres[SLURM_CONF_MAX_GRES];
	size_t ngres;
	char parts[SLURM_CONF_MAX_PARTS][SLURM_CONF_NAME_LEN]; /* in PartitionName order */
	size_t nparts;
	struct slurm_gres_dev devs[SLURM_CONF_MAX_DEVS]; /* gres.conf lines, in file order */
	size_t ndevs;
	char autodetect[16]; /* gres.conf AutoDetect= for this node ("nvml", "off"); "" none */
	const char *file;    /* the NodeName line: file (owned by the conf) and line number */
	unsigned line;
};

struct slurm_conf_diag {
	char file[256];
	unsigned line;  /* 1-based; the first physical line of a continued line */
	char text[160]; /* the logical line, cut (with "...") to fit */
	char why[200];
};

struct slurm_conf_part {
	char name[SLURM_CONF_NAME_LEN];
	int is_default; /* Default=YES */
	char state[16]; /* State= upper-cased, "" none */
};

/* Reads the file at path (as written after Include, "%c" replaced and made absolute against the
 * top file's directory) into out, at most max bytes. Returns 0, or a negative fp_err with err
 * naming why (it becomes the Include line's diagnostic). */
typedef int slurm_conf_read_fn(void *ctx, const char *path, struct buf *out, size_t max, char *err,
			       size_t errlen);

struct slurm_conf {
	struct slurm_conf_node *nodes; /* owned, in NodeName order */
	size_t nnodes, nodes_alloc;
	struct slurm_conf_part *parts; /* owned, in PartitionName order */
	size_t nparts, parts_alloc;
	struct slurm_conf_diag *diags; /* owned, in the order found */
	size_t ndiags, diags_alloc, ndiags_dropped;
	char cluster_name[64];
	char autodetect[16]; /* gres.conf's global AutoDetect=, "" none */
	/* private */
	char **files; /* names of the files read, owned; nodes point into them */
	size_t nfiles;
	size_t total_bytes;
	struct hmap by_name;             /* node name -> index + 1 */
	struct slurm_conf_raw *node_def; /* NodeName=DEFAULT as given so far */
	char top_dir[256];
	slurm_conf_read_fn *reader;
	void *reader_ctx;
	struct slurm_conf_pending *pending; /* PartitionName/NodeSet lines, resolved at the end */
	size_t npending, pending_alloc;
};

void slurm_conf_init(struct slurm_conf *c);
/* Frees what c owns and zeroes it; a zeroed conf is an initialised one, and a released or
 * zeroed conf may be released again. */
void slurm_conf_release(struct slurm_conf *c);
/* The node called name, borrowed from c, or NULL. */
const struct slurm_conf_node *slurm_conf_node_get(const struct slurm_conf *c, const char *name);

/* Reads slurm.conf text (len bytes, no NUL needed) named file (used in diagnostics and, for a
 * relative Include, its directory) into c, which must be freshly initialised. reader (may be
 * NULL: every Include is then a diagnostic) reads included files. Partition membership is
 * resolved after the whole text, as slurmctld does: `Nodes=ALL` is every node, a NodeSet name
 * its nodes, and a name no NodeName line defines a diagnostic.
 *
 * Faults in the text are diagnostics, not errors. Refused (c then holds what was read before):
 * FP_EINVAL for a NULL c or file, FP_ETOOBIG for len over SLURM_CONF_MAX_TEXT or more than
 * SLURM_CONF_MAX_NODES nodes. Returns 0 or the code, err naming it. */
int slurm_conf_parse(struct slurm_conf *c, const char *file, const char *text, size_t len,
		     slurm_conf_read_fn *reader, void *reader_ctx, char *err, size_t errlen);

/* Reads gres.conf text named file into the nodes of c (parse slurm.conf first): each line
 * `[NodeName=HOSTLIST] Name= [Type=] [File=] [Count=] [Cores=|CPUs=] [Links=] [Flags=]
 * [MultipleFiles=] [AutoDetect=]` is added to every node it names (all nodes without NodeName;
 * a node slurm.conf does not define is a diagnostic), a line of only [NodeName=] AutoDetect= sets
 * the nodes' (or the global) AutoDetect. A node whose explicit gres.conf count of a GRES name
 * differs from its slurm.conf Gres count gets a diagnostic on its NodeName line (with AutoDetect
 * the counts come from the GPU driver at slurmd start and are not checked). Include is read as
 * in slurm_conf_parse. Faults are diagnostics; refused as slurm_conf_parse. */
int slurm_conf_parse_gres(struct slurm_conf *c, const char *file, const char *text, size_t len,
			  slurm_conf_read_fn *reader, void *reader_ctx, char *err, size_t errlen);

/* Parses a GRES list s (len bytes) into out[0..max): comma-separated name[:type][:count]
 * items, count a decimal number with an optional K/M/G/T/P suffix; also the forms scontrol
 * prints, "gpu:(null):4(IDX:0-3)" and "gpu:a100:2(S:0-1)" (the parenthesised suffix is
 * dropped). "" and "(null)" are no GRES. Refused with FP_EPARSE: an empty item, a name that is
 * not letters, digits and '_', more than three fields, a count that is not a number (in the
 * last of three fields), over 2^53, or an item of a name and type already given; FP_ETOOBIG:
 * more than max items. *n is the count read (0 on error). Returns 0 or the code. */
int slurm_gres_parse(const char *s, size_t len, struct slurm_gres *out, size_t max, size_t *n,
		     char *err, size_t errlen);

/* ---- generating ---- */

/* What fleetplane knows of a node, to write its Slurm lines from. Strings borrowed. */
struct slurm_conf_spec {
	const char *name;
	long long cpus, sockets, cores_per_socket, threads_per_core; /* 0: not written */
	long long real_memory_mb;                                    /* 0: not written */
	const struct slurm_gres *gres; /* written in this order as Gres=name[:type]:count */
	size_t ngres;
	const char *const *parts; /* partitions (pools) of the node; NULL/0 = none */
	size_t nparts;
};

/* Appends to out the NodeName= lines of specs[0..n) - nodes whose lines would be equal share one
 * line with a hostlist (NodeName=gpu[001-016] CPUs=...) - then one `PartitionName=P
 * Nodes=HOSTLIST` line per partition, partitions sorted by name. Deterministic: the same specs
 * in any order give the same bytes (lines in the order of their first node by name). Refused:
 * FP_EINVAL for a spec whose name hostlist_push refuses, a GRES name or type or a partition
 * name that is empty or holds anything but letters, digits, '_', '-' and '.', or two specs of
 * one name; FP_ETOOBIG when out's maximum is reached. out is left as it was on error. */
int slurm_conf_render_nodes(const struct slurm_conf_spec *specs, size_t n, struct buf *out,
			    char *err, size_t errlen);

/* Appends to out the gres.conf lines of one node: `NodeName=N Name=gpu [Type=T]
 * File=/dev/nvidia[a-b]` per typed group of GPUs, numbered from 0 in GRES order, and `NodeName=N
 * Name=G [Type=T] Count=C` for every other GRES (mps, shard: shared over the node's GPUs as
 * gres.conf(5) says a Count without File is). Refused as slurm_conf_render_nodes. */
int slurm_conf_render_gres(const struct slurm_conf_spec *spec, struct buf *out, char *err,
			   size_t errlen);

#endif
