/* demo_slurm.c - `fleetplane demo --slurm` (demo_slurm.h): the demo's own Slurm, the Slurm
 * backend in the fleet's scheduler slot, and the job scenario.
 *
 * The daemons are children of the demo (posix_spawnp with an argv, never a shell), each in its
 * own process group so a Ctrl-C on the terminal reaches the demo only, which then stops them in
 * order. Every argv names the data dir (-f <data-dir>/slurm/slurm.conf, munged
 * --socket=<data-dir>/slurm/munge/...), so `pgrep -f <data-dir>` finds what is left of a run.
 * The layout follows tests/peers/slurm/slurm.sh (recipe: the fake GPUs are /dev/null links,
 * as gres.conf(5) File= wants device files; loopback only with CommunicationParameters=
 * NoInAddrAny,NoCtldInAddrAny, slurm.conf(5)). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/proc.h"
#include "cmd/demo_int.h"
#include "cmd/demo_slurm.h"
#include "fleet/fleet.h"
#include "fleet/fleet_slurm.h"
#include "sched/slurm_cli.h"
#include "sched/slurm_node.h"
#include "sched/slurm_state.h"
#include "sched/slurm_sync.h"

#define DS_DAEMONS (2 + DEMO_SLURM_NODES) /* munged, slurmctld, a slurmd per node */
#define DS_STEP_MS 15000                  /* bound of one readiness step */
#define DS_WAIT_MS 180000                 /* bound of one scenario step */
#define DS_STOP_MS 5000                   /* SIGTERM to SIGKILL */
#define DS_TOOL_MS 10000                  /* one scontrol/sbatch/munge call */
#define DS_JOB_SECONDS 20                 /* the scenario job's `sleep` */
#define DS_PATH_MAX 4096

static const char *const ds_nodes[DEMO_SLURM_NODES] = {"s01n01", "s01n02"};

struct ds_daemon {
	char label[32]; /* "munged", "slurmctld", "slurmd-s01n01": its output in log/LABEL.stdout */
	pid_t pid;      /* 0: not started or reaped */
};

struct demo_slurm {
	char dir[1100];  /* <data-dir>/slurm, absolute (the data dir is at most 1024 bytes) */
	char conf[1200]; /* dir/slurm.conf */
	struct ds_daemon dm[DS_DAEMONS];
	struct slurm_cli *cli;
	struct slurm_sync *sync;
	struct fleet_scheduler sched;
	char job[24]; /* the scenario's job id while it may run, "" otherwise */
};

extern char **environ;

const char *demo_slurm_node(int i)
{
	return i >= 0 && i < DEMO_SLURM_NODES ? ds_nodes[i] : NULL;
}

/* 1 when prog is an executable file in one of PATH's directories. */
static int in_path(const char *prog)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		char f[DS_PATH_MAX];
		if (n > 0 && n + strlen(prog) + 2 < sizeof(f)) {
			snprintf(f, sizeof(f), "%.*s/%s", (int)n, path, prog);
			if (access(f, X_OK) == 0)
				return 1;
		}
		path += n;
		if (*path == ':')
			path++;
	}
	return 0;
}

int demo_slurm_check(char *err, size_t errlen)
{
	static const char *const progs[] = {"munged",   "munge",  "slurmctld", "slurmd",
					    "scontrol", "sbatch", "scancel",   "squeue"};
	char missing[256] = "";
	size_t w = 0;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		if (!in_path(progs[i]))
			w += (size_t)snprintf(missing + w, sizeof(missing) - w, "%s%s",
					      w ? ", " : "", progs[i]);
	if (!w)
		return 0;
	snprintf(err, errlen,
		 "--slurm needs Slurm and munge, and %s %s not in PATH (%s); install them with: "
		 "apt-get install slurmctld slurmd slurm-client munge (Debian puts the daemons in "
		 "/usr/sbin, which must be in PATH)",
		 missing, strchr(missing, ',') ? "are" : "is",
		 getenv("PATH") ? getenv("PATH") : "");
	return FP_ENOTFOUND;
}

/* mkdir with mode, an existing directory being fine; the mode is set either way. */
static int mkdir_mode(const char *path, mode_t mode)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -1;
	return chmod(path, mode);
}

/* Writes text to path (mode), replacing it. 0 or -1 (errno). */
static int write_file(const char *path, const char *text, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, len);
	int e = errno;
	if (close(fd) < 0 || n != (ssize_t)len) {
		errno = n < 0 ? e : EIO;
		return -1;
	}
	return 0;
}

