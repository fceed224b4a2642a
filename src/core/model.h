/* model.h - the typed objects of fleetplane (DESIGN.md vocabulary): node, its phase, holds and
 * conditions, and the operation record. Pure data plus the phase machine and hold rules; no I/O.
 * JSON codecs (codec.c) turn documents from the API/store into these structs and back, strictly
 * (unknown fields refused, every error names the field).
 *
 * Times are Unix epoch milliseconds (int64_t, 0 = unset). Strings are owned by their struct and
 * freed by the *_free/_release functions. */
#ifndef FP_CORE_MODEL_H
#define FP_CORE_MODEL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Node phases (DESIGN.md "Node phases"). Order is the order of the table. */
#define NODE_PHASE_MAP(X)                     \
	X(PHASE_ENROLLED, "enrolled")         \
	X(PHASE_INSPECTING, "inspecting")     \
	X(PHASE_PROVISIONING, "provisioning") \
	X(PHASE_VALIDATING, "validating")     \
	X(PHASE_AVAILABLE, "available")       \
	X(PHASE_IN_SERVICE, "in_service")     \
	X(PHASE_DRAINING, "draining")         \
	X(PHASE_MAINTENANCE, "maintenance")   \
	X(PHASE_REPAIRING, "repairing")       \
	X(PHASE_FAILED, "failed")             \
	X(PHASE_RETIRING, "retiring")         \
	X(PHASE_RETIRED, "retired")

enum node_phase {
#define X(e, s) e,
	NODE_PHASE_MAP(X)
#undef X
	PHASE__COUNT
};

/* Name of a phase as the API spells it ("in_service"). */
const char *node_phase_name(enum node_phase p);
/* Parses an API phase name. Returns 0 or FP_EINVAL. */
int node_phase_parse(const char *s, enum node_phase *out);
/* 1 for phases with a deadline (inspecting, provisioning, validating, draining, repairing,
 * retiring). */
int node_phase_is_transient(enum node_phase p);
/* Checks a transition against the DESIGN.md table. Returns 0, or FP_ESTATE with "cannot go from
 * X to Y: <why>" in err. A transition to the same phase is refused too. */
int node_phase_check(enum node_phase from, enum node_phase to, char *err, size_t errlen);

enum cond_status {
	COND_UNKNOWN = 0,
	COND_TRUE,
	COND_FALSE
};
const char *cond_status_name(enum cond_status s); /* "True" | "False" | "Unknown" */
int cond_status_parse(const char *s, enum cond_status *out);

/* A reason the node must not take work. Owners: "health", "rollout", "operator:<name>",
 * "slurm:<user>", "lifecycle". */
struct node_hold {
	char *owner;
	char *reason;
	int64_t since;
	int64_t expires; /* 0 = none */
};

struct node_condition {
	char *type; /* BMCReachable, PoweredOn, AgentAlive, GPUHealthy, InSync, PhaseDeadlineExceeded */
	enum cond_status status;
	char *reason;  /* CamelCase machine word */
	char *message; /* for humans */
	int64_t since; /* last status change */
};

#define NODE_MAX_HOLDS 32
#define NODE_MAX_CONDITIONS 32
#define NODE_MAX_LABELS 64
#define NODE_MAX_ANNOTATIONS 64
#define NODE_MAX_ANNOTATION_BYTES (256 * 1024) /* as Kubernetes' TotalAnnotationSizeLimitB */
#define NODE_MAX_MACS 16
#define NODE_MAX_QUEUED 8

struct node_label {
	char *key;
	char *value;
};

/* BMC quirks: workarounds a driver applies. Named in spec.bmc.quirks (operators) and learned by
 * a driver on first contact (reported through bmc_observed.learned_quirks, kept on the node's
 * status and passed back in bmc_target.quirks on later calls). The IPMI ones are FreeIPMI's
 * IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_* (freeipmi/api/ipmi-api.h). */
#define BMC_QUIRK_IPMI_OPEN_SESSION_PRIVILEGE (1u << 0) /* "ipmi_open_session_privilege" */
#define BMC_QUIRK_IPMI_AUTHENTICATION_CAPABILITIES \
	(1u << 1)                               /* "ipmi_authentication_capabilities" */
#define BMC_QUIRK_IPMI_INTEL_2_0 (1u << 2)      /* "ipmi_intel_2_0" */
#define BMC_QUIRK_IPMI_SUPERMICRO_2_0 (1u << 3) /* "ipmi_supermicro_2_0" */
#define BMC_QUIRK_IPMI_SUN_2_0 (1u << 4)        /* "ipmi_sun_2_0" */
#define BMC_QUIRK_IPMI_NON_EMPTY_INTEGRITY_CHECK_VALUE \
	(1u << 5)                                  /* "ipmi_non_empty_integrity_check_value" */
