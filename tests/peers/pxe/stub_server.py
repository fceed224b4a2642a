#!/usr/bin/python3
"""stub_server.py - just enough of fleetplane's /boot/* routes (the network-boot contract) for the
PXE harness's self-test (tests/peers/pxe/selftest.sh); not the real server.

  stub_server.py --listen 10.77.0.1:7070 --files DIR --events FILE
                 --node NAME,MAC,TOKEN [--node ...] [--image os.img] [--pidfile FILE]

Per node it keeps a phase: "provision" (GET /boot/ipxe answers the ramdisk script) until a
POST /boot/deployed with ok=true, then "disk" (GET /boot/ipxe answers `exit`).
Routes: GET /boot/ipxe?mac=M, GET|HEAD /boot/files/NAME (ETag, no Range), POST /boot/inspect,
GET /boot/deploy?node=N&token=T, POST /boot/deployed, POST /boot/booted. A wrong token -> 403
{"error":...}. Every request that reaches a route is appended to FILE as one JSON line
{"t":unix,"route":...,"node":...,"status":...,"body":{...}} (selftest.sh polls it).
Uses only the standard library; run it with /usr/bin/python3.
"""
import argparse
import hashlib
import json
import os
import re
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
LOCK = threading.Lock()


class State:
    def __init__(self, args):
        self.files = os.path.abspath(args.files)
        self.events = args.events
        self.image = args.image
        self.url = "http://" + args.listen
        self.nodes = {}  # name -> dict
        for spec in args.node:
            parts = spec.split(",")
            if len(parts) != 3:
                sys.exit("--node NAME,MAC,TOKEN")
            self.nodes[parts[0]] = {
                "mac": parts[1].lower(),
                "token": parts[2],
                "phase": "provision",
            }
        self.sha = {}

    def by_mac(self, mac):
        for name, n in self.nodes.items():
            if n["mac"] == mac.lower():
                return name, n
        return None, None

    def sha256(self, name):
        path = os.path.join(self.files, name)
        st = os.stat(path)
        key = (name, st.st_size, st.st_mtime_ns)
        if key not in self.sha:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            self.sha[key] = h.hexdigest()
        return self.sha[key], st.st_size

    def log(self, route, node, status, body=None):
        line = json.dumps({"t": time.time(), "route": route, "node": node, "status": status, "body": body})
        with LOCK, open(self.events, "a") as f:
            f.write(line + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    st = None

    def log_message(self, fmt, *args):
        sys.stderr.write("stub %s %s\n" % (self.address_string(), fmt % args))

    def reply(self, code, body, ctype="application/json", head=False, extra=None):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(data)
        self.close_connection = True

    def json_reply(self, code, obj):
        self.reply(code, json.dumps(obj) + "\n")

    def body_json(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n < 0 or n > 1 << 20:
            return None
        try:
            return json.loads(self.rfile.read(n) or b"null")
        except ValueError:
            return None

    def check(self, route, node, token, body=None):
        n = self.st.nodes.get(node)
        if n is None:
            self.st.log(route, node, 403, body)
            self.json_reply(403, {"error": "unknown node %r" % node})
            return None
        if token != n["token"]:
            self.st.log(route, node, 403, body)
            self.json_reply(403, {"error": "token is not the current one for node %s" % node})
            return None
        return n

    def do_HEAD(self):
        self.do_GET(head=True)

    def do_GET(self, head=False):
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        st = self.st
        if u.path == "/boot/ipxe":
            name, n = st.by_mac(q.get("mac", ""))
            if n is None:
                st.log("ipxe", None, 200, {"mac": q.get("mac")})
                return self.reply(200, "#!ipxe\necho fleetplane: unknown MAC ${net0/mac}\nexit\n", "text/plain")
            st.log("ipxe", name, 200, {"mac": q.get("mac"), "phase": n["phase"]})
            if n["phase"] != "provision":
                return self.reply(200, "#!ipxe\necho fleetplane: %s boots from disk\nexit\n" % name, "text/plain")
            script = (
                "#!ipxe\n"
                "kernel %(u)s/boot/files/vmlinuz console=ttyS0 panic=-1 fleetplane.url=%(u)s "
                "fleetplane.node=%(n)s fleetplane.token=%(t)s fleetplane.mac=${net0/mac} "
                "fleetplane.ip=${net0/ip} fleetplane.netmask=${net0/netmask} "
                "fleetplane.gateway=${net0/gateway}\n"
                "initrd %(u)s/boot/files/initrd.img\n"
                "boot\n" % {"u": st.url, "n": name, "t": n["token"]}
            )
            return self.reply(200, script, "text/plain")
        if u.path.startswith("/boot/files/"):
            name = u.path[len("/boot/files/"):]
            if not NAME_RE.match(name) or not os.path.isfile(os.path.join(st.files, name)):
                return self.json_reply(404, {"error": "no file %r" % name})
            sha, size = st.sha256(name)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.send_header("ETag", '"%s"' % sha)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            st.log("files", None, 200, {"name": name, "head": head})
            if not head:
                with open(os.path.join(st.files, name), "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 16), b""):
                        self.wfile.write(chunk)
            return None
        if u.path == "/boot/deploy":
            node = q.get("node")
            n = self.check("deploy", node, q.get("token"))
            if n is None:
                return None
            sha, size = st.sha256(st.image)
            md = (
                "instance-id: %(n)s-1\nlocal-hostname: %(n)s\nfleetplane-node: %(n)s\n"
                "fleetplane-url: %(u)s\nfleetplane-token: %(t)s\n" % {"n": node, "u": st.url, "t": n["token"]}
            )
            st.log("deploy", node, 200)
            return self.json_reply(200, {
                "image": {"name": st.image, "url": st.url + "/boot/files/" + st.image, "sha256": sha, "sizeBytes": size},
                "rootDevice": None,
                "config": {"hostname": node, "metaData": md, "userData": "#cloud-config\n"},
            })
        return self.json_reply(404, {"error": "no route %s" % u.path})

    def do_POST(self):
        u = urllib.parse.urlsplit(self.path)
        body = self.body_json()
        if not isinstance(body, dict):
            return self.json_reply(400, {"error": "body is not a JSON object"})
        route = {"/boot/inspect": "inspect", "/boot/deployed": "deployed", "/boot/booted": "booted"}.get(u.path)
        if route is None:
            return self.json_reply(404, {"error": "no route %s" % u.path})
        node = body.get("node")
        n = self.check(route, node, body.get("token"), body)
        if n is None:
            return None
        if route == "inspect":
            if not isinstance(body.get("inventory"), dict):
                self.st.log(route, node, 400, body)
                return self.json_reply(400, {"error": "inventory missing"})
            self.st.log(route, node, 200, body)
            return self.json_reply(200, {"accepted": True})
        if route == "deployed" and body.get("ok") is True:
            n["phase"] = "disk"
        self.st.log(route, node, 200, body)
        return self.json_reply(200, {})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--files", required=True)
    ap.add_argument("--events", required=True)
    ap.add_argument("--node", action="append", default=[])
    ap.add_argument("--image", default="os.img")
    ap.add_argument("--pidfile")
    args = ap.parse_args()
    host, port = args.listen.rsplit(":", 1)
    Handler.st = State(args)
    srv = ThreadingHTTPServer((host, int(port)), Handler)
    srv.daemon_threads = True
    if args.pidfile:
        with open(args.pidfile, "w") as f:
            f.write("%d\n" % os.getpid())
    srv.serve_forever()


if __name__ == "__main__":
    main()
