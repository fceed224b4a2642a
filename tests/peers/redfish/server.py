#!/usr/bin/python3
"""A stateful Redfish test server over the DMTF mockups in tests/data/redfish/<bundle>.

Python standard library only; run with /usr/bin/python3. It stands in for a BMC in the unit and
integration tests of fleetplane's Redfish driver (src/driver/bmc_redfish.c), and is the "machine
behind the BMC": when the System is powered on with a PXE boot override it makes the callbacks a
deploy agent would make.

    server.py --bundle DIR --port-file FILE --log FILE [--user NAME] [--password-file FILE]

Listens on 127.0.0.1, a port the kernel picks, written to --port-file once listening. Serves
URI /redfish/v1/<path> from DIR/<path>/index.json (an in-memory copy) with state:
  * PowerState of every System and of the Chassis it links to, changed by ComputerSystem.Reset
    (validated against ResetType@Redfish.AllowableValues: 400 ActionParameterNotSupported);
  * Boot override (PATCH merge, target validated against its AllowableValues);
  * ETag header on every resource (W/"<n>"), changed on every change; PATCH with If-Match that
    does not match -> 412; @odata.etag in bodies when the odata_etag knob is set;
  * sessions: POST SessionService/Sessions -> 201, X-Auth-Token, Location; DELETE; a limit;
  * basic auth (RFC 7617) for every resource but the service root;
  * UpdateService.SimpleUpdate -> 202 + Location of a task monitor; GET on it answers 202 with
    the Task while it runs and 200 with the Task once it has completed (after 2 polls);
  * with the multipart_push knob, UpdateService.MultipartHttpPushUri (DSP0266 "Multipart HTTP
    push updates") at /redfish/v1/UpdateService/upload: a multipart/form-data POST with the
    parts UpdateParameters (JSON object) and UpdateFile -> 202 + task monitor as SimpleUpdate;
  * Connection: close echoed when the client sends it (python-requests needs this).
Every request is appended to --log as one line:
    METHOD PATH STATUS auth=session|basic|none [if-match=TAG] [ResetType=X] [body=JSON]
(PATCH bodies are logged; no credential ever is) and callbacks as `CALLBACK URL STATUS`. An
upload adds ` UpdateParameters=<JSON, keys sorted> UpdateFile=<filename> size=<bytes>
sha256=<hex>` (or ` error=<what>` when it is refused).

POST /__control (no auth, loopback only) takes a JSON object of fault knobs; absent knobs keep
their value, {"reset": true} restores all:
  delay_ms: int            every response waits this long first
  busy: {"count": N, "retry_after": S}   the next N requests get 503 + Retry-After: S
  session_limit: bool      POST Sessions fails: 400 Base.1.8.SessionLimitExceeded
  drop_power_state: bool   PowerState is left out of every System
  disagree: bool           Chassis PowerState is the opposite of the System's
  task_never_finishes: bool  tasks stay Running
  reset_task: bool         ComputerSystem.Reset answers 202 + task monitor (done after 1 poll)
  conn_close: bool         every response carries Connection: close and the socket is closed
  odata_etag: bool         bodies carry @odata.etag as well
  stale_etag_patches: int  the next N PATCHes that send If-Match get 412 (the ETag moves)
  gpus: int                the System's Processors gain N processors of ProcessorType GPU
  callback: {"fp_url": URL, "node": NAME, "auth_header_file": PATH}  (or null)
  trailing_slash: bool     every @odata.id and action target ends with '/' (HPE iLO style)
  hpe_wrapper: bool        ComputerSystem.Reset answers 200 with HPE's success-in-error body
  multipart_push: bool     the UpdateService advertises MultipartHttpPushUri and takes uploads
                           there (off: the mockup's UpdateService as captured)
  set_boot: {...}          not a knob: merges these Boot properties into every System now
  drop_sessions: true      not a knob: every session ends now (tokens get 401)
GET /__control returns the knobs, the sessions count and the power states.
"""

