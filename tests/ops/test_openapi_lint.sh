#!/usr/bin/env bash
# redocly lint of both OpenAPI documents serve publishes: the native API (/v1/openapi.json) and
# the Kubernetes-style one kubectl reads (/openapi/v3/apis/fleetplane.io/v1). Clean means zero
# errors and zero warnings under Redocly's recommended rules (tests/ops/redocly.yaml says the one
# rule turned off and why). redocly comes from scripts/install-deps.sh --test (npm, pinned).
source "$(dirname "$0")/../integration/lib.sh"

REDOCLY=${FP_REDOCLY:-${FP_NPM_PREFIX:-/opt/fleetplane-test}/node_modules/.bin/redocly}
[ -x "$REDOCLY" ] || { echo "skip: redocly missing ($REDOCLY; scripts/install-deps.sh --test)"; exit 77; }
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true

start_serve "$WORK/d"
curl -sf -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/v1/openapi.json" \
	>"$WORK/native.json" || fail "GET /v1/openapi.json"
curl -sf -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
	"$FLEETPLANE_URL/openapi/v3/apis/fleetplane.io/v1" >"$WORK/kube-v3.json" ||
	fail "GET /openapi/v3/apis/fleetplane.io/v1"
assert_eq 3.0.3 "$(jq -r .openapi "$WORK/native.json")" "native document's OpenAPI version"

for doc in native kube-v3; do
	"$REDOCLY" lint --config "$ROOT/tests/ops/redocly.yaml" --format json "$WORK/$doc.json" \
		>"$WORK/$doc.lint.json" 2>"$WORK/$doc.lint.err" || true
	jq -e .totals "$WORK/$doc.lint.json" >/dev/null ||
		fail "redocly lint $doc printed no report: $(tail -3 "$WORK/$doc.lint.err")"
	probs=$(jq -r '.problems[] | "\(.severity) \(.ruleId) \(.location[0].pointer): \(.message)"' \
		"$WORK/$doc.lint.json")
	assert_eq "0 0" "$(jq -r '"\(.totals.errors) \(.totals.warnings)"' "$WORK/$doc.lint.json")" \
		"redocly errors and warnings in the $doc document${probs:+:
$probs}"
done
echo "ok: redocly lint clean: native ($(jq '.paths | length' "$WORK/native.json") paths)," \
	"kube-v3 ($(jq '.paths | length' "$WORK/kube-v3.json") paths)"
