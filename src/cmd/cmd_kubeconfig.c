/* cmd_kubeconfig.c - `fleetplane kubeconfig`: prints a kubeconfig (YAML) with which the real
 * kubectl reaches fleetplane's Kubernetes API (docs/kubernetes.md): the server is
 * FLEETPLANE_URL (it must be https: kubectl sends no bearer token over http,
 * ../shared/recipes/kubectl.md section 1), the CA data comes from --ca or FLEETPLANE_CA (serve's
 * self-signed DATA_DIR/ca.crt), and the token is either a new one made for --role (POST
 * /v1/tokens, admin) or, without --role, FLEETPLANE_TOKEN itself. The file also holds the
 * kubectl-fleet plugin (cmd_kubectl_fleet): the binary run under that name. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <sodium.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/jsonx.h"
#include "cmd/cli_common.h"
#include "cmd/client.h"
#include "cmd/cmds.h"
#include "base/banned.h"

static const char kc_usage[] =
	"Usage: fleetplane kubeconfig [--role ROLE [--name NAME]] [--ca FILE] [--context NAME]\n"
	"\n"
	"Prints a kubeconfig for kubectl: server FLEETPLANE_URL (https), the CA of --ca or\n"
	"FLEETPLANE_CA, and a token.\n"
	"\n"
	"      --role ROLE     make a new token with this role (admin, operator, viewer; needs\n"
	"                      an admin FLEETPLANE_TOKEN); default: use FLEETPLANE_TOKEN\n"
	"      --name NAME     the new token's name (default kubectl-ROLE-UNIXTIME)\n"
	"      --ca FILE       PEM CA the server's certificate chains to (default FLEETPLANE_CA)\n"
	"      --context NAME  cluster, user and context name (default fleetplane)\n"
	"  -h, --help          this help\n";

/* YAML double-quoted scalar: the token and names are printable ASCII without quotes. */
static int yaml_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == '"' || *s == '\\' || (unsigned char)*s > 0x7e)
			return 0;
	return 1;
}

