/* cmd_completion.c - `fleetplane completion bash|zsh` (issue 15): prints a shell completion
 * script. The script keeps no list of commands, verbs or flags: at each TAB it asks the binary
 * itself, whose help is made from the command table (main.c: `fleetplane --help`) and the
 * usage text each verb prints with --help, so a new verb or flag completes without touching
 * this file:
 *   - command words: the entries of the "commands:", "Verbs:" or "Nouns:" section of
 *     `fleetplane WORDS... --help`, and the word after WORDS in its "fleetplane WORDS X" usage
 *     lines (`image add`, `health budget set`);
 *   - a word starting with '-': every --flag that help names;
 *   - after --context: the context names of the contexts file (cli_context.h).
 * zsh gets the same function through bashcompinit. */
#include <stdio.h>
#include <string.h>

#include "cmd/cli_common.h"
#include "cmd/cmds.h"

#include "base/banned.h"

static const char completion_usage[] =
	"Usage: fleetplane completion bash|zsh\n"
	"\n"
	"Prints a completion script for the shell. Load it with\n"
	"  source <(fleetplane completion bash)          # ~/.bashrc\n"
	"  source <(fleetplane completion zsh)           # ~/.zshrc\n"
	"It completes commands, verbs and --flags by asking the fleetplane it completes for\n"
	"(its --help), and context names after --context.\n";

static const char completion_bash[] =
	"# bash completion for fleetplane, printed by `fleetplane completion bash`.\n"
	"# It asks the binary being completed (its --help) for commands, verbs and flags.\n"
	"_fleetplane() {\n"
	"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
	"\tlocal bin=${COMP_WORDS[0]} words=() i w cands=\"\" help\n"
	"\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	"\t\tw=${COMP_WORDS[i]}\n"
	"\t\tif [[ $w == --context ]]; then ((i++)); continue; fi\n"
	"\t\t[[ $w == -* ]] && continue\n"
	"\t\twords+=(\"$w\")\n"
	"\tdone\n"
	"\tif [[ $prev == --context ]]; then\n"
	"\t\tlocal conf=${XDG_CONFIG_HOME:-$HOME/.config}/fleetplane/config\n"
	"\t\t[[ ${XDG_CONFIG_HOME:-} == /* ]] || conf=$HOME/.config/fleetplane/config\n"
	"\t\tcands=$(sed -n 's/^[[:space:]]*context[[:space:]][[:space:]]*\\([A-Za-z0-9._-]*\\).*/\\1/p' "
	"\"$conf\" 2>/dev/null)\n"
	"\telse\n"
	"\t\thelp=$(\"$bin\" \"${words[@]}\" --help 2>/dev/null </dev/null)\n"
	"\t\tif [[ $cur == -* ]]; then\n"
	"\t\t\tcands=$(grep -o -- '--[a-z][a-z0-9-]*' <<<\"$help\" | sort -u)\n"
	"\t\t\t((${#words[@]} == 0)) && cands=\"--context --help --version\"\n"
	"\t\telse\n"
	"\t\t\tcands=$(awk -v words=\"${words[*]}\" '\n"
	"\t\t\t\tBEGIN { n = split(words, w, \" \") }\n"
	"\t\t\t\t/^(commands|Verbs|Nouns):/ { sect = 1; next }\n"
	"\t\t\t\t/^$/ { sect = 0 }\n"
	"\t\t\t\tsect && $1 ~ /^[a-z][a-z-]*$/ { print $1 }\n"
	"\t\t\t\t{ for (i = 1; i <= NF; i++) if ($i == \"fleetplane\") {\n"
	"\t\t\t\t\tok = 1; for (j = 1; j <= n; j++) if ($(i + j) != w[j]) ok = 0\n"
	"\t\t\t\t\tx = $(i + n + 1); if (ok && x ~ /^[a-z][a-z-]*$/) print x } }' "
	"<<<\"$help\" | sort -u)\n"
	"\t\tfi\n"
	"\tfi\n"
	"\tCOMPREPLY=($(compgen -W \"$cands\" -- \"$cur\"))\n"
	"}\n"
	"complete -o default -F _fleetplane fleetplane\n";

static const char completion_zsh_head[] =
	"# zsh completion for fleetplane, printed by `fleetplane completion zsh`: the bash\n"
	"# completion through zsh's bashcompinit.\n"
	"autoload -U +X bashcompinit && bashcompinit\n";

int cmd_completion(int argc, char **argv)
{
	const char *cmd = "completion";
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(completion_usage, stdout);
		return CLIENT_EXIT_OK;
	}
	if (argc < 2)
		return client_usage_error(cmd, "missing SHELL (bash or zsh)");
	if (argc > 2)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[2]);
	if (strcmp(argv[1], "bash") == 0) {
		fputs(completion_bash, stdout);
		return CLIENT_EXIT_OK;
	}
	if (strcmp(argv[1], "zsh") == 0) {
		fputs(completion_zsh_head, stdout);
		fputs(completion_bash, stdout);
		return CLIENT_EXIT_OK;
	}
	return client_usage_error(cmd, "unknown shell '%s' (want bash or zsh)", argv[1]);
}
