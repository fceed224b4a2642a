#!/usr/bin/env python3
# bench/slowloris.py - holds N half-open HTTP connections to a server, as an attacker would:
# each sends a partial request and then one more header byte every INTERVAL seconds, and is
# re-opened when the server closes it. Sources: --spread binds each connection to its own
# 127.0.x.y address (many clients), else all come from --src (one client).
# Usage: slowloris.py PORT N [--src 127.0.0.2] [--spread] [--interval 5] [--secs 60]
# Prints, every 5 s and at the end: open connections, connects, server closes, refused.
import argparse, selectors, socket, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
ap.add_argument("n", type=int)
ap.add_argument("--src", default="127.0.0.2")
ap.add_argument("--spread", action="store_true")
ap.add_argument("--interval", type=float, default=5)
ap.add_argument("--secs", type=float, default=60)
a = ap.parse_args()
sel = selectors.DefaultSelector()
stats = {"connects": 0, "closed": 0, "refused": 0}
socks = {}

def src_of(i):
    return "127.0.%d.%d" % (1 + i // 250, 1 + i % 250) if a.spread else a.src

def open_one(i):
    s = socket.socket()
    try:
        s.bind((src_of(i), 0))
        s.connect(("127.0.0.1", a.port))
        s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-a: ")
    except OSError:
        s.close()
        stats["refused"] += 1
        return
    s.setblocking(False)
    stats["connects"] += 1
    socks[i] = (s, time.time())
    sel.register(s, selectors.EVENT_READ, i)

t_end = time.time() + a.secs
last = 0
for i in range(a.n):
    open_one(i)
while time.time() < t_end:
    for key, _ in sel.select(timeout=0.2):
        i = key.data
        s = socks[i][0]
        try:
            d = s.recv(4096)
        except OSError:
            d = b""
        if not d:
            sel.unregister(s)
            s.close()
            del socks[i]
            stats["closed"] += 1
    now = time.time()
    for i in range(a.n):
        if i not in socks:
            open_one(i)
        elif now - socks[i][1] >= a.interval:
            try:
                socks[i][0].send(b"a")
            except OSError:
                pass
            socks[i] = (socks[i][0], now)
    if now - last >= 5:
        last = now
        print("open=%d connects=%d closed_by_server=%d refused=%d" %
              (len(socks), stats["connects"], stats["closed"], stats["refused"]), flush=True)
print("end open=%d connects=%d closed_by_server=%d refused=%d" %
      (len(socks), stats["connects"], stats["closed"], stats["refused"]), flush=True)