#define BMC_QUIRK_IPMI_NO_CHECKSUM_CHECK (1u << 6) /* "ipmi_no_checksum_check" */
#define BMC_QUIRK_REDFISH_NO_IF_MATCH (1u << 16)   /* "redfish_no_if_match": never send If-Match */
#define BMC_QUIRK_REDFISH_BASIC_AUTH (1u << 17)    /* "redfish_basic_auth": no sessions */
/* Name of one quirk bit ("" for an unknown bit); parse a name (FP_EINVAL if unknown). */
const char *bmc_quirk_name(unsigned bit);
int bmc_quirk_parse(const char *name, unsigned *bit);
/* Every known quirk name, NULL-terminated (for error messages and docs). */
extern const char *const bmc_quirk_names[];

/* spec.bmc. password is a secret: never rendered by node_to_json(..., NODE_JSON_PUBLIC). */
struct node_bmc {
	char *driver;  /* "sim" | "ipmi" | "redfish" */
	char *address; /* host:port or URL; may be NULL for sim */
	char *username;
	/* Plaintext only between an API decode and secret_bmc_seal (or from a keyless writer or
	 * an older store); a node decoded from the store holds password_sealed instead. */
	char *password;
	char *password_file; /* a file name inside serve's --bmc-credentials-dir */
	/* The stored spec.bmc.password_sealed text (core/secret.h), never opened by the codec:
	 * only the lifecycle's BMC step opens it, with serve's key, into a wiped buffer. */
	char *password_sealed;
	int cipher_suite; /* IPMI 2.0 cipher suite id 0..17; -1 = driver default (3) */
	int tls_verify;   /* Redfish: 1 (default) or 0 */
	char *ca_file;    /* Redfish: PEM CA bundle path, or NULL */
	char *system;     /* Redfish: ComputerSystem Id, or NULL */
	unsigned quirks;  /* BMC_QUIRK_* named in spec.bmc.quirks */
	json_t *extra;    /* other fields kept as given, or NULL (none are accepted today) */
};

/* Health remediation ladder rungs (DESIGN.md "remediation"), in escalation order. */
enum remediation_rung {
	RUNG_GPU_RESET = 0,
	RUNG_REBOOT,
	RUNG_REIMAGE,
	RUNG_RMA,
	RUNG__COUNT
};
/* "gpu_reset" | "reboot" | "reimage" | "rma"; remediation_rung_parse returns 0 or FP_EINVAL. */
const char *remediation_rung_name(enum remediation_rung r);
int remediation_rung_parse(const char *s, enum remediation_rung *out);

#define REMEDIATION_MAX_EVENTS 8
#define NODE_MAX_REMEDIATION_HISTORY 8

/* status.remediation: the health remediation in progress, placed by the health controller with
 * its `health` hold and advanced by the lifecycle controller (docs/health.md). active = 0: none
 * (rendered as absent). Strings owned. */
struct node_remediation {
	int active;
	enum remediation_rung ladder[RUNG__COUNT]; /* distinct rungs in escalation order */
	size_t nladder;
	size_t rung;                          /* index in ladder of the rung running now or next */
	int attempts;                         /* rungs started so far */
	char *code;                           /* health event code that caused it, "xid:79" */
	char *gpu;                            /* PCI bus id "0000:3b:00.0", or NULL */
	char *reason;                         /* the decision's summary, for humans */
	char *policy;                         /* policy name, "default" */
	char *events[REMEDIATION_MAX_EVENTS]; /* evidence: health event names "<node>.<id>" */
	size_t nevents;
	int64_t since;
	char *rma; /* RMA record name once the rma rung opened one, else NULL */
};

/* One finished remediation in status.remediationHistory. */
struct node_remediation_record {
	char *code;
	char *gpu;                  /* or NULL */
	enum remediation_rung rung; /* the last rung run */
	char *result;               /* "succeeded" | "failed" | "rma" */
	int64_t at;
};

/* What the workload manager (the fleet's scheduler backend: Slurm) last said about a node's
 * work, in status.workload; written only by that backend (sched/slurm_sync.c), read by the
 * lifecycle (the drain operation's workload_drained step, and the gate that keeps power
 * actions, reimages and remediation rungs off a node with jobs). "Drained" follows Slurm's
 * meaning (sinfo(1) NODE STATE CODES "drained"): DRAIN set and no job ALLOCATED, MIXED or
 * COMPLETING on the node. */
enum workload_state {
	WORKLOAD_NONE = 0, /* no scheduler has reported on the node (rendered as absent) */
	WORKLOAD_IDLE,     /* not drained, no jobs */
	WORKLOAD_BUSY,     /* not drained, jobs running or completing */
	WORKLOAD_DRAINING, /* DRAIN set, jobs still running or completing */
	WORKLOAD_DRAINED,  /* DRAIN set, no jobs: no work can start or be running */
	WORKLOAD_ABSENT,   /* the scheduler does not know the node: no work of its can run */
	WORKLOAD__COUNT
};
/* "idle" | "busy" | "draining" | "drained" | "absent" ("none" for WORKLOAD_NONE);
 * workload_state_parse accepts those but "none" and returns 0 or FP_EINVAL. */
