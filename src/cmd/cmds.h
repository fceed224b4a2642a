/* cmds.h - entry points of the client subcommands of the one `fleetplane` binary (DESIGN.md
 * "One binary": `fleetplane <noun> <verb>`). src/main.c's subcommand table calls them as
 * cmd_node(argc - 1, argv + 1): argv[0] is the noun ("node"), argv[1] the verb.
 *
 * Each returns the process exit code: 0 ok, 1 API/HTTP error, 2 usage error (unknown verb or
 * flag, missing argument, FLEETPLANE_TOKEN unset), 3 cannot connect to FLEETPLANE_URL.
 * Results go to stdout, one-line errors to stderr. argv is borrowed and may be permuted by
 * getopt_long. docs/cli.md is the reference for every verb and flag. */
#ifndef FP_CMD_CMDS_H
#define FP_CMD_CMDS_H

/* fleetplane node list|get|enroll|drain|resume|retire|release ... */
int cmd_node(int argc, char **argv);
/* fleetplane op list|get ... */
int cmd_op(int argc, char **argv);
/* fleetplane event list ... */
int cmd_event(int argc, char **argv);
/* fleetplane token create|list|revoke ... */
int cmd_token(int argc, char **argv);
/* fleetplane health events|policy|budget|breaker|rma ... (cmd_health.c) */
int cmd_health(int argc, char **argv);
/* fleetplane slurm import|config ... (cmd_slurm.c) */
int cmd_slurm(int argc, char **argv);
/* fleetplane usage [--from --to --by] (cmd_usage.c): GPU-hours from Slurm's accounting */
int cmd_usage(int argc, char **argv);

/* fleetplane kubeconfig [--role ROLE] (cmd_kubeconfig.c): a kubeconfig for kubectl */
int cmd_kubeconfig(int argc, char **argv);
/* issue 15: `fleetplane completion bash|zsh` prints a shell completion script. */
int cmd_completion(int argc, char **argv);
/* The fleetplane binary run as kubectl-fleet (a kubectl plugin; main.c looks at argv[0]):
 * `kubectl fleet drain NODE --reason ...` (cmd_kubeconfig.c). argv[0] is the program. */
int cmd_kubectl_fleet(int argc, char **argv);

/* fleetplane image add|list|rm --data-dir DIR ... (cmd_image.c): the boot image store */
int cmd_image(int argc, char **argv);
/* fleetplane store migrate --from URI --to URI (cmd_store.c) */
int cmd_store(int argc, char **argv);

#endif
