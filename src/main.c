/* main.c - the subcommand table of the one fleetplane binary (git.c cmd_struct) and nothing
 * else. */
#include <stdio.h>
#include <string.h>

#include "base/version.h"
#include "cmd/cli_context.h"
#include "cmd/cmds.h"
#include "cmd/run.h"

struct cmd_struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct cmd_struct commands[] = {
	{"serve", cmd_serve, "run the control plane (API, controllers, store)"},
	{"demo", cmd_demo, "run serve with a simulated fleet and bring it to available"},
	{"node", cmd_node, "list, get, enroll, drain, resume, retire, release nodes"},
	{"op", cmd_op, "list and get operations"},
	{"event", cmd_event, "list audit events"},
	{"token", cmd_token, "create, list, revoke API tokens (admin)"},
	{"health", cmd_health, "GPU health events, policy, disruption budgets, breakers, RMAs"},
	{"slurm", cmd_slurm, "adopt a running Slurm cluster's nodes; render its node config"},
	{"usage", cmd_usage, "GPU-hours per Slurm account, user or partition (serve --slurm)"},
	{"image", cmd_image, "add, list, remove network-boot images (kernel, initrd, disk)"},
	{"sim", cmd_sim, "deterministic fleet simulation under faults; sim state: saved machines"},
	{"store", cmd_store, "migrate a stopped serve's store (sqlite: to etcd://), verified"},
	{"agent", cmd_agent, "run the node agent: kernel log and GPU tool health reports"},
	{"kubeconfig", cmd_kubeconfig, "print a kubeconfig for kubectl (server, CA, token)"},
	{"completion", cmd_completion, "print a bash or zsh completion script"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: fleetplane <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-7s %s\n", commands[i].name, commands[i].help);
	fprintf(f,
		"\nclients read FLEETPLANE_URL (default https://127.0.0.1:7070), FLEETPLANE_CA and "
		"FLEETPLANE_TOKEN,\nor a context of ~/.config/fleetplane/config: fleetplane "
		"--context NAME <command> ...\nRun 'fleetplane <command> --help' for a command's "
		"options.\n");
}

int main(int argc, char **argv)
{
	/* kube (issue 13): installed or linked as kubectl-fleet, the binary is a kubectl plugin */
	const char *base = argc > 0 ? strrchr(argv[0], '/') : NULL;
	base = base ? base + 1 : (argc > 0 ? argv[0] : "");
	if (strcmp(base, "kubectl-fleet") == 0)
		return cmd_kubectl_fleet(argc, argv);
	if (cli_context_take(&argc, argv) != 0) /* fleetplane --context NAME <command> ... */
		return 2;
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("fleetplane %s (%s)\n", FP_VERSION, fp_commit());
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "error: unknown command \"%s\"\n\n", argv[1]);
	usage(stderr);
	return 2;
}