/* n distinct free TCP ports on 127.0.0.1 (bound at once, then released). 0 or -1. */
static int free_ports(int n, unsigned *ports)
{
	int fds[8], ok = 1;
	for (int i = 0; i < n; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t al = sizeof(a);
		if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    getsockname(fds[i], (struct sockaddr *)&a, &al) < 0)
			ok = 0;
		ports[i] = ntohs(a.sin_port);
	}
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ok ? 0 : -1;
}

/* The directories above dir must be searchable by others (munged(8) checks its socket's
 * path). 0, or FP_EINVAL naming the first that is not. */
static int check_parents(const char *dir, char *err, size_t errlen)
{
	char p[DS_PATH_MAX];
	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = strrchr(p, '/'); s; s = strrchr(p, '/')) {
		*s = 0;
		const char *q = *p ? p : "/";
		struct stat st;
		if (stat(q, &st) < 0 || !(st.st_mode & S_IXOTH))
			return fp_errf(FP_EINVAL, err, errlen,
				       "munged needs o+x on every directory above its socket, and "
				       "%s is mode %03o: use a --data-dir under a searchable path",
				       q, (unsigned)(st.st_mode & 0777));
		if (!*p)
			break;
	}
	return 0;
}

/* Writes munge.key (kept when present), slurm.conf, gres.conf and the fake GPU links. */
static int write_config(struct demo_slurm *s, char *err, size_t errlen)
{
	char p[DS_PATH_MAX + 64];
	static const char *const sub[] = {"state", "log", "run", "spool", "dev", "jobs"};
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", s->dir, sub[i]);
		if (mkdir_mode(p, 0700) < 0)
			return fp_errf(FP_EIO, err, errlen, "cannot create %s: %s", p,
				       strerror(errno));
	}
	for (int i = 0; i < DEMO_SLURM_NODES; i++) {
		snprintf(p, sizeof(p), "%s/spool/%s", s->dir, ds_nodes[i]);
		if (mkdir_mode(p, 0700) < 0)
			return fp_errf(FP_EIO, err, errlen, "cannot create %s: %s", p,
				       strerror(errno));
	}
	snprintf(p, sizeof(p), "%s/munge", s->dir);
	if (mkdir_mode(p, 0755) < 0)
		return fp_errf(FP_EIO, err, errlen, "cannot create %s: %s", p, strerror(errno));
	snprintf(p, sizeof(p), "%s/munge/munge.key", s->dir);
	struct stat st;
	if (stat(p, &st) < 0 || st.st_size < 32) {
		unsigned char key[1024];
		if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key) ||
		    write_file(p, (const char *)key, sizeof(key), 0600) < 0) {
			explicit_bzero(key, sizeof(key));
			return fp_errf(FP_EIO, err, errlen, "cannot write %s: %s", p,
				       strerror(errno));
		}
		explicit_bzero(key, sizeof(key));
	}
	for (int i = 0; i < 8; i++) {
		snprintf(p, sizeof(p), "%s/dev/nvidia%d", s->dir, i);
		unlink(p);
		if (symlink("/dev/null", p) < 0)
			return fp_errf(FP_EIO, err, errlen, "cannot link %s: %s", p,
				       strerror(errno));
	}
	unsigned ports[1 + DEMO_SLURM_NODES];
	if (free_ports(1 + DEMO_SLURM_NODES, ports) < 0)
		return fp_errf(FP_EIO, err, errlen, "cannot find free loopback ports");
	struct passwd *pw = getpwuid(geteuid());
	const char *user = pw && pw->pw_name ? pw->pw_name : "root";
	struct buf b;
	buf_init(&b, 1 << 16);
	buf_printf(&b,
		   "# Written by fleetplane demo --slurm; a Slurm of the demo's own, on loopback.\n"
		   "ClusterName=fpdemo\n"
		   "SlurmctldHost=localhost(127.0.0.1)\n"
		   "SlurmctldPort=%u\n"
		   "SlurmdPort=%u\n"
		   "SlurmUser=%s\nSlurmdUser=%s\n"
		   "AuthType=auth/munge\nCredType=cred/munge\n"
		   "AuthInfo=socket=%s/munge/munge.sock\n"
		   "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny\n"
		   "StateSaveLocation=%s/state\n"
		   "SlurmdSpoolDir=%s/spool/%%n\n"
		   "SlurmctldPidFile=%s/run/slurmctld.pidfile\n"
		   "SlurmdPidFile=%s/run/slurmd-%%n.pidfile\n"
		   "SlurmctldLogFile=%s/log/slurmctld.log\n"
		   "SlurmdLogFile=%s/log/slurmd-%%n.log\n"
		   "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
		   "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
		   "GresTypes=gpu\nMpiDefault=none\n"
		   "JobCompType=jobcomp/filetxt\nJobCompLoc=%s/jobcomp.txt\n"
		   "AccountingStorageType=accounting_storage/none\n"
		   "JobAcctGatherType=jobacct_gather/none\n"
		   "ReturnToService=2\nSlurmdTimeout=30\nMessageTimeout=5\n",
		   ports[0], ports[1], user, user, s->dir, s->dir, s->dir, s->dir, s->dir, s->dir,
		   s->dir, s->dir);
	for (int i = 0; i < DEMO_SLURM_NODES; i++)
		buf_printf(&b,
			   "NodeName=%s NodeHostname=localhost NodeAddr=127.0.0.1 Port=%u CPUs=1 "
			   "RealMemory=500 Gres=gpu:8 State=UNKNOWN\n",
			   ds_nodes[i], ports[1 + i]);
	buf_printf(&b, "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n");
	int rc = write_file(s->conf, b.data, b.len, 0644);
	buf_release(&b);
	if (rc < 0)
		return fp_errf(FP_EIO, err, errlen, "cannot write %s: %s", s->conf,
			       strerror(errno));
	char gres[DS_PATH_MAX + 128];
	int n = snprintf(gres, sizeof(gres), "AutoDetect=off\nName=gpu File=%s/dev/nvidia[0-7]\n",
			 s->dir);
	snprintf(p, sizeof(p), "%s/gres.conf", s->dir);
	if (n < 0 || (size_t)n >= sizeof(gres) || write_file(p, gres, (size_t)n, 0644) < 0)
		return fp_errf(FP_EIO, err, errlen, "cannot write %s: %s", p, strerror(errno));
	return 0;
}

