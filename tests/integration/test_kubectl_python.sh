#!/usr/bin/env bash
# Debian's python3-kubernetes dynamic client (22.6) against serve's Kubernetes API over TLS with
# a bearer token (issue 13): discovery, list, merge patch, create, watch with a node leaving
# the selector as DELETED, a refused delete as an ApiException 409 from the Status. Skips when
# the module is missing (scripts/install-deps.sh --test installs it).
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3 # Debian's python, where python3-kubernetes lives (not a pyenv shim)
if ! "$PY" -c 'import kubernetes' 2>/dev/null; then
	echo "skip test_kubectl_python: python3-kubernetes is not installed"
	exit 0
fi
D="$WORK/d"
SERVE_TLS=1 start_serve "$D" --sim 2 --sim-speed 0
wait_phase available 2 30
"$FP" kubeconfig --role operator --name py >"$WORK/kc" || fail "fleetplane kubeconfig"
cat >"$WORK/t.py" <<'PY'
import sys, threading, time
from kubernetes import config, dynamic
from kubernetes.client import api_client
from kubernetes.client.rest import ApiException
c = dynamic.DynamicClient(api_client.ApiClient(configuration=config.load_kube_config(config_file=sys.argv[1])))
bmn = c.resources.get(api_version="fleetplane.io/v1", kind="BareMetalNode")
names = sorted(i.metadata.name for i in bmn.get().items)
assert names == ["r01n01", "r01n02"], names
r = bmn.patch(name="r01n01", body={"metadata": {"labels": {"py": "yes"}}},
              content_type="application/merge-patch+json")
assert r.metadata.labels.py == "yes", r
n = bmn.create(body={"apiVersion": "fleetplane.io/v1", "kind": "BareMetalNode",
                     "metadata": {"name": "py01"}, "spec": {"bmc": {"driver": "sim"}}})
assert n.metadata.name == "py01" and n.kind == "BareMetalNode", n
ev = []
def watch():
    for e in bmn.watch(label_selector="py=yes", timeout=3):
        ev.append((e["type"], e["object"].metadata.name))
t = threading.Thread(target=watch)
t.start()
time.sleep(1)
bmn.patch(name="r01n01", body={"metadata": {"labels": {"py": None}}},
          content_type="application/merge-patch+json")
t.join()
assert ev == [("ADDED", "r01n01"), ("DELETED", "r01n01")], ev
try:
    bmn.delete(name="r01n02")
    raise SystemExit("delete of an available node was accepted")
except ApiException as e:
    assert e.status == 409, e
print("ok python")
PY
out=$(timeout 60 "$PY" "$WORK/t.py" "$WORK/kc" 2>&1) || fail "python client: $out"
[[ $out == *"ok python"* ]] || fail "python client: $out"
echo "ok test_kubectl_python"
