/* serve_opts.h - the options of `fleetplane serve`, from one table (serve_opts.c): the getopt
 * long options, the usage text, value parsing, bounds and error messages all come from it, for
 * command-line flags and for `--config FILE` lines (`key value`, key = the flag without its
 * dashes) alike. Sits in cmd; depends on base (log levels, errors), api/server.h (the report
 * limit defaults) and fleet/fleet.h (struct fleet_config, fields only: nothing to link).
 * cmd_serve (serve.c) and cmd_demo (demo.c) turn the values into a struct fleet_config with
 * serve_opts_fleet_config. */
#ifndef FP_CMD_SERVE_OPTS_H
#define FP_CMD_SERVE_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SERVE_OPTS_MAX 64         /* options in the table, at most */
#define SERVE_OPTS_VALUE_MAX 4096 /* bytes of one string value from a config file, NUL included */
#define SERVE_OPTS_LINE_MAX 4096  /* bytes of one config file line, newline included */
#define SERVE_OPTS_FILE_MAX (1 << 20) /* bytes of a config file */

/* Every serve option's value. String fields point into argv or into strbuf (config file
 * values); the struct owns nothing on the heap, so it may be copied only by serve_opts_copy. */
struct serve_opts {
	const char *data_dir;
	const char *listen;
	long sim;
	double sim_speed;
	uint64_t sim_faults; /* 0 = off */
	long workers;
	long executor_threads;
	double site_qps;
	const char *log_level;           /* NULL = leave the log level alone */
	const char *log_format;          /* "logfmt" (default) or "json" */
	const char *bmc_credentials_dir; /* NULL = DATA_DIR/bmc-credentials */
	long bmc_concurrency;
	long bmc_min_interval; /* milliseconds */
	long bmc_timeout;      /* seconds */
	long bmc_breaker_failures;
	int new_secret_key;
	long heartbeat_timeout; /* seconds; 0 = 3 x the agent's interval */
	double report_rate;     /* reports per second per node; 0 = no limit */
	long report_burst;
	long report_events;             /* events per minute per node; 0 = no limit */
	long metrics_node_series;       /* per-node series up to this many nodes; 0 = never */
	long api_max_connections;       /* open API connections in all */
	long api_max_conn_per_client;   /* per client address; 0 = no limit */
	long api_header_timeout;        /* seconds for a request line and headers */
	long api_body_timeout;          /* seconds for a request body */
	long api_idle_timeout;          /* seconds a keep-alive connection may idle */
	const char *config;             /* --config FILE */
	int check;                      /* --check: validate and exit */
	int slurm;                      /* --slurm: run the Slurm backend in the scheduler slot */
	long slurm_interval;            /* seconds between full Slurm passes */
	long slurm_stuck_completing;    /* seconds a job may stay COMPLETING; 0 = not watched */
	const char *slurm_nodes_conf;   /* --slurm-nodes-conf: the generated include, or NULL */
	const char *slurm_gres_conf;    /* --slurm-gres-conf: the generated gres.conf, or NULL */
	const char *boot_listen;        /* --boot-listen: the network boot service, or NULL */
	const char *boot_url;           /* --boot-url: what machines are told; NULL = from listen */
	const char *boot_kernel;        /* --boot-kernel: ramdisk kernel image name */
	const char *boot_initrd;        /* --boot-initrd: ramdisk initrd image name */
	const char *boot_kernel_args;   /* --boot-kernel-args, or NULL */
	const char *boot_dhcp_hosts;    /* --boot-dhcp-hosts: dnsmasq dhcp-hostsfile, or NULL */
	const char *boot_dnsmasq_pid;   /* --boot-dnsmasq-pid: dnsmasq's pid file, or NULL */
	const char *boot_dhcp_hostsdir; /* --boot-dhcp-hostsdir: dnsmasq dhcp-hostsdir, or NULL */
	long boot_timeout;              /* --boot-timeout seconds; 0 = the steps' own */
	const char *store;              /* --store URI; NULL = sqlite in the data dir */
	long leader_ttl;                /* --leader-ttl seconds (etcd store) */
	const char *advertise_url;      /* --advertise-url; NULL = http://<listen> */
	const char *tls_cert;           /* --tls-cert FILE, or NULL (self-signed in the data dir) */
	const char *tls_key;            /* --tls-key FILE, or NULL */
	int plain_http;                 /* --plain-http: no TLS */
	int help;
	unsigned char set[SERVE_OPTS_MAX];                 /* option i was given (flag or file) */
	char strbuf[SERVE_OPTS_MAX][SERVE_OPTS_VALUE_MAX]; /* string values read from a file */
};

