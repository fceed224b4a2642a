#!/usr/bin/env bash
# test_dashboard.sh - every query of deploy/grafana/fleetplane.json answers with data from a real
# Prometheus scraping a real serve, and deploy/prometheus/fleetplane-rules.yml evaluates there
# without errors.
#
# serve runs a sim fleet of 8 nodes (--sim-speed 100); Prometheus (Debian package prometheus;
# scrape and rule evaluation every second, TSDB in the work dir, port chosen by the kernel)
# scrapes its /metrics with a viewer token and loads the rules. The test makes the data the
# panels show: the nodes provision (BMC calls, operations, store writes), an agent reports a real
# XID 79 line (health event, health hold, reboot remediation), a disruption budget is created,
# a request gets a 404 and a watch stream ends (so fleetplane_http_request_duration_seconds counts
# it and the SLO histogram fleetplane_http_unary_request_duration_seconds does not). Then every
# panel target (Grafana's $__rate_interval as 15s, $job as fleetplane, $site as .*) and both
# template variables go to /api/v1/query: status success and a non-empty result, except the
# panels listed in MAY_BE_EMPTY with the reason. /api/v1/rules: every rule health "ok". serve's
# /metrics passes `promtool check metrics`.
# Needs prometheus, jq, curl, python3 (exit 77 without). About 25 s.
set -uo pipefail
for t in prometheus jq curl python3; do
	command -v "$t" >/dev/null || { echo "skip: $t not installed (scripts/install-deps.sh --test)"; exit 77; }
done
. "$(dirname "$0")/../integration/lib.sh"