const char *workload_state_name(enum workload_state s);
int workload_state_parse(const char *s, enum workload_state *out);

#define NODE_MAX_JOBS 16      /* job ids kept in status.workload.jobs */
#define NODE_JOB_ID_MAX 32    /* bytes of one job id, NUL excluded */
#define NODE_SCHEDULER_MAX 32 /* bytes of status.workload.scheduler */

/* status.workload. Strings owned. */
struct node_workload {
	enum workload_state state;
	char *scheduler;   /* "slurm" */
	char **jobs;       /* job ids as the scheduler prints them ("123", "77_3"), sorted */
	size_t njobs;      /* at most NODE_MAX_JOBS */
	size_t jobs_total; /* jobs the scheduler listed on the node (>= njobs) */
	int64_t since;     /* wall ms: when the state and jobs became what they are */
};
void node_workload_release(struct node_workload *w);
void node_workload_copy(struct node_workload *dst, const struct node_workload *src);
/* 1 when a and b say the same (state, scheduler, jobs, jobs_total); since is not compared. */
int node_workload_same(const struct node_workload *a, const struct node_workload *b);
/* 1 when n's status.workload can be believed now: the scheduler backend's condition
 * SchedulerInSync (sched/slurm_sync.h) is True, or False only for a reason that still comes
 * from a listing that succeeded (NodeNotInSlurm, SlurmUpdateFailed). Absent, or False because
 * Slurm could not be read (SlurmUnreachable, SlurmOutputInvalid, SlurmStateUnknown): 0 - the
 * workload is what Slurm said last, and jobs may have started since. */
struct node;
/* The condition the scheduler backend keeps on every node (sched/slurm_sync.h). */
#define NODE_COND_SCHEDULER_IN_SYNC "SchedulerInSync"
int node_workload_trusted(const struct node *n);
/* 1 when w says jobs are on the node (busy or draining). */
int node_workload_has_jobs(const struct node_workload *w);
/* Writes "12, 13 and 3 more" (the ids, then how many were not kept) into out; returns out. */
char *node_workload_jobs_text(const struct node_workload *w, char *out, size_t outlen);

struct node {
	/* metadata */
	char *name;
	char *uid;
	int64_t resource_version; /* store mod_revision; not stored inside the document */
	int64_t created_at;
	struct node_label *labels;
	size_t nlabels;
	/* metadata.annotations (kube, issue 13: kubectl apply keeps its last-applied
	 * configuration there): an object of strings, at most NODE_MAX_ANNOTATIONS keys and
	 * NODE_MAX_ANNOTATION_BYTES of keys and values; NULL = none */
	json_t *annotations;
	/* spec */
	char *site;
	char *rack;
	char *provider;
	char *pool;
	struct node_bmc bmc;
	char **macs;
	size_t nmacs;
	int gpu_count;   /* expected; 0 = unknown */
	char *gpu_model; /* expected, e.g. "NVIDIA H100 80GB HBM3"; may be NULL */
	int retire;      /* spec.retire: decommission requested */
	int adopt;       /* spec.adopt: a running node taken over as it is; a successful
			  * inspect makes it available without provisioning (lifecycle.c) */
	/* spec.provision (docs/provisioning.md): network-boot provisioning through the boot
	 * service (boot/boot_server.h) - {"image" (required: an image store name), "rootDevice"
	 * ("/dev/..."), "hostname", "ipAddress" (IPv4, the DHCP reservation), "sshAuthorizedKeys"
	 * [<= 16], "userData" (<= 64 KiB)}, checked by the codec; NULL = the machine's own deploy
	 * agent reports :booted (no network boot). spec.macs[0] is the boot MAC. */
	json_t *provision;
	/* spec.hardware: what inspection must find besides spec.gpus - {"nics", "disks" (counts,
	 * exact), "memoryMiB" (at least)}; NULL = nothing more expected. */
	json_t *hardware;
	/* status */
	enum node_phase phase;
	int64_t phase_since;
	struct node_hold *holds;
	size_t nholds;
	struct node_condition *conditions;
	size_t nconditions;
	char *operation;   /* id of the operation in flight, or NULL */
	char **queued_ops; /* status.queuedOperations: ids of operations (power) waiting for
				* the one in flight, oldest first; at most NODE_MAX_QUEUED */
	size_t nqueued;
	int64_t last_boot_at; /* boot callback received (deploy agent / sim) */
	char *last_boot_id;
	int64_t validated_at; /* validation report received */
	int validation_passed;
	char *validation_boot_id; /* the boot the validation report belongs to */
	unsigned bmc_quirks;      /* status.bmc.quirks: BMC_QUIRK_* a driver found necessary */
	json_t *inventory;        /* status.inventory object, or NULL */
	char *inventory_text;     /* the same, compact JSON text, when inventory is NULL: how the
				* informer cache keeps it (a tree per node costs ~5x the memory);
				* node_to_json renders whichever is set */
	int64_t served_at; /* status.servedAt: first time the node became available; 0 = never
				* (a never-served node does not count against disruption budgets) */
	struct node_remediation remediation;                 /* status.remediation */
	struct node_remediation_record *remediation_history; /* status.remediationHistory, oldest
				* first, at most NODE_MAX_REMEDIATION_HISTORY */
	size_t nremediation_history;
	struct node_workload workload; /* status.workload */
};

