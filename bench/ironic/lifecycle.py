#!/usr/bin/python3
"""bench/ironic/lifecycle.py - one client harness for both sides of bench/ironic_lifecycle.sh.

Drives N nodes through their lifecycle with CONC threads, each with its own keep-alive
http.client connection (stdlib only), and prints key=value lines (times in s, latencies in ms).

  lifecycle.py ironic URL N CONC       POST /v1/nodes (driver fake-hardware), then PUT
                                        .../states/provision manage, provide, active; after each
                                        bulk step polls the list (0.5 s) until every node is settled
  lifecycle.py fleetplane URL N CONC   POST /v1/nodes (one node document per request, bmc driver
                                        sim), then polls /metrics (0.25 s) until N are available
Env: TOKEN (fleetplane bearer token), LIMIT_S (per phase, default 900).
Node names: rRRnMM, racks r01.. of 8 nodes (bench/get.lua with RACKS=N/8 reads the same names).
"""
import http.client, json, os, sys, threading, time, urllib.parse

IRONIC_HDR = {"X-OpenStack-Ironic-API-Version": "1.82", "Content-Type": "application/json"}
LIMIT_S = float(os.environ.get("LIMIT_S", "900"))


def names(n):
    return ["r%02dn%02d" % (i // 8 + 1, i % 8 + 1) for i in range(n)]


def pct(v, p):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def run_all(url, conc, reqs, ok):
    """reqs: list of (method, path, body, headers); returns (wall s, [latency ms], errors)."""
    u = urllib.parse.urlparse(url)
    lat, errs, lock, idx = [], [], threading.Lock(), [0]

    def worker():
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        while True:
            with lock:
                i = idx[0]
                idx[0] += 1
            if i >= len(reqs):
                break
            m, p, b, h = reqs[i]
            t = time.monotonic()
            try:
                c.request(m, p, body=b, headers=h)
                r = c.getresponse()
                data = r.read()
                st = r.status
            except Exception as e:  # reconnect once per failure, count it
                c.close()
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
                st, data = -1, str(e).encode()
            d = (time.monotonic() - t) * 1000.0
            with lock:
                lat.append(d)
                if st not in ok:
                    errs.append("%s %s: %s %s" % (m, p, st, data[:200]))
        c.close()

    t0 = time.monotonic()
    th = [threading.Thread(target=worker) for _ in range(conc)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return time.monotonic() - t0, lat, errs


def get_json(url, path, hdr):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    c.request("GET", path, headers=hdr)
    r = c.getresponse()
    d = r.read()
    c.close()
    return r.status, d


def report(phase, wall, lat, errs, n):
    print("%s_requests_s=%.2f %s_p50_ms=%.1f %s_p99_ms=%.1f %s_errors=%d" %
          (phase, wall, phase, pct(lat, 50), phase, pct(lat, 99), phase, len(errs)))
    for e in errs[:5]:
        print("  error: " + e, file=sys.stderr)


def ironic_wait(url, want, n):
    t0 = time.monotonic()
    while time.monotonic() - t0 < LIMIT_S:
        st, d = get_json(url, "/v1/nodes?fields=name,provision_state,target_provision_state&limit=1000", IRONIC_HDR)
        if st == 200:
            nodes = json.loads(d)["nodes"]
            done = sum(1 for x in nodes if x["provision_state"] == want and x["target_provision_state"] is None)
            bad = [x for x in nodes if x["provision_state"] in ("enroll", "manageable", "available", "active", "deploy failed", "clean failed")
                   and x["provision_state"] != want and x["target_provision_state"] is None]
            if done >= n:
                return time.monotonic() - t0, done
            if bad and done + len(bad) >= n:
                print("  stuck: %d nodes, e.g. %s" % (len(bad), bad[0]), file=sys.stderr)
                return time.monotonic() - t0, done
        time.sleep(0.5)
    return time.monotonic() - t0, done


def ironic(url, n, conc):
    ns = names(n)
    T0 = time.monotonic()
    reqs = [("POST", "/v1/nodes", json.dumps({"name": x, "driver": "fake-hardware", "resource_class": "gpu-h100"}), IRONIC_HDR) for x in ns]
    wall, lat, errs = run_all(url, conc, reqs, (201,))
    report("create", wall, lat, errs, n)
    for target, want, tag in (("manage", "manageable", "manage"), ("provide", "available", "provide"), ("active", "active", "deploy")):
        reqs = [("PUT", "/v1/nodes/%s/states/provision" % x, json.dumps({"target": target}), IRONIC_HDR) for x in ns]
        wall, lat, errs = run_all(url, conc, reqs, (202,))
        report(tag, wall, lat, errs, n)
        w, done = ironic_wait(url, want, n)
        print("%s_settle_s=%.2f %s_done=%d since_create_s=%.2f" % (tag, w, tag, done, time.monotonic() - T0))
        if want == "available":
            print("to_available_s=%.2f available=%d" % (time.monotonic() - T0, done))
    print("to_active_s=%.2f active=%d" % (time.monotonic() - T0, done))


def fp_phases(url, hdr):
    st, d = get_json(url, "/metrics", hdr)
    out = {}
    for line in d.decode().splitlines():
        if line.startswith('fleetplane_nodes{phase="'):
            k = line.split('"')[1]
            out[k] = int(float(line.split()[-1]))
    return out


def fleetplane(url, n, conc):
    tok = os.environ.get("TOKEN", "")
    hdr = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
    ns = names(n)
    T0 = time.monotonic()
    reqs = []
    for x in ns:
        rack = x.split("n")[0]
        doc = {"metadata": {"name": x, "labels": {"rack": rack}},
               "spec": {"site": "bench", "rack": rack, "bmc": {"driver": "sim"}, "gpus": {"count": 8, "model": "NVIDIA H100 80GB HBM3"}}}
        reqs.append(("POST", "/v1/nodes", json.dumps(doc), hdr))
    wall, lat, errs = run_all(url, conc, reqs, (201,))
    report("create", wall, lat, errs, n)
    # fleetplane's "deployed" is `available`: inspected, provisioned (OS image), validated.
    # Record when every node has left inspecting (inspected = Ironic's manageable) too.
    t_insp = None
    ph = {}
    while time.monotonic() - T0 < LIMIT_S:
        ph = fp_phases(url, hdr)
        left = sum(v for k, v in ph.items() if k in ("enrolled", "inspecting"))
        if t_insp is None and left == 0 and sum(ph.values()) >= n:
            t_insp = time.monotonic() - T0
        if ph.get("available", 0) >= n:
            break
        time.sleep(0.25)
    t = time.monotonic() - T0
    print("inspected_s=%s" % ("%.2f" % t_insp if t_insp is not None else "-"))
    print("to_available_s=%.2f available=%d phases=%s" % (t, ph.get("available", 0), json.dumps(ph, separators=(",", ":"))))


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] not in ("ironic", "fleetplane"):
        sys.exit(__doc__)
    side, url, n, conc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if not 1 <= n <= 1000:
        sys.exit("N must be 1..1000 (Ironic's [api] max_limit bounds one list page)")
    if not 1 <= conc <= 256:
        sys.exit("CONC must be 1..256")
    (ironic if side == "ironic" else fleetplane)(url, n, conc)