int cmd_kubeconfig(int argc, char **argv)
{
	static const struct option opts[] = {
		{"role", required_argument, NULL, 'r'},
		{"name", required_argument, NULL, 'n'},
		{"ca", required_argument, NULL, 'c'},
		{"context", required_argument, NULL, 'x'},
		CLI_OPTS_END_HELP,
	};
	const char *cmd = "kubeconfig", *role = NULL, *name = NULL, *ca = getenv("FLEETPLANE_CA");
	const char *ctx = "fleetplane";
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (ch) {
		case 'r': role = optarg; break;
		case 'n': name = optarg; break;
		case 'c': ca = optarg; break;
		case 'x': ctx = optarg; break;
		default: return cli_opt_default(cmd, ch, argv, kc_usage, 0, NULL);
		}
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	if (role && strcmp(role, "admin") && strcmp(role, "operator") && strcmp(role, "viewer"))
		return client_usage_error(cmd, "--role: want admin, operator or viewer");
	if (name && !role)
		return client_usage_error(cmd, "--name goes with --role");
	if (!yaml_safe(ctx) || !*ctx)
		return client_usage_error(cmd, "--context: printable characters without quotes");
	const char *url = getenv("FLEETPLANE_URL");
	if (!url || strncmp(url, "https://", 8) != 0)
		return client_usage_error(cmd, "FLEETPLANE_URL must be an https:// URL (kubectl "
					       "sends no token over http; serve without "
					       "--plain-http)");
	if (!ca || !*ca)
		return client_usage_error(cmd, "no CA: give --ca FILE or FLEETPLANE_CA (serve's "
					       "is DATA_DIR/ca.crt)");
	struct buf pem;
	char err[256];
	buf_init(&pem, 1 << 20);
	if (client_read_file(ca, &pem, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: %s\n", err);
		buf_release(&pem);
		return CLIENT_EXIT_USAGE;
	}
	size_t b64len = sodium_base64_ENCODED_LEN(pem.len, sodium_base64_VARIANT_ORIGINAL);
	char *b64 = xmalloc(b64len);
	sodium_bin2base64(b64, b64len, (const unsigned char *)pem.data, pem.len,
			  sodium_base64_VARIANT_ORIGINAL);
	buf_release(&pem);

	char *secret = NULL;
	json_t *resp = NULL;
	if (role) {
		char defname[64];
		if (!name) {
			snprintf(defname, sizeof(defname), "kubectl-%s-%lld", role,
				 (long long)time(NULL));
			name = defname;
		}
		json_t *body = json_pack("{s:s,s:s}", "name", name, "role", role);
		rc = cli_call("POST", "/v1/tokens", body, &resp);
		json_decref(body);
		if (rc != CLIENT_EXIT_OK)
			goto out;
		const char *s = jsonx_str(resp, "token");
		if (!s || !*s) {
			fprintf(stderr,
				"error: fleetplane answered POST /v1/tokens without a token\n");
			rc = CLIENT_EXIT_API;
			goto out;
		}
		secret = xstrdup(s);
		explicit_bzero((char *)s, strlen(s));
	} else {
		const char *t = getenv("FLEETPLANE_TOKEN");
		if (!t || !*t) {
			rc = client_usage_error(cmd, "FLEETPLANE_TOKEN is not set");
			goto out;
		}
		secret = xstrdup(t);
		size_t n = strlen(secret);
		while (n && (secret[n - 1] == '\n' || secret[n - 1] == ' '))
			secret[--n] = 0;
	}
	if (!yaml_safe(secret) || !yaml_safe(url)) {
		fprintf(stderr,
			"error: the token or URL has characters a kubeconfig cannot hold\n");
		rc = CLIENT_EXIT_USAGE;
		goto out;
	}
	printf("apiVersion: v1\n"
	       "kind: Config\n"
	       "clusters:\n"
	       "- name: \"%s\"\n"
	       "  cluster:\n"
	       "    server: \"%s\"\n"
	       "    certificate-authority-data: %s\n"
	       "users:\n"
	       "- name: \"%s\"\n"
	       "  user:\n"
	       "    token: \"%s\"\n"
	       "contexts:\n"
	       "- name: \"%s\"\n"
	       "  context:\n"
	       "    cluster: \"%s\"\n"
	       "    user: \"%s\"\n"
	       "current-context: \"%s\"\n",
	       ctx, url, b64, ctx, secret, ctx, ctx, ctx, ctx);
	fflush(stdout);
	rc = CLIENT_EXIT_OK;
out:
	if (secret) {
		explicit_bzero(secret, strlen(secret));
		free(secret);
	}
	json_decref(resp);
	free(b64);
	return rc;
}

/* ---------------------------------------------------------------- kubectl-fleet */

static const char kf_usage[] =
	"Usage: kubectl fleet VERB NODE [--reason TEXT] [--state on|off|cycle]\n"
	"\n"
	"fleetplane's node actions through kubectl (the fleetplane binary installed, or linked,\n"
	"as kubectl-fleet on PATH): POST /apis/fleetplane.io/v1/baremetalnodes/NODE/VERB with\n"
	"`kubectl create --raw`, so kubectl's kubeconfig, TLS and token are used.\n"
	"\n"
	"Verbs: drain, resume, retire, power, release\n"
	"      --reason TEXT   why (drain, retire, release)\n"
	"      --owner OWNER   the hold's owner (release)\n"
	"      --state STATE   power: on, off or cycle\n"
	"  -h, --help          this help\n";

int cmd_kubectl_fleet(int argc, char **argv)
{
	static const struct option opts[] = {
		{"reason", required_argument, NULL, 'r'},
		{"owner", required_argument, NULL, 'O'},
		{"state", required_argument, NULL, 's'},
		CLI_OPTS_END_HELP,
	};
	const char *cmd = "kubectl fleet", *reason = NULL, *owner = NULL, *state = NULL;
	int ch;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (ch) {
		case 'r': reason = optarg; break;
		case 'O': owner = optarg; break;
		case 's': state = optarg; break;
		default: return cli_opt_default(cmd, ch, argv, kf_usage, 0, NULL);
		}
	}
	if (argc - optind != 2)
		return client_usage_error(cmd, "expected VERB NODE");
	const char *verb = argv[optind], *node = argv[optind + 1];
	static const char *const verbs[] = {"drain", "resume", "retire", "power", "release", NULL};
	size_t i;
	for (i = 0; verbs[i] && strcmp(verbs[i], verb) != 0; i++)
		;
	if (!verbs[i])
		return client_usage_error(cmd,
					  "unknown verb %s (want drain, resume, retire, power "
					  "or release)",
					  verb);
	for (const char *p = node; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '.'))
			return client_usage_error(cmd, "NODE: not a node name");
	json_t *body = json_object();
	if (reason)
		json_object_set_new(body, "reason", json_string(reason));
	if (owner)
		json_object_set_new(body, "owner", json_string(owner));
	if (state)
		json_object_set_new(body, "state", json_string(state));
	char *s = jsonx_dumps(body);
	json_decref(body);
	char path[512];
	snprintf(path, sizeof(path), "/apis/fleetplane.io/v1/baremetalnodes/%s/%s", node, verb);
	/* kubectl create --raw PATH -f - reads the body from a pipe: argv only, no shell */
	int fds[2];
	if (pipe(fds) < 0) {
		free(s);
		perror("error: pipe");
		return CLIENT_EXIT_API;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[0], 0);
		close(fds[0]);
		close(fds[1]);
		char *const av[] = {"kubectl", "create", "--raw", path, "-f", "-", NULL};
		execvp("kubectl", av);
		perror("error: kubectl");
		_exit(127);
	}
	close(fds[0]);
	int rc = CLIENT_EXIT_API;
	if (pid > 0) {
		size_t n = strlen(s), off = 0;
		while (off < n) {
			ssize_t w = write(fds[1], s + off, n - off);
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		close(fds[1]);
		int st = 0;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		rc = WIFEXITED(st) ? WEXITSTATUS(st) : CLIENT_EXIT_API;
		if (rc == 0)
			printf("\n");
	} else {
		close(fds[1]);
		perror("error: fork");
	}
	free(s);
	return rc;
}
