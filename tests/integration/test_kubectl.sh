#!/usr/bin/env bash
# The real kubectl against serve's own Kubernetes API (issue 13; ../shared/recipes/kubectl.md
# section 11) over TLS (serve's self-signed certificate, `fleetplane kubeconfig`) with a bearer
# token: discovery, get (table, wide, yaml, -L, chunked), set-based selectors, label, patch
# (merge, json, strategic), apply (created / unchanged / configured), diff, explain, watch with
# a node leaving the selector as DELETED, wait, actions as subresources, describe with events,
# retire + delete, errors as Status, and kubectl over plain http refused. Runs with every
# kubectl version it finds (the image's 1.33 and 1.27 binaries next to the dispatcher); skips
# cleanly when none can be had.
. "$(dirname "$0")/lib.sh"
# `kubectl ... | grep -q X` checks the output; grep -q exits at the first match and kubectl may
# then die of SIGPIPE, which pipefail would count as a failure.
set +o pipefail

# The versioned binaries live next to the dispatcher (google-cloud-cli's kubectl package).
versions=()
if command -v kubectl >/dev/null 2>&1; then
	kdir=$(dirname "$(readlink -f "$(command -v kubectl)")")
	for v in 1.33 1.27; do
		[ -x "$kdir/kubectl.$v" ] && versions+=("$kdir/kubectl.$v")
	done
	[ ${#versions[@]} -eq 0 ] && versions+=("$(command -v kubectl)")
fi
# More binaries to run the outline with, e.g. Debian's 1.20 unpacked from
# `apt-get download kubernetes-client` (FP_KUBECTL="/path/to/usr/bin/kubectl")
for kb in ${FP_KUBECTL:-}; do
	[ -x "$kb" ] && versions+=("$kb") || echo "skip $kb: not an executable"
done
if [ ${#versions[@]} -eq 0 ]; then
	echo "skip test_kubectl: no kubectl on PATH"
	exit 0
fi

D="$WORK/d"
SERVE_TLS=1 start_serve "$D" --sim 4 --sim-speed 0
case $FLEETPLANE_URL in https://*) ;; *) fail "serve.url is not https: $FLEETPLANE_URL" ;; esac
"$FP" kubeconfig --role operator --name kube-op >"$WORK/kc" || fail "fleetplane kubeconfig"
grep -q "certificate-authority-data: " "$WORK/kc" || fail "kubeconfig has no CA data"
wait_phase available 4 30

# kwait MINOR PHASE NODE (K set by the caller): kubectl wait --for=jsonpath (kubectl >= 1.23),
# else a get loop
kwait() {
	if [ "$1" -ge 23 ]; then
		"${K[@]}" wait --for=jsonpath='{.status.phase}'="$2" "bmn/$3" --timeout=20s >/dev/null
		return
	fi
	local i
	for i in $(seq 1 100); do
		[ "$("${K[@]}" get bmn "$3" -o jsonpath='{.status.phase}')" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}

run_one() { # KUBECTL: the whole outline against one kubectl binary
	local kb=$1 tag
	tag=$(basename "$kb")
	local minor
	minor=$("$kb" version --client -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["minor"].rstrip("+"))')
	tag=kubectl-1.$minor
	local K=("$kb" --kubeconfig "$WORK/kc" --cache-dir "$WORK/cache-$tag")

	"${K[@]}" get --raw /version | grep -q gitVersion || fail "$tag: /version"
	"${K[@]}" api-resources | grep -Eq '^baremetalnodes +bmn +fleetplane.io/v1 +false +BareMetalNode' ||
		fail "$tag: api-resources lacks baremetalnodes"
	# table, wide, -L, chunked, yaml
	local out
	out=$("${K[@]}" get bmn)
	echo "$out" | head -1 | grep -Eq '^NAME +PHASE +HOLDS +SITE +RACK +GPUS +AGE$' || fail "$tag: table header: $out"
	[ "$(echo "$out" | grep -c ' available ')" = 4 ] || fail "$tag: 4 available rows: $out"
	out=$("${K[@]}" get bmn -o wide)
	echo "$out" | head -1 | grep -q 'PROVIDER *BMC' || fail "$tag: -o wide columns: $out"
	"${K[@]}" get bmn r01n01 -L rack | grep -Eq '^r01n01 .* r01$' || fail "$tag: -L rack"
	assert_eq 4 "$("${K[@]}" get bmn --chunk-size=1 -o name | wc -l)" "$tag: chunked list"
	assert_eq r01 "$("${K[@]}" get bmn r01n02 -o jsonpath='{.spec.rack}')" "$tag: jsonpath"
	"${K[@]}" get bmn r01n02 -o yaml | grep -q '^kind: BareMetalNode$' || fail "$tag: yaml kind"
	# selectors: set-based labels, fieldSelector
	"${K[@]}" label bmn r01n01 role=worker >/dev/null || fail "$tag: label"
	assert_eq "baremetalnode.fleetplane.io/r01n01" \
		"$("${K[@]}" get bmn -l 'role in (worker,x),rack!=r02' -o name)" "$tag: set-based selector"
	assert_eq 3 "$("${K[@]}" get bmn -l '!role' -o name | wc -l)" "$tag: !role"
	assert_eq "baremetalnode.fleetplane.io/r01n03" \
		"$("${K[@]}" get bmn --field-selector metadata.name=r01n03 -o name)" "$tag: fieldSelector"
	"${K[@]}" label bmn r01n01 role- >/dev/null || fail "$tag: unlabel"
	# patch: merge, then the same again is "no change"; json; strategic (plain patch)
	"${K[@]}" patch bmn r01n02 --type=merge -p '{"spec":{"pool":"train"}}' | grep -q 'patched$' || fail "$tag: merge patch"
	local rv1 rv2
	rv1=$("${K[@]}" get bmn r01n02 -o jsonpath='{.metadata.resourceVersion}')
	"${K[@]}" patch bmn r01n02 --type=merge -p '{"spec":{"pool":"train"}}' | grep -q 'patched (no change)' ||
		fail "$tag: no-op patch"
	rv2=$("${K[@]}" get bmn r01n02 -o jsonpath='{.metadata.resourceVersion}')
	assert_eq "$rv1" "$rv2" "$tag: a no-op patch keeps resourceVersion"
	"${K[@]}" patch bmn r01n02 --type=json -p '[{"op":"replace","path":"/spec/pool","value":"infer"}]' >/dev/null ||
		fail "$tag: json patch"
	"${K[@]}" patch bmn r01n02 -p '{"metadata":{"labels":{"tier":"b"}}}' >/dev/null || fail "$tag: strategic patch"
	assert_eq "infer b" "$("${K[@]}" get bmn r01n02 -o jsonpath='{.spec.pool} {.metadata.labels.tier}')" "$tag: patched fields"
	# apply / diff (1.27 validates with OpenAPI v2 only: --validate=false there)
	local val=()
	[ "$minor" -lt 29 ] && val=(--validate=false)
	cat >"$WORK/n-$tag.yaml" <<EOF
apiVersion: fleetplane.io/v1
kind: BareMetalNode
metadata:
  name: r02n0${minor: -1}
  labels: {rack: r02, from: git}
spec:
  site: sim-a
  rack: r01
  bmc: {driver: sim}
  gpus: {count: 8}
EOF
	"${K[@]}" apply "${val[@]}" -f "$WORK/n-$tag.yaml" | grep -q ' created$' || fail "$tag: apply create"
	"${K[@]}" apply "${val[@]}" -f "$WORK/n-$tag.yaml" | grep -q ' unchanged$' || fail "$tag: apply unchanged"
	sed -i 's/count: 8/count: 4/' "$WORK/n-$tag.yaml"
	# diff: kubectl < 1.29 needs OpenAPI v2 as protobuf for it (recipe section 7), not served
	if [ "$minor" -ge 29 ]; then
		local rc=0
		"${K[@]}" diff -f "$WORK/n-$tag.yaml" >"$WORK/diff-$tag.out" 2>&1 || rc=$?
		assert_eq 1 "$rc" "$tag: diff exit code (a difference)"
		grep -q '^+    count: 4' "$WORK/diff-$tag.out" || fail "$tag: diff output: $(cat "$WORK/diff-$tag.out")"
	fi
	"${K[@]}" apply "${val[@]}" -f "$WORK/n-$tag.yaml" | grep -q ' configured$' || fail "$tag: apply configured"
	assert_eq 4 "$("${K[@]}" get bmn "r02n0${minor: -1}" -o jsonpath='{.spec.gpus.count}')" "$tag: applied spec"
	if [ "$minor" -ge 29 ]; then
		"${K[@]}" explain bmn.spec.gpus | grep -q 'GPU count expected' || fail "$tag: explain"
	fi
	# errors are Status objects
	out=$("${K[@]}" get bmn nosuch 2>&1 || true)
	[[ $out == *"Error from server (NotFound)"* ]] || fail "$tag: NotFound: $out"
	# watch: a node that leaves the selector is DELETED; a single-object watch sees the change
	"${K[@]}" get bmn -l 'maint!=yes' -w --output-watch-events >"$WORK/w-$tag.out" 2>&1 &
	local wpid=$!
	"${K[@]}" get bmn r01n03 -w >"$WORK/w1-$tag.out" 2>&1 &
	local w1pid=$!
	sleep 1.5
	"${K[@]}" label bmn r01n03 maint=yes >/dev/null
	sleep 1.5
	kill "$wpid" "$w1pid" 2>/dev/null || true
	wait "$wpid" "$w1pid" 2>/dev/null || true
	grep -Eq '^DELETED +r01n03 ' "$WORK/w-$tag.out" || fail "$tag: watch: no DELETED for r01n03: $(cat "$WORK/w-$tag.out")"
	[ "$(grep -c '^r01n03 ' "$WORK/w1-$tag.out")" -ge 2 ] || fail "$tag: single watch: $(cat "$WORK/w1-$tag.out")"
	"${K[@]}" label bmn r01n03 maint- >/dev/null
	# actions as subresources, wait, describe with events
	echo '{"reason":"kubectl test"}' | "${K[@]}" create --raw /apis/fleetplane.io/v1/baremetalnodes/r01n04/drain -f - |
		grep -q '"status":"Success"' || fail "$tag: drain action"
	kwait "$minor" maintenance r01n04 || fail "$tag: wait for maintenance"
	"${K[@]}" describe bmn r01n04 | grep -q 'DrainRequested' || fail "$tag: describe events"
	echo '{}' | "${K[@]}" create --raw /apis/fleetplane.io/v1/baremetalnodes/r01n04/resume -f - >/dev/null ||
		fail "$tag: resume action"
	# delete: retire first (fleetplane deletes only enrolled or retired nodes)
	local nn="r02n0${minor: -1}"
	echo '{"reason":"kubectl test"}' | "${K[@]}" create --raw "/apis/fleetplane.io/v1/baremetalnodes/$nn/retire" -f - >/dev/null ||
		fail "$tag: retire action"
	kwait "$minor" retired "$nn" || fail "$tag: wait retired"
	"${K[@]}" delete bmn "$nn" --timeout=20s | grep -q 'deleted' || fail "$tag: delete"
	out=$("${K[@]}" get bmn "$nn" 2>&1 || true)
	[[ $out == *NotFound* ]] || fail "$tag: deleted node still there: $out"
	# other kinds
	"${K[@]}" get sites -o name | grep -q 'site.fleetplane.io/sim-a' || fail "$tag: sites"
	"${K[@]}" get operations -o name | grep -q 'operation.fleetplane.io/' || fail "$tag: operations"
	echo "ok $tag"
}

for kb in "${versions[@]}"; do run_one "$kb"; done

# kubectl fleet: the binary as a kubectl plugin (kubectl-fleet on PATH)
mkdir -p "$WORK/bin"
ln -s "$FP" "$WORK/bin/kubectl-fleet"
ln -s "${versions[0]}" "$WORK/bin/kubectl"
out=$(PATH="$WORK/bin:$PATH" KUBECONFIG="$WORK/kc" KUBECACHEDIR="$WORK/cache-p" \
	kubectl fleet drain r01n01 --reason "plugin test" 2>&1) || fail "kubectl fleet drain: $out"
[[ $out == *'"status":"Success"'* ]] || fail "kubectl fleet drain said: $out"
"${versions[0]}" --kubeconfig "$WORK/kc" --cache-dir "$WORK/cache-p" get bmn r01n01 \
	-o jsonpath='{.status.holds[0].reason}' | grep -q 'plugin test' || fail "kubectl fleet drain: no hold"

# A viewer cannot write; over plain http kubectl sends no token and is refused.
FLEETPLANE_CA="$D/ca.crt" "$FP" kubeconfig --role viewer >"$WORK/kcv"
K1=("${versions[0]}" --kubeconfig "$WORK/kcv" --cache-dir "$WORK/cache-v")
"${K1[@]}" get bmn -o name | grep -q r01n01 || fail "viewer get"
out=$("${K1[@]}" label bmn r01n01 x=y 2>&1 || true)
[[ $out == *"(Forbidden)"* ]] || fail "viewer label not forbidden: $out"
sed "s|server: \"https://|server: \"http://|" "$WORK/kc" >"$WORK/kc-http"
rc=0
timeout 5 "${versions[0]}" --kubeconfig "$WORK/kc-http" --cache-dir "$WORK/cache-h" --request-timeout=1s get bmn >/dev/null 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "kubectl over plain http reached the API"
# the native watch also says DELETED when a node leaves its selector
curl -s -N --cacert "$D/ca.crt" -H "Authorization: Bearer $FLEETPLANE_TOKEN" --max-time 3 \
	"$FLEETPLANE_URL/v1/nodes?watch=1&labelSelector=rack+in+(r01)" >"$WORK/nw.out" &
cpid=$!
sleep 1
api POST /v1/nodes/r01n02:resume '{}' >/dev/null || true
"${K1[@]/kcv/kc}" label bmn r01n02 rack=r09 --overwrite >/dev/null
wait "$cpid" || true
grep -q '"type":"DELETED","object":{"kind":"Node","metadata":{"name":"r01n02"' "$WORK/nw.out" ||
	fail "native watch: no DELETED for r01n02 leaving rack in (r01)"
# --tls-cert/--tls-key: serve uses the given pair (here the first serve's) and makes none
rc=0
out=$("$FP" serve --data-dir "$WORK/d2" --tls-cert "$D/tls.crt" --check 2>&1) || rc=$?
assert_eq 2 "$rc" "--check with --tls-cert alone: exit code"
assert_eq "error: --tls-cert and --tls-key go together" "$out" "--check message"
mkdir -p "$WORK/d2"
"$FP" serve --data-dir "$WORK/d2" --listen 127.0.0.1:0 --tls-cert "$D/tls.crt" --tls-key "$D/tls.key" \
	>"$WORK/d2/serve.log" 2>&1 &
pid2=$!
for i in $(seq 1 100); do [ -s "$WORK/d2/serve.url" ] && break; sleep 0.1; done
u2=$(cat "$WORK/d2/serve.url")
code=$(curl -s --cacert "$D/ca.crt" -o /dev/null -w '%{http_code}' "$u2/readyz")
kill "$pid2"
wait "$pid2" || true
assert_eq 200 "$code" "serve with --tls-cert: readyz over https"
[ -e "$WORK/d2/tls.key" ] && fail "serve made a key although --tls-key was given"
echo "ok test_kubectl (${#versions[@]} kubectl versions)"