/* Starts argv as daemon i: own process group, default dispositions and an empty mask (the
 * demo blocks SIGINT/SIGTERM), stdin /dev/null, stdout and stderr appended to
 * log/NAME.stdout. 0 or <0 with err. */
static int spawn(struct demo_slurm *s, int i, char *const argv[], char *err, size_t errlen)
{
	char out[DS_PATH_MAX + 64];
	snprintf(out, sizeof(out), "%s/log/%s.stdout", s->dir, s->dm[i].label);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_APPEND, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawnattr_init(&at);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					      POSIX_SPAWN_SETPGROUP);
	pid_t pid = 0;
	int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc != 0)
		return fp_errf(FP_EIO, err, errlen, "cannot start %s: %s", argv[0], strerror(rc));
	s->dm[i].pid = pid;
	return 0;
}

/* 1 when daemon i still runs; reaps it (and forgets its pid) when it exited. */
static int alive(struct demo_slurm *s, int i)
{
	if (s->dm[i].pid <= 0)
		return 0;
	int st;
	pid_t w = waitpid(s->dm[i].pid, &st, WNOHANG);
	if (w == 0)
		return 1;
	s->dm[i].pid = 0;
	return 0;
}

/* Runs a Slurm or munge client tool; stdout into res (caller releases). 0 when it exited 0. */
static int tool(char *const argv[], struct proc_result *res)
{
	char e[256];
	struct proc_opts po = {.max_err = 4096};
	int rc = proc_run(argv, DS_TOOL_MS, 1 << 20, &po, res, e, sizeof(e));
	return rc == 0 && res->exited && res->exit_status == 0 ? 0 : -1;
}

/* `scontrol show node NAME -o` (scontrol(1) -o "--oneliner"), read with sched's parser
 * (slurm_node_parse): State= as printed into state ("ALLOCATED+DRAIN"), the Reason= text
 * without its " [user@time]" tail into reason ("" when none), and *drain 1 when the state
 * proves DRAIN set (slurm_state_drain_requested). 0, or -1 when scontrol failed or its answer
 * did not parse. */
static int show_node(const char *name, char *state, size_t slen, char *reason, size_t rlen,
		     int *drain)
{
	char *argv[] = {"scontrol", "show", "node", (char *)name, "-o", NULL};
	struct proc_result res;
	int rc = tool(argv, &res);
	*state = *reason = 0;
	if (drain)
		*drain = 0;
	struct slurm_node *sn = xcalloc(1, sizeof(*sn));
	if (rc == 0 && res.out.data) {
		char e[256];
		size_t len = strcspn(res.out.data, "\n"); /* one node: one line */
		rc = slurm_node_parse(res.out.data, len, sn, e, sizeof(e)) == 0 ? 0 : -1;
	}
	if (rc == 0) {
		snprintf(state, slen, "%s", sn->state.text);
		if (sn->has_reason)
			snprintf(reason, rlen, "%s", sn->reason);
		if (drain)
			*drain = !sn->state.unknown && slurm_state_drain_requested(&sn->state);
	}
	free(sn);
	proc_result_release(&res);
	return rc;
}

