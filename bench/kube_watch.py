#!/usr/bin/env python3
"""bench/kube_watch.py URL TOKEN_FILE CA_FILE [WATCHERS] [NODES] [PROCS]

Watch fan-out on the Kubernetes surface (issue 13 target: 100 watchers of all nodes while
1,000 nodes change, every event delivered, p99 delivery <= 100 ms). WATCHERS threads each hold
one `GET /apis/fleetplane.io/v1/baremetalnodes?watch=true&resourceVersion=RV` stream over TLS;
one writer merge-patches the annotation fp.bench/t=<send time, ns> on NODES nodes one after the
other. A watcher records, for each MODIFIED event carrying the annotation, now - t. Prints the
events expected and delivered and the delivery latency percentiles. Client and server share
the machine: the figures include the client's own TLS and JSON decoding, spread over PROCS
processes (default 10) of WATCHERS/PROCS threads each (one Python process cannot decode 100
streams in time)."""
import multiprocessing as mp
import json
import ssl
import sys
import threading
import time
import urllib.request

url, tok, ca = sys.argv[1], open(sys.argv[2]).read().strip(), sys.argv[3]
W = int(sys.argv[4]) if len(sys.argv) > 4 else 100
N = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
P = int(sys.argv[6]) if len(sys.argv) > 6 else 10
ctx = ssl.create_default_context(cafile=ca)
B = "/apis/fleetplane.io/v1/baremetalnodes"
H = {"Authorization": "Bearer " + tok}


def get(path):
    return json.load(urllib.request.urlopen(urllib.request.Request(url + path, headers=H), context=ctx))


lst = get(B + "?limit=5000")
names = [i["metadata"]["name"] for i in lst["items"]][:N]
rv = lst["metadata"]["resourceVersion"]


def watcher(lat, ready):
    req = urllib.request.Request(url + B + "?watch=true&resourceVersion=" + rv + "&timeoutSeconds=600", headers=H)
    resp = urllib.request.urlopen(req, context=ctx)
    ready.wait()
    for line in resp:
        if not line.strip():
            continue
        now = time.time_ns()
        ev = json.loads(line)
        t = ev["object"]["metadata"].get("annotations", {}).get("fp.bench/t")
        if ev["type"] == "MODIFIED" and t:
            lat.append((now - int(t)) / 1e6)
            if len(lat) >= len(names):
                return


def proc(k, ready, out):
    lats = [[] for _ in range(k)]
    ths = [threading.Thread(target=watcher, args=(lats[i], ready), daemon=True) for i in range(k)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(120)
    out.put([x for l in lats for x in l])


ready = mp.Barrier(W + 1)
out = mp.Queue()
procs = [mp.Process(target=proc, args=(W // P + (1 if i < W % P else 0), ready, out)) for i in range(P)]
for p in procs:
    p.start()
ready.wait()
time.sleep(0.5)
t0 = time.monotonic()
for n in names:
    body = json.dumps({"metadata": {"annotations": {"fp.bench/t": str(time.time_ns())}}}).encode()
    req = urllib.request.Request(url + B + "/" + n, data=body, method="PATCH",
                                 headers=dict(H, **{"Content-Type": "application/merge-patch+json"}))
    urllib.request.urlopen(req, context=ctx).read()
wrote = time.monotonic() - t0
got = []
for p in procs:
    got.extend(out.get(timeout=180))
for p in procs:
    p.join()
all_ = sorted(got)
exp = W * len(names)


def pct(p):
    return all_[min(len(all_) - 1, int(p * len(all_)))] if all_ else float("nan")


print(f"watchers {W} nodes {len(names)} writes {wrote:.1f} s ({len(names) / wrote:.0f}/s)")
print(f"events expected {exp} delivered {len(all_)}")
print(f"delivery ms p50 {pct(0.50):.1f} p90 {pct(0.90):.1f} p99 {pct(0.99):.1f} max {all_[-1] if all_ else 0:.1f}")