DASH=$ROOT/deploy/grafana/fleetplane.json
RULES=$ROOT/deploy/prometheus/fleetplane-rules.yml
PROM_PID=""
at_exit() { [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null; wait "$PROM_PID" 2>/dev/null || true; }

start_serve "$WORK/d" --sim 8 --sim-speed 100
"$FP" token create --role viewer --name prometheus | tail -n 1 >"$WORK/viewer.token"
HOSTPORT=${FLEETPLANE_URL#http://}

mkdir -p "$WORK/prom"
cat >"$WORK/prom/prometheus.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ['$RULES']
scrape_configs:
  - job_name: fleetplane
    authorization: {credentials_file: '$WORK/viewer.token'}
    static_configs: [{targets: ['$HOSTPORT']}]
YML
prometheus --config.file="$WORK/prom/prometheus.yml" --storage.tsdb.path="$WORK/prom/data" \
	--web.listen-address=127.0.0.1:0 >"$WORK/prom.log" 2>&1 &
PROM_PID=$!
PROM=""
for i in $(seq 1 100); do
	addr=$(sed -n 's/.*msg="Listening on" address=\(127\.0\.0\.1:[0-9]*\).*/\1/p' "$WORK/prom.log" | head -n1)
	if [ -n "$addr" ] && curl -sf "http://$addr/-/ready" >/dev/null; then PROM=http://$addr; break; fi
	kill -0 "$PROM_PID" 2>/dev/null || { cat "$WORK/prom.log" >&2; fail "prometheus exited"; }
	sleep 0.1
done
[ -n "$PROM" ] || fail "prometheus not ready in 10 s (see $WORK/prom.log)"

# ---- make the data -------------------------------------------------------------------------
wait_phase available 8 60
R=$(api POST /v1/budgets '{"metadata":{"name":"racks"},"spec":{"domain":"rack","maxUnavailable":1}}')
assert_eq 201 "$(head -n1 <<<"$R")" "create budget: $R"
assert_eq 404 "$(head -n1 <<<"$(api GET /v1/nodes/no-such-node)")" "GET a missing node"
XID79=$(grep -m1 -F 'NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus' \
	"$ROOT/tests/data/kernel/xid-and-gpu-kernel-lines-from-issues.log")
AGENT=$("$FP" token create --role agent --node r01n01 --name agent-r01n01 | tail -n 1)
NOW=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
REPORT=$(jq -cn --arg raw "$XID79" --arg t "$NOW" '
	{agent: {version: "0.4.0", bootId: "b-obs", intervalSeconds: 30},
	 detectors: [{name: "kernel", live: true, status: "unhealthy"}],
	 events: [{id: "obs-1", source: "kernel", code: "xid:79", gpu: {pciBusId: "0000:44:00.0"},
	           time: $t, message: "GPU has fallen off the bus", raw: $raw}]}')
R=$(api POST /v1/nodes/r01n01:report "$REPORT" "$AGENT")
assert_eq 200 "$(head -n1 <<<"$R")" "agent report"
assert_eq "hold" "$(sed -n '2,$p' <<<"$R" | jq -r '.decisions[0].action')" "XID 79 decision"
# a watch serve ends after 1 s (timeoutSeconds, on the Kubernetes surface): the request
# histogram counts it, the SLO one does not
code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
	"$FLEETPLANE_URL/apis/fleetplane.io/v1/baremetalnodes?watch=true&timeoutSeconds=1") ||
	fail "kube watch with timeoutSeconds=1 did not end by itself"
assert_eq 200 "$code" "kube watch"
ok=0
for i in $(seq 1 50); do
	# both counts from one scrape (Prometheus' scrapes are GET 200s too)
	read -r all unary < <(curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/metrics" |
		awk '$1 == "fleetplane_http_request_duration_seconds_count{method=\"GET\",code=\"200\"}" {a = $2}
		     $1 == "fleetplane_http_unary_request_duration_seconds_count{method=\"GET\",code=\"200\"}" {u = $2}
		     END {print a + 0, u + 0}')
	if [ "$((all - unary))" -ge 1 ]; then ok=1; break; fi
	sleep 0.1
done
[ $ok = 1 ] || fail "a finished watch is not told apart: all=$all unary=$unary"
# the health hold's remediation (reboot) runs to its end: fleetplane_remediations_total
for i in $(seq 1 150); do
	[ "$("$FP" node get r01n01 -o json | jq '.status.remediationHistory // [] | length')" -ge 1 ] && break
	sleep 0.2
done

# the exposition itself lints clean (names, HELP, TYPE, suffixes), new families included
if command -v promtool >/dev/null; then
	lint=$(curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/metrics" | promtool check metrics 2>&1) ||
		fail "promtool check metrics: $lint"
fi

# ---- every panel query against Prometheus --------------------------------------------------
python3 - "$DASH" "$PROM" <<'PY' || fail "dashboard queries (above)"
import json, sys, time, urllib.parse, urllib.request
dash = json.load(open(sys.argv[1]))
prom = sys.argv[2]
# Panels whose query may rightly be empty here, and why.
MAY_BE_EMPTY = {
    "Nodes with a condition False": "shows only conditions False on some node; a healthy sim fleet may have none",
    "Firing fleetplane alerts": "nothing fires in a healthy fleet",
}
errors = []
assert dash["schemaVersion"] >= 38, "schemaVersion of Grafana 10/11"
assert any(i["name"] == "DS_PROMETHEUS" for i in dash["__inputs"]), "DS_PROMETHEUS input"
queries = []
ids = set()
for p in dash["panels"]:
    assert p["id"] not in ids, "duplicate panel id %s" % p["id"]
    ids.add(p["id"])
    if p["type"] == "row":
        continue
    if p["datasource"]["uid"] != "${DS_PROMETHEUS}":
        errors.append("%s: datasource is not ${DS_PROMETHEUS}" % p["title"])
    if not p.get("targets"):
        errors.append("%s: no targets" % p["title"])
    for t in p.get("targets", []):
        queries.append((p["title"], t["refId"], t["expr"]))
for v in dash["templating"]["list"]:
    q = v["query"]["query"]
    assert q.startswith("label_values(") and q.endswith(")"), q
    metric, label = q[len("label_values("):-1].rsplit(",", 1)
    queries.append(("variable " + v["name"], "-", "group by (%s) (%s)" % (label.strip(), metric.strip())))

def subst(e):
    return (e.replace("$__rate_interval", "15s").replace('"$job"', '"fleetplane"')
             .replace('"$site"', '".*"'))

def query(e):
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": e})
    try:
        return json.load(urllib.request.urlopen(url, timeout=10))
    except urllib.error.HTTPError as x:
        return json.load(x)

deadline = time.time() + 45
pending = list(queries)
last = {}
while pending and time.time() < deadline:
    still = []
    for title, ref, expr in pending:
        r = query(subst(expr))
        last[(title, ref)] = r
        if r.get("status") != "success":
            errors.append("%s/%s: %s: %s" % (title, ref, expr, r.get("error")))
        elif not r["data"]["result"] and title not in MAY_BE_EMPTY:
            still.append((title, ref, expr))
    pending = still
    if pending:
        time.sleep(1)
for title, ref, expr in pending:
    errors.append("%s/%s: empty result for %s" % (title, ref, subst(expr)))
for e in errors:
    print("FAIL:", e, file=sys.stderr)
print("%d queries checked, %d may be empty, %d problems" % (len(queries), sum(t in MAY_BE_EMPTY for t, _, _ in queries), len(errors)))
sys.exit(1 if errors else 0)
PY

# ---- the rules evaluate without errors -----------------------------------------------------
ok=0
for i in $(seq 1 50); do
	R=$(curl -s "$PROM/api/v1/rules")
	bad=$(jq -r '[.data.groups[].rules[] | select(.health != "ok") | "\(.name): \(.health) \(.lastError // "")"] | .[]' <<<"$R")
	n=$(jq '[.data.groups[].rules[]] | length' <<<"$R")
	if [ -z "$bad" ] && [ "$n" -gt 0 ]; then ok=1; break; fi
	sleep 0.2
done
[ $ok = 1 ] || fail "rules not healthy in Prometheus: $bad"
assert_eq "$(promtool check rules "$RULES" 2>/dev/null | sed -n 's/.*SUCCESS: \([0-9]*\) rules found/\1/p')" "$n" "rules loaded"
echo "ok: $n rules healthy; dashboard queries answered"