static int munge_ready(struct demo_slurm *s)
{
	char sock[DS_PATH_MAX + 32];
	snprintf(sock, sizeof(sock), "%s/munge/munge.sock", s->dir);
	char *argv[] = {"munge", "-n", "-S", sock, NULL};
	struct proc_result res;
	int ok = tool(argv, &res) == 0;
	proc_result_release(&res);
	return ok;
}

static int ctld_ready(struct demo_slurm *s)
{
	char *argv[] = {"scontrol", "ping", NULL};
	struct proc_result res;
	int ok = tool(argv, &res) == 0 && res.out.data && strstr(res.out.data, "is UP");
	proc_result_release(&res);
	return ok;
}

static int nodes_idle(struct demo_slurm *s)
{
	for (int i = 0; i < DEMO_SLURM_NODES; i++) {
		char st[64], why[SLURM_NODE_REASON_LEN];
		if (show_node(ds_nodes[i], st, sizeof(st), why, sizeof(why), NULL) < 0 ||
		    strcmp(st, "IDLE") != 0)
			return 0;
	}
	return 1;
}

/* Prints the last 10 lines (within its last 8 KiB) of what daemon i wrote to
 * log/LABEL.stdout (-D daemons write their fatal errors there) on stderr. */
static void print_tail(const struct demo_slurm *s, int i)
{
	char path[DS_PATH_MAX + 64], t[8193];
	snprintf(path, sizeof(path), "%s/log/%s.stdout", s->dir, s->dm[i].label);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	ssize_t n = end > 0 ? pread(fd, t, sizeof(t) - 1, end > 8192 ? end - 8192 : 0) : 0;
	close(fd);
	if (n <= 0)
		return;
	t[n] = 0;
	size_t start = (size_t)n, lines = 0;
	if (t[start - 1] == '\n')
		start--;
	while (start > 0 && (t[start - 1] != '\n' || ++lines < 10))
		start--;
	fprintf(stderr, "--- last lines of %s\n%s%s", path, t + start,
		t[n - 1] == '\n' ? "" : "\n");
}

/* Polls ready every 50 ms for DS_STEP_MS while daemons first..last live. */
static int await(struct demo *d, int first, int last, const char *what,
		 int (*ready)(struct demo_slurm *), char *err, size_t errlen)
{
	struct demo_slurm *s = d->ds;
	int64_t until = demo_mono_ms() + DS_STEP_MS;
	for (;;) {
		if (ready(s))
			return 0;
		for (int i = first; i <= last; i++)
			if (!alive(s, i)) {
				print_tail(s, i);
				return fp_errf(FP_EIO, err, errlen,
					       "%s: %s exited (see %s/log/%s.stdout and %s/log/)",
					       what, s->dm[i].label, s->dir, s->dm[i].label,
					       s->dir);
			}
		if (demo_mono_ms() > until)
			return fp_errf(FP_ETIMEDOUT, err, errlen,
				       "%s: not within %d s (logs in %s/log/)", what,
				       DS_STEP_MS / 1000, s->dir);
		if (demo_nap(d, 50))
			return fp_errf(FP_ECLOSED, err, errlen, "%s: interrupted", what);
	}
}

