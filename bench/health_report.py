#!/usr/bin/python3
"""bench/health_report.py - the load tool of bench/health_hold.sh (python3 standard library only).

Sends agent reports (POST /v1/nodes/{name}:report, docs/api.md "Health") each carrying one
kernel event with a real XID 79 line as its raw text, and times them.

  health_report.py seq   URL TOKEN_FILE NODES_FILE RUN_ID
      one report at a time, one node after another (each node once): per report the client
      round trip from the send to the answer. The server answers only after the hold, the
      health event and the audit event are committed in one transaction, so the round trip is
      an upper bound of detection -> hold committed. Prints one JSON line.
  health_report.py burst URL TOKEN_FILE NODES_FILE RUN_ID
      one thread and one connection per node, all connected first, released together by a
      barrier: wall time from the release to the last answer, per-report round trips, and a
      poller thread that reads fleetplane_nodes_held{owner="health"} from /metrics every 20 ms
      until it has grown by the node count (the time every hold was visible in serve's cache).
      Prints one JSON line.

Every answer must be 200 with decision "hold"; anything else is counted in "errors" and the
first few are printed to stderr. The token is read from a file (never an argument). Event ids
are "bench-<RUN_ID>-<node>" so reruns on the same store are not duplicates. Event "time" is
the send time (UTC, ms): serve's fleetplane_health_hold_latency_seconds then measures from the
send to the commit on serve's clock (the same machine's clock).
"""
import datetime
import http.client
import json
import sys
import threading
import time
import urllib.parse

# tests/data/kernel/xid-and-gpu-kernel-lines-from-issues.log, from
# https://github.com/NVIDIA/NVSentinel/issues/155 (maintainer comment): the single-line form.
XID79 = "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus"
MAX_NODES = 100000


def now_rfc3339():
    t = datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def body_for(node, run_id):
    return json.dumps({
        "agent": {"version": "bench", "bootId": "bench-" + run_id, "intervalSeconds": 30},
        "detectors": [{"name": "kernel", "live": True, "status": "unhealthy"}],
        "events": [{
            "id": "bench-%s-%s" % (run_id, node), "source": "kernel", "code": "xid:79",
            "gpu": {"pciBusId": "0000:44:00.0"}, "time": now_rfc3339(),
            "message": "GPU has fallen off the bus", "raw": XID79}]}).encode()


def connect(url):
    u = urllib.parse.urlsplit(url)
    if u.scheme != "http" or not u.hostname:
        raise SystemExit("health_report.py: URL must be http://host:port, got %r" % url)
    c = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=120)
    c.connect()
    return c


def post(conn, token, node, run_id):
    """Returns (seconds, status, decision action or the body's first 200 bytes)."""
    body = body_for(node, run_id)
    t0 = time.perf_counter()
    conn.request("POST", "/v1/nodes/%s:report" % urllib.parse.quote(node, safe=""), body=body,
                 headers={"Authorization": "Bearer " + token,
                          "Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    dt = time.perf_counter() - t0
    what = data[:200].decode("utf-8", "replace")
    if resp.status == 200:
        try:
            what = json.loads(data)["decisions"][0]["action"]
        except (ValueError, KeyError, IndexError):
            pass
    return dt, resp.status, what


def pct(xs, p):
    """Nearest-rank percentile of xs (p in 0..100)."""
    if not xs:
        return None
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def summary(lat):
    ms = [round(x * 1000, 3) for x in lat]
    return {"n": len(ms), "p50_ms": pct(ms, 50), "p90_ms": pct(ms, 90), "p99_ms": pct(ms, 99),
            "max_ms": max(ms) if ms else None}


def held_count(url, token):
    c = connect(url)
    try:
        c.request("GET", "/metrics", headers={"Authorization": "Bearer " + token})
        text = c.getresponse().read().decode()
    finally:
        c.close()
    for line in text.splitlines():
        if line.startswith('fleetplane_nodes_held{owner="health"} '):
            return int(float(line.split()[1]))
    return 0


def run_seq(url, token, nodes, run_id):
    conn = connect(url)
    lat, errors = [], 0
    for n in nodes:
        dt, st, what = post(conn, token, n, run_id)
        if st != 200 or what != "hold":
            errors += 1
            if errors <= 5:
                print("health_report.py: %s: HTTP %d %s" % (n, st, what), file=sys.stderr)
            continue
        lat.append(dt)
    conn.close()
    out = {"mode": "seq", "errors": errors}
    out.update(summary(lat))
    return out


def run_burst(url, token, nodes, run_id):
    n = len(nodes)
    conns = [connect(url) for _ in nodes]
    barrier = threading.Barrier(n + 1)
    lat, errors, done_at = [None] * n, [], [None] * n

    def worker(i):
        barrier.wait()
        try:
            dt, st, what = post(conns[i], token, nodes[i], run_id)
        except OSError as e:
            dt, st, what = 0, 0, str(e)
        done_at[i] = time.perf_counter()
        if st != 200 or what != "hold":
            errors.append("%s: HTTP %d %s" % (nodes[i], st, what))
        else:
            lat[i] = dt
        conns[i].close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    held = {"t": None, "polls": 0, "last": 0}
    base = held_count(url, token)  # nodes held before the burst (the seq phase's)
    stop = threading.Event()

    def poller(t0):
        while not stop.is_set():
            k = held_count(url, token) - base
            held["polls"] += 1
            held["last"] = k
            if k >= n:
                held["t"] = time.perf_counter() - t0
                return
            time.sleep(0.02)

    t0 = time.perf_counter()
    barrier.wait()  # every thread is connected and waiting: go
    p = threading.Thread(target=poller, args=(t0,), daemon=True)
    p.start()
    for t in threads:
        t.join()
    all_answered = max(x for x in done_at if x is not None) - t0
    p.join(timeout=60)
    stop.set()
    for e in errors[:5]:
        print("health_report.py: " + e, file=sys.stderr)
    out = {"mode": "burst", "nodes": n, "errors": len(errors),
           "all_answered_s": round(all_answered, 4),
           "all_held_visible_s": round(held["t"], 4) if held["t"] is not None else None,
           "held_last_seen": held["last"], "metric_polls": held["polls"]}
    out.update(summary([x for x in lat if x is not None]))
    return out


def main():
    if len(sys.argv) != 6 or sys.argv[1] not in ("seq", "burst"):
        raise SystemExit(__doc__)
    mode, url, token_file, nodes_file, run_id = sys.argv[1:]
    with open(token_file) as f:
        token = f.read().strip()
    with open(nodes_file) as f:
        nodes = [l.strip() for l in f if l.strip()]
    if not nodes or len(nodes) > MAX_NODES:
        raise SystemExit("health_report.py: %s: 1..%d node names expected" % (nodes_file, MAX_NODES))
    out = run_seq(url, token, nodes, run_id) if mode == "seq" else run_burst(url, token, nodes, run_id)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
