/* serve_reload.h - packaging (issue 15): what `fleetplane serve` does on SIGHUP (docs/operations.md
 * "Running as a service"). The options are parsed again as at start (defaults, the --config
 * file, then the command-line flags over it); what can change in a running serve is applied,
 * which is the log level and the BMC rate limits (site-qps, bmc-concurrency, bmc-min-interval:
 * fleet_set_bmc_limits), and every other changed key is logged by name as needing a restart.
 * A file that does not parse or validate is logged with its reason (FILE:LINE: KEY: WHY) and
 * changes nothing. Never exits. Sits in cmd; depends on serve_opts.h and base/log.h. */
#ifndef FP_CMD_SERVE_RELOAD_H
#define FP_CMD_SERVE_RELOAD_H

struct serve_opts;
struct fleet;

/* serve_reload re-reads cur->config (argc/argv: serve's own, as given to serve_opts_parse,
 * still valid) and applies the changed log level to the process logger and to
 * cur->log_level (a static string then), and changed BMC limits to the running fleet fl
 * (borrowed) and cur. cur holds the running settings: keys needing a
 * restart are not copied into it, so every reload names them again until serve restarts.
 * Without --config it logs that there is nothing to re-read. Logs one line at info
 * (`serve: reloaded config=F applied=K,... restart_needed=K,...`) or, on a bad file, one at
 * error (`serve: reload failed, running settings kept config=F error="..."`). Returns 0
 * when the file was read (changes applied or none), or FP_EINVAL / FP_EIO for a bad file. */
int serve_reload(int argc, char **argv, struct serve_opts *cur, struct fleet *fl);

#endif