/* Frees the strings of r and zeroes it (active = 0). */
void node_remediation_release(struct node_remediation *r);
/* Deep copy of src into dst (dst's old contents are not freed). */
void node_remediation_copy(struct node_remediation *dst, const struct node_remediation *src);
void node_remediation_record_release(struct node_remediation_record *r);
/* Appends {code, gpu, rung, result, at} to status.remediationHistory, dropping the oldest when
 * NODE_MAX_REMEDIATION_HISTORY are kept. Strings are copied; gpu may be NULL. */
void node_remediation_history_append(struct node *n, const char *code, const char *gpu,
				     enum remediation_rung rung, const char *result, int64_t at);

struct node *node_new(void);
void node_free(struct node *n);
struct node *node_dup(const struct node *n);

/* Schedulable iff phase is available or in_service and the hold set is empty (DESIGN.md). */
int node_schedulable(const struct node *n);

/* Holds. node_hold_add replaces the reason of an existing hold with the same owner. Returns 0,
 * FP_EINVAL (empty owner/reason) or FP_ETOOBIG (NODE_MAX_HOLDS). node_hold_release removes the
 * owner's hold; FP_ENOTFOUND if that owner holds none. Owners release only their own holds:
 * the API checks the caller's owner string before calling this. */
int node_hold_add(struct node *n, const char *owner, const char *reason, int64_t now,
		  int64_t expires);
int node_hold_release(struct node *n, const char *owner);
const struct node_hold *node_hold_find(const struct node *n, const char *owner);

/* Sets a condition; `since` changes only when status changes. Returns 1 if anything changed. */
int node_condition_set(struct node *n, const char *type, enum cond_status st, const char *reason,
		       const char *message, int64_t now);
const struct node_condition *node_condition_get(const struct node *n, const char *type);
int node_condition_remove(struct node *n, const char *type);

const char *node_label_get(const struct node *n, const char *key);

/* Operation record (DESIGN.md "operation"). */
enum op_state {
	OP_PENDING = 0,
	OP_RUNNING,
	OP_SUCCEEDED,
	OP_FAILED,
	OP_CANCELLED
};
const char *op_state_name(enum op_state s);
int op_state_parse(const char *s, enum op_state *out);
static inline int op_state_terminal(enum op_state s)
{
	return s >= OP_SUCCEEDED;
}

#define OP_MAX_STEPS 16

struct operation {
	char *id;
	int64_t resource_version;
	char *node;
	char *kind; /* inspect | provision | validate | drain | retire | power */
	char *steps[OP_MAX_STEPS];
	size_t nsteps;
	size_t step;      /* index of the current step; == nsteps when all done */
	int attempt;      /* attempt of the current step, 1-based once started */
	int64_t deadline; /* whole operation; 0 = none */
	int64_t step_deadline;
	char *idempotency_key;
	char *actor;
	char *reason;
	json_t *params; /* kind-specific parameters ({"action":"on"}), or NULL */
	enum op_state state;
	int64_t created_at, started_at, finished_at, updated_at;
	char *last_error;
};

struct operation *operation_new(void);
void operation_free(struct operation *op);
struct operation *operation_dup(const struct operation *op);
/* 1 when step is the operation's current step or one still ahead of it (a report for that
 * step may still be taken), 0 once the operation has gone past it or has no such step. */
int operation_at_or_before(const struct operation *op, const char *step);

/* The lifecycle step a network-boot report is for (docs/provisioning.md "The callbacks"): kind
 * 0 = the inspection ramdisk's inventory ("wait_inspection"), 1 = the deploy ramdisk's result
 * ("wait_deploy"), 2 = the written system's boot ("wait_disk_boot") - the values of
 * boot_report_kind (boot/boot_server.h) and lifecycle_boot_kind (controller/lifecycle.h). A
 * report is taken only while its operation is at or before that step. A static string; NULL
 * for any other kind. */
const char *netboot_report_step(int kind);

#endif
