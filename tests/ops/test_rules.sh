#!/usr/bin/env bash
# test_rules.sh - deploy/prometheus/fleetplane-rules.yml is valid (`promtool check rules`: syntax,
# PromQL, no duplicate names) and behaves as fleetplane-rules.test.yml says (`promtool test
# rules`: every alert fires on synthetic series where it should, with its labels and
# annotations, and stays quiet where it should not). Also: every metric name the rules use is one
# serve exports (docs/api.md "Metrics reference"), so a renamed metric cannot leave an alert that
# never fires. Needs promtool (Debian package prometheus) and python3-yaml; exit 77 without.
# ~1 s.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$ROOT/deploy/prometheus
command -v promtool >/dev/null || { echo "skip: promtool not installed (package prometheus)"; exit 77; }
python3 -c 'import yaml' 2>/dev/null || { echo "skip: python3 yaml module missing (package python3-yaml)"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$(promtool check rules "$D/fleetplane-rules.yml" 2>&1) || fail "promtool check rules: $out"
grep -q "SUCCESS" <<<"$out" || fail "promtool check rules said: $out"
out=$(cd "$D" && promtool test rules fleetplane-rules.test.yml 2>&1) || fail "promtool test rules: $out"

# Metric names in the rules' expressions: fleetplane_* and process_* (recording rules'
# outputs, fleetplane:..., are not metrics serve exports) must be in docs/api.md's table.
python3 - "$D/fleetplane-rules.yml" "$ROOT/docs/api.md" <<'PY' || exit 1
import re, sys, yaml
rules = yaml.safe_load(open(sys.argv[1]))
doc = open(sys.argv[2]).read()
known = set(re.findall(r"^\| `([a-z_]+)` \|", doc, re.M))
bad = []
for g in rules["groups"]:
    for r in g["rules"]:
        for m in re.findall(r"\b((?:fleetplane|process)_[a-z_]+)", r["expr"]):
            base = re.sub(r"_(bucket|count|sum)$", "", m)
            if m not in known and base not in known:
                bad.append((r.get("alert") or r.get("record"), m))
if bad:
    print("FAIL: rules use metrics docs/api.md does not list:", bad, file=sys.stderr)
    sys.exit(1)
PY
echo "ok: rules check and promtool test rules pass"