/* serve_opts_defaults fills *o with every option's default from the table. */
void serve_opts_defaults(struct serve_opts *o);

/* serve_opts_derive sets the values that follow from others unless they were given:
 * executor-threads 4 with sim-speed 0. serve_opts_parse calls it; a caller that fills *o with
 * serve_opts_defaults and then sets fields itself (demo) calls it after them. */
void serve_opts_derive(struct serve_opts *o);

struct fleet_config;

/* serve_opts_fleet_config fills *cfg (zeroed first: no scheduler, no boot service, the parts of
 * serve) from *o. The strings are borrowed from *o (or what its fields point at), which must
 * outlive the fleet. */
void serve_opts_fleet_config(const struct serve_opts *o, struct fleet_config *cfg);

/* serve_opts_copy copies *src into *dst, pointing dst's file-read strings at dst's own strbuf. */
void serve_opts_copy(struct serve_opts *dst, const struct serve_opts *src);

/* serve_opts_usage prints the usage line and one help paragraph per option to f. */
void serve_opts_usage(FILE *f);

/* serve_opts_load_file reads `key value` lines of path into *o through the table: blank lines
 * and lines starting with `#` (after blanks) are skipped; the value is the rest of the line
 * after the key and blanks, trailing blanks cut. An unknown key, a bad or out-of-range value,
 * a key given twice, a flag-only option, a line over SERVE_OPTS_LINE_MAX or a file over
 * SERVE_OPTS_FILE_MAX fail with "PATH:LINE: KEY: WHY" (or "PATH: WHY") in err, and *o is left
 * as it was: the file is parsed into a copy that replaces *o only on success. Returns 0 or
 * FP_EINVAL / FP_EIO. */
int serve_opts_load_file(const char *path, struct serve_opts *o, char *err, size_t errlen);

/* serve_opts_parse parses serve's argv (argv[0] = "serve") into *o: defaults, then the file
 * named by --config (wherever it stands), then every flag, so a flag overrides the file. Checks
 * that --data-dir is given and that nothing but options is. Prints errors (and the usage where
 * it did before) to stderr, the help to stdout. Returns -1 to go on with *o, or the exit code
 * (0 after --help, 2 for a usage error). */
int serve_opts_parse(int argc, char **argv, struct serve_opts *o);

struct boot_config;

/* serve_opts_boot_config fills *bc from o's --boot-* options, the image store being
 * <data-dir>/images written into imgdir (imgdirlen bytes). Strings borrowed from o and imgdir. */
void serve_opts_boot_config(const struct serve_opts *o, char *imgdir, size_t imgdirlen,
			    struct boot_config *bc);

/* serve_opts_validate checks how the options go together, without touching anything:
 * --slurm-nodes-conf/--slurm-gres-conf need --slurm (gres also nodes) and are absolute paths
 * of at most 1024 bytes; the --boot-* options (--boot-timeout above 0 too) need --boot-listen,
 * --boot-dnsmasq-pid needs --boot-dhcp-hosts, and the boot service's config passes
 * boot_config_check. Returns 0 or FP_EINVAL with the line in err (no "error: " prefix). */
int serve_opts_validate(const struct serve_opts *o, char *err, size_t errlen);

/* serve_opts_check is `serve --check` after a successful parse: the data dir exists as a
 * directory or its parent does (nothing is created), listen is host:port with a port
 * 0..65535 and a host that resolves, and serve_opts_validate passes. Prints "configuration ok"
 * to stdout and returns 0, or prints "error: ..." to stderr and returns 2. */
int serve_opts_check(const struct serve_opts *o);

/* packaging (issue 15): serve_opts_diff writes into names (max entries) the option names (the
 * config file keys, static strings) whose values differ between *a and *b, in table order,
 * the command-line-only options left out; a string option set in one and NULL in the other
 * differs. Returns how many were written. For the SIGHUP reload (serve_reload.h). */
size_t serve_opts_diff(const struct serve_opts *a, const struct serve_opts *b, const char **names,
		       size_t max);

#endif