int demo_slurm_start(struct demo *d, char *err, size_t errlen)
{
	char abs[DS_PATH_MAX];
	if (!realpath(d->data_dir, abs))
		return fp_errf(FP_EIO, err, errlen, "%s: %s", d->data_dir, strerror(errno));
	if (strspn(abs, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-") !=
		    strlen(abs) ||
	    strlen(abs) > 1024)
		return fp_errf(FP_EINVAL, err, errlen,
			       "the data dir %s goes into slurm.conf: it must be at most 1024 "
			       "bytes of [A-Za-z0-9_./-]",
			       abs);
	int rc = check_parents(abs, err, errlen);
	if (rc < 0)
		return rc;
	if (chmod(abs, 0711) < 0)
		return fp_errf(FP_EIO, err, errlen, "chmod 0711 %s: %s", abs, strerror(errno));
	struct demo_slurm *s = xcalloc(1, sizeof(*s));
	d->ds = s;
	snprintf(s->dir, sizeof(s->dir), "%.1024s/slurm", abs); /* at most 1024: checked above */
	snprintf(s->conf, sizeof(s->conf), "%s/slurm.conf", s->dir);
	snprintf(s->dm[0].label, sizeof(s->dm[0].label), "munged");
	snprintf(s->dm[1].label, sizeof(s->dm[1].label), "slurmctld");
	for (int i = 0; i < DEMO_SLURM_NODES; i++) {
		snprintf(s->dm[2 + i].label, sizeof(s->dm[2 + i].label), "slurmd-%s", ds_nodes[i]);
	}
	if (mkdir_mode(s->dir, 0755) < 0)
		return fp_errf(FP_EIO, err, errlen, "cannot create %s: %s", s->dir,
			       strerror(errno));
	if ((rc = write_config(s, err, errlen)) < 0)
		return rc;
	/* Before any thread: the tools the demo and the backend run read it. */
	setenv("SLURM_CONF", s->conf, 1);
	char sock[DS_PATH_MAX + 32], key[DS_PATH_MAX + 32], pidf[DS_PATH_MAX + 32],
		seed[DS_PATH_MAX + 32];
	snprintf(sock, sizeof(sock), "--socket=%s/munge/munge.sock", s->dir);
	snprintf(key, sizeof(key), "--key-file=%s/munge/munge.key", s->dir);
	snprintf(pidf, sizeof(pidf), "--pid-file=%s/run/munged.pidfile", s->dir);
	snprintf(seed, sizeof(seed), "--seed-file=%s/munge/munged.seed", s->dir);
	char *munged[] = {"munged", "-F", sock, key, pidf, seed, NULL};
	if ((rc = spawn(s, 0, munged, err, errlen)) < 0 ||
	    (rc = await(d, 0, 0, "munged ready", munge_ready, err, errlen)) < 0)
		return rc;
	/* -c: no state from an earlier run of this data dir (its jobs, drains) */
	char *ctld[] = {"slurmctld", "-D", "-c", "-f", s->conf, NULL};
	if ((rc = spawn(s, 1, ctld, err, errlen)) < 0 ||
	    (rc = await(d, 1, 1, "slurmctld ping UP", ctld_ready, err, errlen)) < 0)
		return rc;
	for (int i = 0; i < DEMO_SLURM_NODES; i++) {
		char *slurmd[] = {"slurmd", "-D", "-f", s->conf, "-N", (char *)ds_nodes[i], NULL};
		if ((rc = spawn(s, 2 + i, slurmd, err, errlen)) < 0)
			return rc;
	}
	return await(d, 1, DS_DAEMONS - 1, "slurmd nodes idle", nodes_idle, err, errlen);
}

int demo_slurm_scheduler(struct demo *d, struct fleet_config *cfg, char *err, size_t errlen)
{
	struct demo_slurm *s = d->ds;
	struct slurm_cli_config cc = {.slurm_conf = s->conf};
	if (slurm_cli_new(&cc, &s->cli, err, errlen) < 0)
		return FP_EINVAL;
	struct slurm_ops ops;
	slurm_cli_ops(s->cli, &ops);
	struct slurm_sync_config sc = {.threaded = 1, .interval_ms = 2000};
	s->sync = slurm_sync_new(&ops, &sc);
	fleet_slurm_scheduler(s->sync, &s->sched);
	cfg->scheduler = &s->sched;
	return 0;
}

/* Signals every live daemon in [first, last] with sig, then waits for them up to ms. */
static void signal_wait(struct demo_slurm *s, int first, int last, int sig, long ms)
{
	for (int i = first; i <= last; i++)
		if (alive(s, i))
			kill(s->dm[i].pid, sig);
	int64_t until = demo_mono_ms() + ms;
	for (;;) {
		int left = 0;
		for (int i = first; i <= last; i++)
			left += alive(s, i);
		if (!left || demo_mono_ms() > until)
			return;
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/* Stops daemons first..last: SIGTERM, DS_STOP_MS, SIGKILL, reaped. */
static void stop_daemons(struct demo_slurm *s, int first, int last)
{
	signal_wait(s, first, last, SIGTERM, DS_STOP_MS);
	for (int i = first; i <= last; i++)
		if (alive(s, i)) {
			fprintf(stderr, "demo: %s (pid %d) ignored SIGTERM for %d s; SIGKILL\n",
				s->dm[i].label, (int)s->dm[i].pid, DS_STOP_MS / 1000);
			kill(s->dm[i].pid, SIGKILL);
			waitpid(s->dm[i].pid, NULL, 0);
			s->dm[i].pid = 0;
		}
}

/* 1 when squeue still lists job. */
static int job_listed(const char *job)
{
	char *argv[] = {"squeue", "-h", "-j", (char *)job, "-o", "%i", NULL};
	struct proc_result res;
	int listed = tool(argv, &res) == 0 && res.out.len > 0;
	proc_result_release(&res);
	return listed;
}

void demo_slurm_stop(struct demo *d)
{
	struct demo_slurm *s = d->ds;
	if (!s)
		return;
	slurm_sync_free(s->sync);
	slurm_cli_free(s->cli);
	/* slurmd leaves a running job's slurmstepd behind by design: cancel the job first,
	 * while slurmctld still answers. */
	if (*s->job && alive(s, 1)) {
		char *argv[] = {"scancel", s->job, NULL};
		struct proc_result res;
		tool(argv, &res);
		proc_result_release(&res);
		int64_t until = demo_mono_ms() + DS_STOP_MS;
		while (job_listed(s->job) && demo_mono_ms() < until) {
			struct timespec ts = {0, 100 * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	stop_daemons(s, 2, DS_DAEMONS - 1);
	stop_daemons(s, 1, 1);
	stop_daemons(s, 0, 0);
	free(s);
	d->ds = NULL;
}

void demo_slurm_summary(struct demo *d)
{
	if (d->ds)
		printf("  export SLURM_CONF=%s   (Slurm logs in %s/log/)\n", d->ds->conf,
		       d->ds->dir);
}

/* ---- the job scenario ---- */

static double secs(const struct demo *d)
{
	return (double)(demo_mono_ms() - d->h0) / 1000.0;
}

/* Fails the scenario: which step was not reached, the node's last Slurm line and log dir. */
static int sfail(struct demo *d, const char *what, int rc)
{
	char msg[512];
	snprintf(msg, sizeof(msg), "Slurm scenario: %s", what);
	demo_fail(d, msg, rc);
	if (d->ds)
		fprintf(stderr, "Slurm: SLURM_CONF=%s, logs in %s/log/\n", d->ds->conf, d->ds->dir);
	return rc < 0 ? rc : FP_EIO;
}

/* 1 when the JSON array a holds the string v. */
static int has_str(const json_t *a, const char *v)
{
	size_t i;
	json_t *x;
	json_array_foreach(a, i, x) {
		if (json_string_value(x) && strcmp(json_string_value(x), v) == 0)
			return 1;
	}
	return 0;
}

/* Waits (bounded) until node's Slurm state is exactly IDLE: fleetplane resumed it when the
 * node became available. */
static int wait_slurm_idle(struct demo *d, const char *node)
{
	int64_t until = demo_mono_ms() + DS_WAIT_MS;
	char st[64] = "", why[SLURM_NODE_REASON_LEN];
	while (show_node(node, st, sizeof(st), why, sizeof(why), NULL) < 0 ||
	       strcmp(st, "IDLE") != 0) {
		if (demo_mono_ms() > until)
			return sfail(d, "waiting for the node to be IDLE in Slurm", FP_ETIMEDOUT);
		if (demo_nap(d, 250))
			return sfail(d, "waiting for the node to be IDLE in Slurm", FP_ECLOSED);
	}
	printf("  %5.1fs  %-8s Slurm State=%s (fleetplane resumed it when it became available)\n",
	       secs(d), node, st);
	return 0;
}

/* sbatch --parsable -w node --gres=gpu:2 (sbatch(1)); the job id into s->job. */
static int submit(struct demo *d, const char *node)
{
	struct demo_slurm *s = d->ds;
	char chdir_[DS_PATH_MAX + 16], out[DS_PATH_MAX + 32], wrap[32];
	snprintf(chdir_, sizeof(chdir_), "--chdir=%s/jobs", s->dir);
	snprintf(out, sizeof(out), "--output=%s/jobs/slurm-%%j.out", s->dir);
	snprintf(wrap, sizeof(wrap), "sleep %d", DS_JOB_SECONDS);
	char *argv[] = {"sbatch",       "--parsable", "-w", (char *)node,
			"--gres=gpu:2", chdir_,       out,  "--job-name=fleetplane-demo",
			"--wrap",       wrap,         NULL};
	struct proc_result res;
	int rc = tool(argv, &res);
	size_t n = res.out.data ? strspn(res.out.data, "0123456789") : 0;
	if (rc == 0 && n > 0 && n < sizeof(s->job))
		snprintf(s->job, sizeof(s->job), "%.*s", (int)n, res.out.data);
	else {
		fprintf(stderr, "error: sbatch: %s\n",
			res.err.data && res.err.len ? res.err.data : "no job id printed");
		rc = -1;
	}
	proc_result_release(&res);
	if (rc < 0)
		return sfail(d, "submitting the job", FP_EIO);
	printf("  %5.1fs  %-8s sbatch --parsable -w %s --gres=gpu:2 --wrap '%s' -> job %s\n",
	       secs(d), node, node, wrap, s->job);
	return 0;
}

/* Waits until status.workload says busy with the job. */
static int wait_busy(struct demo *d, const char *node)
{
	const char *job = d->ds->job;
	int64_t until = demo_mono_ms() + DS_WAIT_MS;
	for (;;) {
		json_t *n = NULL;
		if (demo_get_node(d, node, &n) == 0) {
			const char *ws = jsonx_str(n, "status.workload.state");
			int ok = ws && strcmp(ws, "busy") == 0 &&
				 has_str(jsonx_path(n, "status.workload.jobs"), job);
			json_decref(n);
			if (ok)
				break;
		}
		if (demo_mono_ms() > until)
			return sfail(d, "waiting for status.workload busy with the job",
				     FP_ETIMEDOUT);
		if (demo_nap(d, 250))
			return sfail(d, "waiting for status.workload busy with the job",
				     FP_ECLOSED);
	}
	char st[64], why[SLURM_NODE_REASON_LEN];
	show_node(node, st, sizeof(st), why, sizeof(why), NULL);
	printf("  %5.1fs  %-8s status.workload busy, jobs [%s]; Slurm State=%s\n", secs(d), node,
	       job, st);
	return 0;
}

/* What the scenario has seen so far; the step named in a failure is the first not seen. */
struct seen {
	int hold, slurm_drain, jobs_running, job_ended, back, resumed;
	size_t hist0;
	char job[24]; /* the job id */
	char phase[24], rung[24];
};

static const char *next_step(const struct seen *v)
{
	return !v->hold           ? "waiting for the health hold"
	       : !v->slurm_drain  ? "waiting for the DRAIN with fleetplane's reason in Slurm"
	       : !v->jobs_running ? "waiting for WorkloadDrained False JobsRunning"
	       : !v->job_ended    ? "waiting for the job to end"
	       : !v->back         ? "waiting for the node to be available again"
				  : "waiting for the RESUME in Slurm";
}

/* One look at the node and its Slurm line; prints what changed. -1 when the node failed. */
static int look(struct demo *d, const char *node, struct seen *v)
{
	const char *job = v->job;
	json_t *n = NULL;
	if (demo_get_node(d, node, &n) < 0)
		return 0;
	const char *ph = jsonx_str(n, "status.phase");
	const json_t *hold = demo_health_hold(n);
	if (hold && !v->hold) {
		v->hold = 1;
		printf("  %5.1fs  %-8s hold owner health: %s\n", secs(d), node,
		       jsonx_str(hold, "reason") ? jsonx_str(hold, "reason") : "?");
	}
	char st[64] = "", why[SLURM_NODE_REASON_LEN] = "";
	int drain = 0, sc = show_node(node, st, sizeof(st), why, sizeof(why), &drain);
	if (sc == 0 && v->hold && !v->slurm_drain && drain &&
	    strncmp(why, "fleetplane: health: ", 20) == 0) {
		v->slurm_drain = 1;
		printf("  %5.1fs  %-8s Slurm State=%s Reason=%s\n", secs(d), node, st, why);
	}
	const json_t *jobs = jsonx_path(n, "status.workload.jobs");
	const char *ws = jsonx_str(n, "status.workload.state");
	if (v->jobs_running && !v->job_ended && ws && !has_str(jobs, job)) {
		v->job_ended = 1;
		*d->ds->job = 0; /* nothing to cancel at the end */
		printf("  %5.1fs  %-8s job %s ended; status.workload %s\n", secs(d), node, job, ws);
	}
	const char *rung = jsonx_str(n, "status.remediation.rung");
	if (ph && (strcmp(ph, v->phase) != 0 || (rung && strcmp(rung, v->rung) != 0))) {
		if (strcmp(ph, "repairing") == 0)
			printf("  %5.1fs  %-8s repairing: rung %s\n", secs(d), node,
			       rung ? rung : "?");
		else if (strcmp(ph, v->phase) != 0 && strcmp(ph, "available") != 0)
			printf("  %5.1fs  %-8s %s\n", secs(d), node, ph);
		snprintf(v->phase, sizeof(v->phase), "%s", ph);
		snprintf(v->rung, sizeof(v->rung), "%s", rung ? rung : "");
	}
	const json_t *wd = demo_node_cond(n, "WorkloadDrained");
	const char *wds = wd ? jsonx_str(wd, "status") : NULL,
		   *wdr = wd ? jsonx_str(wd, "reason") : NULL,
		   *wdm = wd ? jsonx_str(wd, "message") : NULL;
	if (!v->jobs_running && wds && wdr && wdm && strcmp(wds, "False") == 0 &&
	    strcmp(wdr, "JobsRunning") == 0 && strstr(wdm, job)) {
		v->jobs_running = 1;
		printf("  %5.1fs  %-8s WorkloadDrained False JobsRunning: %s\n", secs(d), node,
		       wdm);
	}
	int rc = 0;
	if (ph && strcmp(ph, "failed") == 0) {
		printf("  %5.1fs  %-8s failed: %s\n", secs(d), node,
		       jsonx_str(n, "status.reason") ? jsonx_str(n, "status.reason") : "");
		rc = -1;
	}
	const json_t *hist = jsonx_path(n, "status.remediationHistory");
	size_t nh = json_array_size(hist);
	if (!v->back && v->job_ended && ph && strcmp(ph, "available") == 0 && !hold &&
	    json_array_size(jsonx_path(n, "status.holds")) == 0 && nh > v->hist0) {
		const json_t *last = json_array_get(hist, nh - 1);
		v->back = 1;
		printf("  %5.1fs  %-8s available: health hold released, %s %s on rung %s, "
		       "validated\n",
		       secs(d), node, jsonx_str(last, "code") ? jsonx_str(last, "code") : "?",
		       jsonx_str(last, "result") ? jsonx_str(last, "result") : "?",
		       jsonx_str(last, "rung") ? jsonx_str(last, "rung") : "?");
	}
	/* Exactly IDLE: not DRAIN, and not IDLE+NOT_RESPONDING (Slurm pings a node it has just
	 * resumed before it counts as responding again). */
	if (v->back && !v->resumed && sc == 0 && strcmp(st, "IDLE") == 0) {
		v->resumed = 1;
		printf("  %5.1fs  %-8s RESUMEd in Slurm: State=%s\n", secs(d), node, st);
	}
	json_decref(n);
	fflush(stdout);
	return rc;
}

/* The first Slurm node that is available with no holds and was never remediated (a repeat of
 * XID 79 on the same GPU starts higher on the ladder: docs/health.md), or NULL. */
static const char *pick_node(struct demo *d)
{
	for (int i = 0; i < DEMO_SLURM_NODES; i++) {
		json_t *n = NULL;
		if (demo_get_node(d, ds_nodes[i], &n) < 0)
			continue;
		const char *ph = jsonx_str(n, "status.phase");
		int ok = ph && strcmp(ph, "available") == 0 &&
			 json_array_size(jsonx_path(n, "status.holds")) == 0 &&
			 json_array_size(jsonx_path(n, "status.remediationHistory")) == 0;
		json_decref(n);
		if (ok)
			return ds_nodes[i];
	}
	return NULL;
}

int demo_slurm_scenario(struct demo *d)
{
	const char *node = pick_node(d);
	d->h0 = demo_mono_ms();
	if (!node) {
		fprintf(stderr,
			"error: demo: Slurm scenario: %s and %s were both remediated by earlier runs "
			"of this data dir (a repeat XID 79 on the same GPU starts higher on the "
			"ladder); use a fresh --data-dir\n",
			ds_nodes[0], ds_nodes[1]);
		return FP_ESTATE;
	}
	printf("\nSlurm: a job on %s, then a real XID 79 line on it (slurmctld and slurmd %s, %s "
	       "run by the demo; SLURM_CONF=%s)\n",
	       node, ds_nodes[0], ds_nodes[1], d->ds->conf);
	fflush(stdout);
	int rc;
	if ((rc = wait_slurm_idle(d, node)) < 0 || (rc = submit(d, node)) < 0 ||
	    (rc = wait_busy(d, node)) < 0)
		return rc;
	struct seen v = {0};
	snprintf(v.job, sizeof(v.job), "%s", d->ds->job);
	json_t *n = NULL;
	if (demo_get_node(d, node, &n) == 0) {
		v.hist0 = json_array_size(jsonx_path(n, "status.remediationHistory"));
		snprintf(v.phase, sizeof(v.phase), "%s",
			 jsonx_str(n, "status.phase") ? jsonx_str(n, "status.phase") : "");
	}
	json_decref(n);
	if ((rc = demo_feed_xid79(d, node)) < 0)
		return rc;
	/* The scenario's deadline: the job's own time plus a step's bound, within the demo's. */
	int64_t until = demo_mono_ms() + DS_WAIT_MS + DS_JOB_SECONDS * 1000L,
		whole = d->t0 + d->timeout_s * 1000;
	if (whole < until)
		until = whole;
	while (!v.resumed) {
		if (look(d, node, &v) < 0)
			return sfail(d, "the node failed", FP_ESTATE);
		if (v.resumed)
			break;
		if (demo_mono_ms() > until)
			return sfail(d, next_step(&v), FP_ETIMEDOUT);
		if (demo_nap(d, 250))
			return sfail(d, next_step(&v), FP_ECLOSED);
	}
	if (!v.slurm_drain || !v.jobs_running)
		return sfail(d, next_step(&v), FP_ESTATE);
	printf("  %5.1fs  %-8s done: held and drained in Slurm under job %s, waited for it, "
	       "healed and returned\n",
	       secs(d), node, v.job);
	return 0;
}
