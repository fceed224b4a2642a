#!/usr/bin/env bash
# `fleetplane completion bash|zsh` (issue 15): the scripts parse, and bash completes commands,
# verbs, nested verbs, flags and context names as COMP_WORDS/COMPREPLY show; the man page
# renders with no groff warning and names every command of `fleetplane --help`. No server.
. "$(dirname "$0")/lib.sh"

"$FP" completion bash >"$WORK/fp.bash"
bash -n "$WORK/fp.bash" || fail "completion bash: not valid bash"
"$FP" completion zsh >"$WORK/fp.zsh"
if command -v zsh >/dev/null; then
	zsh -n "$WORK/fp.zsh" || fail "completion zsh: not valid zsh"
fi
bash -n "$WORK/fp.zsh" || fail "completion zsh: its bash part does not parse"
set +e
"$FP" completion fish >/dev/null 2>"$WORK/err"
rc=$?
set -e
assert_eq 2 "$rc" "completion fish: exit code"
assert_eq "error: unknown shell 'fish' (want bash or zsh)" "$(head -n 1 "$WORK/err")" "completion fish: error"

# shellcheck source=/dev/null
source "$WORK/fp.bash"
comp() { # WORDS...: the candidates for the last word
	COMP_WORDS=("$FP" "$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_fleetplane
	echo "${COMPREPLY[*]}"
}
assert_eq "node" "$(comp no)" "command"
assert_eq "completion" "$(comp compl)" "command completion (from the command table)"
assert_eq "drain" "$(comp node dr)" "verb"
assert_eq "cancel get list" "$(comp op "")" "op verbs"
assert_eq "breaker budget" "$(comp health b)" "health nouns"
assert_eq "set" "$(comp health budget s)" "nested verb from usage lines"
assert_eq "add list rm" "$(comp image "")" "image verbs from usage lines"
assert_eq "--sort-by" "$(comp node list --so)" "flag"
assert_eq "--reason" "$(comp node drain r01n01 --rea)" "flag after an operand"
assert_eq "list" "$(comp --context lab node l)" "--context skipped"
mkdir -p "$WORK/xdg/fleetplane"
printf 'current-context prod\ncontext prod\nurl http://x\ncontext lab\n' >"$WORK/xdg/fleetplane/config"
assert_eq "lab" "$(XDG_CONFIG_HOME=$WORK/xdg comp --context l)" "context names"
assert_eq "prod lab" "$(XDG_CONFIG_HOME=$WORK/xdg comp --context "")" "all context names"

# The man page: groff renders it without a warning, and it has every command.
if command -v groff >/dev/null; then
	groff -man -Tutf8 -ww -z "$ROOT/docs/fleetplane.1" 2>"$WORK/groff.err"
	assert_eq "" "$(cat "$WORK/groff.err")" "groff warnings for docs/fleetplane.1"
	text=$(groff -man -Tutf8 -P-cbou "$ROOT/docs/fleetplane.1" 2>/dev/null)
	for c in $("$FP" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'); do
		grep -q "^       $c " <<<"$text" || grep -q "^       $c\$" <<<"$text" ||
			fail "docs/fleetplane.1 has no entry for command $c"
	done
else
	echo "note: groff not installed, man page not checked" >&2
fi
echo ok
