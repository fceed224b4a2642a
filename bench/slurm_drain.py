#!/usr/bin/python3
"""bench/slurm_drain.py - the measuring side of bench/slurm_drain.sh (standard library only).

Issue 10's targets: a drain of 750 nodes issued in <= 1 s with <= 10 Slurm RPCs, side by side
with a plain scontrol loop on the same slurmctld, and a real XID line -> Slurm DRAIN p99 <= 1 s.

  slurm_drain.py loop NODES_FILE
      the plain loop an operator's script would run: one `scontrol update NodeName=N
      State=DRAIN Reason=...` per node, one after another; then one batched RESUME of them all
      (not timed as the loop). Prints one JSON line: wall seconds and RPCs (sdiag).
  slurm_drain.py burst URL TOKEN_FILE NODES_FILE RUN_ID
      one agent report with a real XID 79 line to every node at once (bench/health_report.py's
      burst), and from the release polls `scontrol -o show node` (one RPC a poll, counted and
      subtracted) until every node shows DRAIN: seconds to the last report answered, to every
      DRAIN, and the RPCs slurmctld served meanwhile by type (sdiag), fleetplane's alone.
  slurm_drain.py seq URL TOKEN_FILE NODES_FILE RUN_ID
      one report at a time; after each, polls `scontrol -o show node NAME` every 10 ms until it
      shows DRAIN: the latency from the send to Slurm's DRAIN, p50/p99/max.

RPC counts come from `sdiag` ("Remote Procedure Call statistics by message type"), reset with
`sdiag -r` before each measurement (needs root or SlurmUser).
"""
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import health_report  # noqa: E402


def sdiag_reset():
    subprocess.run(["sdiag", "-r"], check=True, stdout=subprocess.DEVNULL)


def sdiag_rpcs():
    """{message type: count} from sdiag."""
    out = subprocess.run(["sdiag"], check=True, capture_output=True, text=True).stdout
    part = out.split("Remote Procedure Call statistics by message type", 1)[-1]
    part = part.split("Remote Procedure Call statistics by user", 1)[0]
    rpcs = {}
    for m in re.finditer(r"^\s*(REQUEST_[A-Z_0-9]+|MESSAGE_[A-Z_0-9]+)\s+\(\s*\d+\)\s+count:(\d+)",
                         part, re.M):
        rpcs[m.group(1)] = int(m.group(2))
    return rpcs


def drained(names):
    """The names (a set) scontrol shows with DRAIN in their state; one RPC."""
    out = subprocess.run(["scontrol", "-o", "show", "node"], capture_output=True, text=True).stdout
    got = set()
    for line in out.splitlines():
        m = re.match(r"NodeName=(\S+) .*?State=(\S+)", line)
        if m and m.group(1) in names and "DRAIN" in m.group(2):
            got.add(m.group(1))
    return got


def node_drained(name):
    out = subprocess.run(["scontrol", "-o", "show", "node", name], capture_output=True,
                         text=True).stdout
    m = re.search(r" State=(\S+)", out)
    return bool(m and "DRAIN" in m.group(1))


def read_nodes(path):
    with open(path) as f:
        return [l.strip() for l in f if l.strip()]


def cmd_loop(nodes):
    sdiag_reset()
    t0 = time.perf_counter()
    for n in nodes:
        subprocess.run(["scontrol", "update", "NodeName=" + n, "State=DRAIN",
                        "Reason=bench: plain scontrol loop"], check=True)
    dt = time.perf_counter() - t0
    rpcs = sdiag_rpcs()
    got = len(drained(set(nodes)))
    # Nodes that never registered (UNKNOWN) answer the RESUME with "Invalid node state
    # specified" and exit 1, yet their DRAIN is cleared (seen on 22.05.8): check the effect.
    subprocess.run(["scontrol", "update", "NodeName=" + ",".join(nodes), "State=RESUME"],
                   stderr=subprocess.DEVNULL)
    left = len(drained(set(nodes)))
    if left:
        raise SystemExit("%d nodes still drained after the RESUME" % left)
    print(json.dumps({"nodes": len(nodes), "drained": got, "seconds": round(dt, 3),
                      "update_rpcs": rpcs.get("REQUEST_UPDATE_NODE", 0)}))


def cmd_burst(url, token, nodes, run_id):
    names = set(nodes)
    conns = [health_report.connect(url) for _ in nodes]
    barrier = threading.Barrier(len(nodes) + 1)
    done = [None] * len(nodes)
    errors = []

    def worker(i):
        barrier.wait()
        dt, status, what = health_report.post(conns[i], token, nodes[i], run_id)
        done[i] = time.perf_counter()
        if status != 200:
            errors.append("%s: %s %s" % (nodes[i], status, what))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(nodes))]
    for t in threads:
        t.start()
    sdiag_reset()
    barrier.wait()
    t0 = time.perf_counter()
    polls = 0
    t_drain = None
    while time.perf_counter() - t0 < 60:
        polls += 1
        if len(drained(names)) == len(names):
            t_drain = time.perf_counter() - t0
            break
        time.sleep(0.02)
    for t in threads:
        t.join()
    rpcs = sdiag_rpcs()
    answered = max(d for d in done if d) - t0
    # fleetplane's part: from the last hold committed (its report answered) to every DRAIN
    lag = t_drain - answered if t_drain else None
    # each poll is `scontrol show node`: one NODE_INFO and one PARTITION_INFO RPC; sdiag
    # itself is the STATS_INFO
    ours = dict(rpcs)
    for k in ("REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO"):
        ours[k] = ours.get(k, 0) - polls
    ours.pop("REQUEST_STATS_INFO", None)
    fp = {k: v for k, v in ours.items() if v > 0}
    print(json.dumps({"nodes": len(nodes), "errors": len(errors),
                      "all_reports_answered_s": round(answered, 3),
                      "all_drained_in_slurm_s": round(t_drain, 3) if t_drain else None,
                      "last_hold_to_all_drained_s": round(lag, 3) if lag is not None else None,
                      "fleetplane_rpcs": fp, "fleetplane_rpcs_total": sum(fp.values()),
                      "poller_rpcs": polls}))
    for e in errors[:3]:
        print(e, file=sys.stderr)


def cmd_seq(url, token, nodes, run_id):
    conn = health_report.connect(url)
    lat = []
    for n in nodes:
        t0 = time.perf_counter()
        dt, status, what = health_report.post(conn, token, n, run_id)
        if status != 200:
            raise SystemExit("report to %s: %s %s" % (n, status, what))
        while not node_drained(n):
            if time.perf_counter() - t0 > 30:
                raise SystemExit("%s not drained in Slurm within 30 s" % n)
            time.sleep(0.01)
        lat.append(time.perf_counter() - t0)
    s = sorted(lat)
    print(json.dumps({"nodes": len(nodes), "p50_s": round(health_report.pct(s, 50), 3),
                      "p99_s": round(health_report.pct(s, 99), 3), "max_s": round(s[-1], 3)}))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "loop":
        return cmd_loop(read_nodes(sys.argv[2]))
    if len(sys.argv) == 6 and sys.argv[1] in ("burst", "seq"):
        url, token_file, nodes_file, run_id = sys.argv[2:6]
        with open(token_file) as f:
            token = f.read().strip()
        fn = cmd_burst if sys.argv[1] == "burst" else cmd_seq
        return fn(url, token, read_nodes(nodes_file), run_id)
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