import argparse
import base64
import copy
import hashlib
import json
import os
import socket
import sys
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = "/redfish/v1"
DEFAULT_KNOBS = {
    "delay_ms": 0,
    "busy": {"count": 0, "retry_after": 0},
    "session_limit": False,
    "drop_power_state": False,
    "disagree": False,
    "task_never_finishes": False,
    "reset_task": False,
    "conn_close": False,
    "odata_etag": False,
    "stale_etag_patches": 0,
    "gpus": 0,
    "callback": None,
    "trailing_slash": False,
    "hpe_wrapper": False,
    "multipart_push": False,
}
MAX_BODY = 1 << 20
MAX_UPLOAD = 64 << 20
PUSH_URI = ROOT + "/UpdateService/upload"
ON_TYPES = {"On", "ForceOn", "ForceRestart", "GracefulRestart", "PowerCycle", "PushPowerButton"}


def norm(path):
    path = path.split("?", 1)[0]
    while len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return path


def message(mid, text):
    return {"error": {"code": mid, "message": text,
                      "@Message.ExtendedInfo": [{"MessageId": mid, "Message": text}]}}


class State:
    def __init__(self, bundle, user, password, logf):
        self.lock = threading.Lock()
        self.res = {}
        self.etag = {}
        self.gen = 0
        self.user = user
        self.password = password
        self.logf = logf
        self.knobs = copy.deepcopy(DEFAULT_KNOBS)
        self.sessions = {}   # token -> session id
        self.tasks = {}      # id -> {"state", "polls", "done_after"}
        self.task_seq = 0
        for dirpath, _, files in os.walk(bundle):
            if "index.json" not in files:
                continue
            rel = os.path.relpath(dirpath, bundle)
            uri = ROOT if rel == "." else ROOT + "/" + rel.replace(os.sep, "/")
            with open(os.path.join(dirpath, "index.json"), encoding="utf-8") as f:
                self.res[uri] = json.load(f)
            self.bump(uri)
        self.res[ROOT + "/SessionService/Sessions"] = {
            "@odata.id": ROOT + "/SessionService/Sessions",
            "@odata.type": "#SessionCollection.SessionCollection",
            "Name": "Session Collection", "Members": [], "Members@odata.count": 0}
        for k in list(self.res):
            if k.startswith(ROOT + "/SessionService/Sessions/") or k.startswith(ROOT + "/TaskService/Tasks/"):
                pass

    def bump(self, uri):
        self.gen += 1
        self.etag[uri] = 'W/"%d"' % self.gen

    def log(self, line):
        with open(self.logf, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def systems(self):
        return [u for u in self.res if u.startswith(ROOT + "/Systems/") and u.count("/") == 4]

    def chassis_of(self, sysuri):
        links = self.res[sysuri].get("Links", {}).get("Chassis", [])
        return [norm(l["@odata.id"]) for l in links if norm(l.get("@odata.id", "")) in self.res]

    def view(self, uri):
        """The body served for uri, with fault knobs applied."""
        body = copy.deepcopy(self.res[uri])
        if uri in self.systems() and self.knobs["drop_power_state"]:
            body.pop("PowerState", None)
        if self.knobs["disagree"] and uri.startswith(ROOT + "/Chassis/"):
            for s in self.systems():
                if uri in self.chassis_of(s) and "PowerState" in body:
                    body["PowerState"] = "Off" if self.res[s].get("PowerState") == "On" else "On"
        if uri.endswith("/Processors") and self.knobs["gpus"]:
            for i in range(self.knobs["gpus"]):
                body.setdefault("Members", []).append({"@odata.id": uri + "/GPU%d" % i})
            body["Members@odata.count"] = len(body["Members"])
        if uri == ROOT + "/UpdateService" and self.knobs["multipart_push"]:
            body["MultipartHttpPushUri"] = PUSH_URI
        if self.knobs["odata_etag"]:
            body["@odata.etag"] = self.etag.get(uri, 'W/"0"')
        if self.knobs["trailing_slash"]:
            add_slashes(body)
        return body

    def gpu(self, uri):
        base, _, name = uri.rpartition("/")
        if not base.endswith("/Processors") or not name.startswith("GPU"):
            return None
        try:
            i = int(name[3:])
        except ValueError:
            return None
        if i >= self.knobs["gpus"]:
            return None
        return {"@odata.id": uri, "@odata.type": "#Processor.v1_20_0.Processor", "Id": name,
                "Name": "GPU %d" % i, "ProcessorType": "GPU", "Manufacturer": "NVIDIA",
                "Model": "H100 80GB HBM3", "SerialNumber": "GPU-SN-%04d" % i,
                "Status": {"State": "Enabled", "Health": "OK"}}


def add_slashes(o):
    """HPE iLO style: every @odata.id and action target ends with '/'."""
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("@odata.id", "target") and isinstance(v, str) and not v.endswith("/"):
                o[k] = v + "/"
            else:
                add_slashes(v)
    elif isinstance(o, list):
        for v in o:
            add_slashes(v)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fleetplane-redfish-peer/1"

    def log_message(self, fmt, *args):  # quiet: the request log file is the record
        pass

    @property
    def st(self):
        return self.server.state

    # ---- plumbing ----
    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n < 0 or n > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(n) if n else b""

    def send(self, status, body=None, headers=None, extra=""):
        data = b"" if body is None else json.dumps(body).encode()
        close = self.st.knobs["conn_close"] or \
            self.headers.get("Connection", "").lower() == "close"
        # logged before the answer leaves, so a client that has its answer sees the line
        line = "%s %s %d auth=%s%s" % (self.command, self.path, status, self.auth_kind, extra)
        self.st.log(line)
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("OData-Version", "4.0")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if data and self.command != "HEAD":
            self.wfile.write(data)

    def auth(self):
        """Sets self.auth_kind; returns True when the request may go on."""
        tok = self.headers.get("X-Auth-Token")
        if tok is not None:
            with self.st.lock:
                ok = tok in self.st.sessions
            self.auth_kind = "session" if ok else "badtoken"
            return ok
        h = self.headers.get("Authorization", "")
        if h.startswith("Basic "):
            try:
                u, _, p = base64.b64decode(h[6:]).decode().partition(":")
            except Exception:
                u, p = None, None
            ok = u == self.st.user and p == self.st.password
            self.auth_kind = "basic" if ok else "badbasic"
            return ok
        self.auth_kind = "none"
        return False

    def pre(self):
        """Common checks: delay, busy, auth. Returns True when the handler should go on."""
        self.auth_kind = "none"
        path = norm(self.path)
        if path == "/__control":
            return True
        k = self.st.knobs
        if k["delay_ms"]:
            time.sleep(k["delay_ms"] / 1000.0)
        with self.st.lock:
            busy = k["busy"]["count"] > 0
            if busy:
                k["busy"]["count"] -= 1
        if busy:
            self.send(503, message("Base.1.8.ServiceTemporarilyUnavailable", "busy"),
                      {"Retry-After": str(k["busy"]["retry_after"])})
            return False
        if path in (ROOT, "/redfish") or (self.command == "POST" and path == ROOT + "/SessionService/Sessions"):
            self.auth()  # optional here
            return True
        if not self.auth():
            self.send(401, message("Base.1.8.NoValidSession", "authentication required"),
                      {"WWW-Authenticate": 'Basic realm="redfish"'})
            return False
        return True

    # ---- verbs ----
    def do_GET(self):
        try:
            if not self.pre():
                return
            path = norm(self.path)
            st = self.st
            if path == "/__control":
                return self.control_get()
            if path == "/redfish":
                return self.send(200, {"v1": ROOT + "/"})
            if path.startswith(ROOT + "/TaskService/TaskMonitors/"):
                return self.task_monitor(path.rsplit("/", 1)[1])
            with st.lock:
                if path == ROOT + "/SessionService/Sessions":
                    members = [{"@odata.id": path + "/" + sid} for sid in st.sessions.values()]
                    body = dict(st.res[path], Members=members)
                    body["Members@odata.count"] = len(members)
                    return self.send(200, body)
                gpu = st.gpu(path)
                if gpu is not None:
                    return self.send(200, gpu)
                if path not in st.res:
                    return self.send(404, message("Base.1.8.ResourceMissingAtURI", path))
                return self.send(200, st.view(path), {"ETag": st.etag[path]})
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_DELETE(self):
        if not self.pre():
            return
        path = norm(self.path)
        st = self.st
        if path.startswith(ROOT + "/SessionService/Sessions/"):
            sid = path.rsplit("/", 1)[1]
            with st.lock:
                tok = [t for t, s in st.sessions.items() if s == sid]
                for t in tok:
                    del st.sessions[t]
            return self.send(204 if tok else 404)
        return self.send(405, message("Base.1.8.OperationNotAllowed", "DELETE"))

    def do_PATCH(self):
        if not self.pre():
            return
        path = norm(self.path)
        st = self.st
        try:
            patch = json.loads(self.read_body() or b"{}")
        except ValueError:
            return self.send(400, message("Base.1.8.MalformedJSON", "bad JSON"))
        im = self.headers.get("If-Match")
        extra = (" if-match=%s" % im if im else "") + " body=" + json.dumps(patch, sort_keys=True)
        with st.lock:
            if path not in st.res or not isinstance(patch, dict):
                return self.send(404, message("Base.1.8.ResourceMissingAtURI", path), extra=extra)
            if im is not None and st.knobs["stale_etag_patches"] > 0:
                st.knobs["stale_etag_patches"] -= 1
                st.bump(path)
            if im is not None and im != st.etag[path]:
                return self.send(412, message("Base.1.8.PreconditionFailed", "ETag mismatch"),
                                 {"ETag": st.etag[path]}, extra=extra)
            cur = st.res[path]
            boot = patch.get("Boot")
            if isinstance(boot, dict):
                allowed = cur.get("Boot", {}).get("BootSourceOverrideTarget@Redfish.AllowableValues")
                tgt = boot.get("BootSourceOverrideTarget")
                if tgt is not None and allowed is not None and tgt not in allowed:
                    return self.send(400, message("Base.1.8.PropertyValueNotInList", tgt), extra=extra)
                if "BootSourceOverrideMode" in boot and "BootSourceOverrideMode" not in cur.get("Boot", {}):
                    return self.send(400, message("Base.1.8.PropertyUnknown", "BootSourceOverrideMode"),
                                     extra=extra)
                cur.setdefault("Boot", {}).update(boot)
            for k, v in patch.items():
                if k != "Boot":
                    cur[k] = v
            st.bump(path)
            return self.send(200, st.view(path), {"ETag": st.etag[path]}, extra=extra)

    def do_POST(self):
        if not self.pre():
            return
        path = norm(self.path)
        if path == PUSH_URI and self.st.knobs["multipart_push"]:
            return self.multipart_push()
        try:
            body = json.loads(self.read_body() or b"{}")
        except ValueError:
            return self.send(400, message("Base.1.8.MalformedJSON", "bad JSON"))
        if not isinstance(body, dict):
            return self.send(400, message("Base.1.8.MalformedJSON", "not an object"))
        if path == "/__control":
            return self.control_post(body)
        if path == ROOT + "/SessionService/Sessions":
            return self.login(body)
        if path.endswith("/Actions/ComputerSystem.Reset"):
            return self.reset(path.rsplit("/Actions/", 1)[0], body)
        if path.endswith("/Actions/UpdateService.SimpleUpdate"):
            return self.simple_update(body)
        return self.send(404, message("Base.1.8.ResourceMissingAtURI", path))

    # ---- resources with behaviour ----
    def login(self, body):
        st = self.st
        if st.knobs["session_limit"]:
            return self.send(400, message("Base.1.8.SessionLimitExceeded", "too many sessions"))
        if body.get("UserName") != st.user or body.get("Password") != st.password:
            return self.send(401, message("Base.1.8.NoValidSession", "bad credentials"))
        tok = uuid.uuid4().hex
        sid = uuid.uuid4().hex[:12]
        with st.lock:
            st.sessions[tok] = sid
        loc = ROOT + "/SessionService/Sessions/" + sid
        self.send(201, {"@odata.id": loc, "Id": sid, "UserName": body.get("UserName")},
                  {"X-Auth-Token": tok, "Location": loc})

    def reset(self, sysuri, body):
        st = self.st
        rt = body.get("ResetType")
        extra = " ResetType=%s" % rt
        with st.lock:
            if sysuri not in st.systems():
                return self.send(404, message("Base.1.8.ResourceMissingAtURI", sysuri), extra=extra)
            sysres = st.res[sysuri]
            allowed = sysres.get("Actions", {}).get("#ComputerSystem.Reset", {}).get(
                "ResetType@Redfish.AllowableValues")
            if allowed is not None and rt not in allowed:
                return self.send(400, message("Base.1.8.ActionParameterNotSupported", str(rt)), extra=extra)
            on = rt in ON_TYPES or (rt == "PushPowerButton" and sysres.get("PowerState") != "On")
            if rt == "PushPowerButton" and sysres.get("PowerState") == "On":
                on = False
            new = "On" if on else "Off"
            if rt == "Nmi":
                new = sysres.get("PowerState", "On")
            sysres["PowerState"] = new
            st.bump(sysuri)
            for c in st.chassis_of(sysuri):
                if "PowerState" in st.res[c]:
                    st.res[c]["PowerState"] = new
                    st.bump(c)
            boot = sysres.get("Boot", {})
            cb = st.knobs["callback"]
            pxe = on and boot.get("BootSourceOverrideTarget") == "Pxe" and \
                boot.get("BootSourceOverrideEnabled") in ("Once", "Continuous")
            if pxe and boot.get("BootSourceOverrideEnabled") == "Once":
                boot["BootSourceOverrideEnabled"] = "Disabled"
                st.bump(sysuri)
            task = None
            if st.knobs["reset_task"]:
                task = self.new_task(done_after=1)
        if pxe and cb:
            threading.Thread(target=callback, args=(st, dict(cb)), daemon=True).start()
        if task:
            return self.send(202, st.tasks[task]["body"],
                             {"Location": ROOT + "/TaskService/TaskMonitors/" + task}, extra=extra)
        if st.knobs["hpe_wrapper"]:  # HPE iLO: success wrapped in an error object
            return self.send(200, message("Base.1.4.Success", "Success"), extra=extra)
        return self.send(204, extra=extra)

    def new_task(self, done_after):
        st = self.st
        st.task_seq += 1
        tid = "fp%d" % st.task_seq
        st.tasks[tid] = {"polls": 0, "done_after": done_after, "body": {
            "@odata.id": ROOT + "/TaskService/Tasks/" + tid, "@odata.type": "#Task.v1_7_0.Task",
            "Id": tid, "Name": "Task " + tid, "TaskState": "Running", "TaskStatus": "OK",
            "PercentComplete": 0, "Messages": [],
            "TaskMonitor": ROOT + "/TaskService/TaskMonitors/" + tid}}
        return tid

    def simple_update(self, body):
        st = self.st
        info = st.res.get(ROOT + "/UpdateService/SimpleUpdateActionInfo", {})
        allowed = None
        for p in info.get("Parameters", []):
            if p.get("Name") == "TransferProtocol":
                allowed = p.get("AllowableValues")
        extra = " ImageURI=%s TransferProtocol=%s" % (body.get("ImageURI"), body.get("TransferProtocol"))
        if not isinstance(body.get("ImageURI"), str):
            return self.send(400, message("Base.1.8.ActionParameterMissing", "ImageURI"), extra=extra)
        tp = body.get("TransferProtocol")
        if tp is not None and allowed is not None and tp not in allowed:
            return self.send(400, message("Base.1.8.ActionParameterNotSupported", tp), extra=extra)
        with st.lock:
            tid = self.new_task(done_after=-1 if st.knobs["task_never_finishes"] else 2)
            b = st.tasks[tid]["body"]
        return self.send(202, b, {"Location": ROOT + "/TaskService/TaskMonitors/" + tid}, extra=extra)

    def multipart_push(self):
        """DSP0266 "Multipart HTTP push updates": parts UpdateParameters and UpdateFile."""
        st = self.st

        def refuse(status, mid, what):
            return self.send(status, message(mid, what), extra=" error=" + what.replace(" ", "_"))

        ctype = self.headers.get("Content-Type", "")
        mtype, _, rest = ctype.partition(";")
        boundary = None
        for param in rest.split(";"):
            k, _, v = param.strip().partition("=")
            if k.lower() == "boundary":
                boundary = v.strip('"')
        if mtype.strip().lower() != "multipart/form-data" or not boundary:
            return refuse(415, "Base.1.8.UnsupportedMediaType", "want multipart/form-data")
        try:
            n = int(self.headers.get("Content-Length") or -1)
        except ValueError:
            n = -1
        if n < 0 or n > MAX_UPLOAD:
            return refuse(413, "Base.1.8.PayloadTooLarge", "Content-Length missing or too large")
        data = self.rfile.read(n)
        parts = {}
        for chunk in (b"\r\n" + data).split(b"\r\n--" + boundary.encode())[1:]:
            if chunk.startswith(b"--"):
                break  # the close delimiter
            head, sep, content = chunk.partition(b"\r\n\r\n")
            if not sep:
                return refuse(400, "Base.1.8.MalformedJSON", "part without headers")
            name = filename = None
            for line in head.split(b"\r\n"):
                k, _, v = line.decode("latin-1").partition(":")
                if k.strip().lower() != "content-disposition":
                    continue
                for param in v.split(";")[1:]:
                    pk, _, pv = param.strip().partition("=")
                    if pk == "name":
                        name = pv.strip('"')
                    elif pk == "filename":
                        filename = pv.strip('"')
            if name in parts:
                return refuse(400, "Base.1.8.ActionParameterDuplicate", "part " + str(name) + " twice")
            parts[name] = (filename, content)
        if "UpdateParameters" not in parts or "UpdateFile" not in parts:
            return refuse(400, "Base.1.8.ActionParameterMissing", "UpdateParameters and UpdateFile needed")
        try:
            params = json.loads(parts["UpdateParameters"][1])
        except ValueError:
            return refuse(400, "Base.1.8.MalformedJSON", "UpdateParameters not JSON")
        if not isinstance(params, dict):
            return refuse(400, "Base.1.8.MalformedJSON", "UpdateParameters not an object")
        tg = params.get("Targets", [])
        if not isinstance(tg, list) or not all(isinstance(t, str) for t in tg):
            return refuse(400, "Base.1.8.PropertyValueTypeError", "Targets")
        at = params.get("@Redfish.OperationApplyTime", "Immediate")
        if at not in ("Immediate", "OnReset"):
            return refuse(400, "Base.1.8.PropertyValueNotInList", "@Redfish.OperationApplyTime")
        fname, image = parts["UpdateFile"]
        extra = " UpdateParameters=%s UpdateFile=%s size=%d sha256=%s" % (
            json.dumps(params, sort_keys=True), fname, len(image), hashlib.sha256(image).hexdigest())
        with st.lock:
            tid = self.new_task(done_after=-1 if st.knobs["task_never_finishes"] else 2)
            b = st.tasks[tid]["body"]
        return self.send(202, b, {"Location": ROOT + "/TaskService/TaskMonitors/" + tid}, extra=extra)

    def task_monitor(self, tid):
        st = self.st
        with st.lock:
            t = st.tasks.get(tid)
            if t is None:
                return self.send(404, message("Base.1.8.ResourceMissingAtURI", tid))
            t["polls"] += 1
            if t["done_after"] >= 0 and t["polls"] >= t["done_after"] and not st.knobs["task_never_finishes"]:
                t["body"].update(TaskState="Completed", PercentComplete=100,
                                 Messages=[{"MessageId": "Base.1.8.Success", "Message": "done"}])
            else:
                t["body"]["PercentComplete"] = min(90, 10 * t["polls"])
            b = copy.deepcopy(t["body"])
        if b["TaskState"] == "Running":
            return self.send(202, b, {"Location": ROOT + "/TaskService/TaskMonitors/" + tid,
                                      "Retry-After": "0"})
        return self.send(200, b)

    # ---- control ----
    def control_allowed(self):
        return self.client_address[0] in ("127.0.0.1", "::1")

    def control_get(self):
        st = self.st
        with st.lock:
            body = {"knobs": st.knobs, "sessions": len(st.sessions),
                    "power": {u: st.res[u].get("PowerState") for u in st.systems()},
                    "boot": {u: st.res[u].get("Boot") for u in st.systems()}}
        self.send(200, body)

    def control_post(self, body):
        if not self.control_allowed():
            return self.send(403, message("Base.1.8.InsufficientPrivilege", "loopback only"))
        st = self.st
        with st.lock:
            if body.pop("reset", False):
                st.knobs = copy.deepcopy(DEFAULT_KNOBS)
            if body.pop("drop_sessions", False):  # one-shot: every session token expires
                st.sessions.clear()
            boot = body.pop("set_boot", None)
            if isinstance(boot, dict):  # one-shot: every System's Boot takes these values
                for u in st.systems():
                    st.res[u].setdefault("Boot", {}).update(boot)
                    st.bump(u)
            for k, v in body.items():
                if k not in DEFAULT_KNOBS:
                    return self.send(400, message("Base.1.8.PropertyUnknown", k))
                st.knobs[k] = copy.deepcopy(v)
            knobs = copy.deepcopy(st.knobs)
        self.send(200, knobs)


def callback(st, cb):
    """What a deploy agent does after a PXE boot: :booted, then :validated."""
    try:
        with open(cb["auth_header_file"], encoding="utf-8") as f:
            name, _, value = f.read().strip().partition(":")
    except (OSError, KeyError, TypeError) as e:
        st.log("CALLBACK error %s" % type(e).__name__)
        return
    boot_id = uuid.uuid4().hex
    base = cb["fp_url"].rstrip("/") + "/v1/nodes/" + cb["node"]
    for verb, body in ((":booted", {"bootId": boot_id}),
                       (":validated", {"bootId": boot_id, "passed": True})):
        req = urllib.request.Request(base + verb, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              name.strip(): value.strip()})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status = r.status
        except urllib.error.HTTPError as e:
            status = e.code
        except OSError as e:
            st.log("CALLBACK %s error %s" % (base + verb, type(e).__name__))
            return
        st.log("CALLBACK %s %d" % (base + verb, status))
        if status >= 300:
            return


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--user", default="admin")
    ap.add_argument("--password-file")
    a = ap.parse_args()
    password = "password"
    if a.password_file:
        with open(a.password_file, encoding="utf-8") as f:
            password = f.read().rstrip("\n")
    st = State(a.bundle, a.user, password, a.log)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.state = st
    tmp = a.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
