#!/bin/bash
# test_http_edge.sh - the HTTP edge (issue 16 item 7), over a raw socket: every error is an
# RFC 9457 problem (application/problem+json with the status), those libmicrohttpd raises
# itself included (negative Content-Length, HTTP/0.9, 414, 431, a bad chunk, 505 - HTML before);
# a path or query that is not UTF-8 gives a problem with the bytes as \xNN (the body was `null`);
# differing Content-Length headers, Content-Length with Transfer-Encoding, no or two Host
# headers, and two Idempotency-Keys are refused; Expect: 100-continue is answered 401 without a
# token (no 100 Continue, so no body is sent for nothing) and 100 with one; unknown routes
# without a token answer 401, with one 404/405.
. "$(dirname "$0")/lib.sh"

start_serve "$WORK/d"
PORT=${FLEETPLANE_URL##*:}
PY=$WORK/raw.py
cat >"$PY" <<'EOF'
# raw.py PORT TOKEN: sends each case on its own connection; prints one line per case:
# NAME STATUS CONTENT-TYPE JSON-STATUS DETAIL (DETAIL as JSON; '-' when absent).
import json, socket, sys
port, tok = int(sys.argv[1]), sys.argv[2].encode()
auth = b"Authorization: Bearer " + tok + b"\r\n"
cases = [
    ("neg_cl", b"POST /v1/nodes HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"),
    ("http09", b"GET /\r\n\r\n"),
    ("http2", b"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n"),
    ("long_uri", b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("big_headers", b"GET /healthz HTTP/1.1\r\nHost: x\r\n" +
     b"".join(b"X-%d: %s\r\n" % (i, b"a" * 1000) for i in range(20)) + b"\r\n"),
    ("bad_chunk", b"POST /v1/sites HTTP/1.1\r\nHost: x\r\n" + auth +
     b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"),
    ("bad_utf8_path", b"GET /v1/nodes/\xff\xfeab HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"),
    ("bad_utf8_query", b"GET /v1/nodes?phase=%ff%fe HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"),
    ("two_cl", b"POST /v1/sites HTTP/1.1\r\nHost: x\r\n" + auth +
     b"Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}"),
    ("cl_te", b"POST /v1/sites HTTP/1.1\r\nHost: x\r\n" + auth +
     b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    ("no_host", b"GET /healthz HTTP/1.1\r\n\r\n"),
    ("two_hosts", b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
    ("two_idem", b"POST /v1/sites HTTP/1.1\r\nHost: x\r\n" + auth +
     b"Idempotency-Key: a\r\nIdempotency-Key: b\r\nContent-Type: application/json\r\n"
     b"Content-Length: 2\r\n\r\n{}"),
    ("two_if_match", b"DELETE /v1/nodes/n1 HTTP/1.1\r\nHost: x\r\n" + auth +
     b"If-Match: \"5\"\r\nIf-Match: \"7\"\r\n\r\n"),
    ("expect_no_token", b"POST /v1/sites HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
     b"Content-Length: 2\r\n\r\n"),
    ("expect_token", b"POST /v1/sites HTTP/1.1\r\nHost: x\r\n" + auth +
     b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n"),
    ("expect_other", b"POST /v1/sites HTTP/1.1\r\nHost: x\r\n" + auth +
     b"Expect: tea\r\nContent-Length: 2\r\n\r\n"),
    ("unknown_no_token", b"GET /v1/secrets HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("unknown_token", b"GET /v1/secrets HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"),
    ("method_no_token", b"DELETE /v1/nodes HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("method_token", b"DELETE /v1/nodes HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"),
    ("healthz_no_token", b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
]
for name, req in cases:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    s.settimeout(2)
    data = b""
    try:
        while b"\r\n\r\n" not in data or name != "expect_token":
            c = s.recv(65536)
            if not c:
                break
            data += c
            if name == "expect_token" and b"\r\n\r\n" in data:
                break
    except socket.timeout:
        pass
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split(" ")[1] if lines and " " in lines[0] else "none"
    ctype = "-"
    for l in lines[1:]:
        k, _, v = l.partition(":")
        if k.lower() == "content-type":
            ctype = v.strip()
    # libmicrohttpd 0.9.75 sends the header block of its Content-Length error twice; the body
    # follows the last one
    while body.startswith(b"HTTP/1.1 "):
        body = body.partition(b"\r\n\r\n")[2]
    js, detail = "-", "-"
    try:
        doc = json.loads(body)
        js = str(doc.get("status", "-"))
        detail = json.dumps(doc.get("detail", "-"))
    except ValueError:
        pass
    print(name, status, ctype, js, detail)
EOF
python3 "$PY" "$PORT" "$FLEETPLANE_TOKEN" >"$WORK/out"
cat "$WORK/out"
field() { awk -v n="$1" -v f="$2" '$1 == n { print $f }' "$WORK/out"; }
detail() { awk -v n="$1" '$1 == n { $1 = $2 = $3 = $4 = ""; sub(/^ +/, ""); print }' "$WORK/out"; }
problem() { # NAME STATUS: answered STATUS as a problem document of that status
	assert_eq "$2" "$(field "$1" 2)" "$1: HTTP status"
	assert_eq application/problem+json "$(field "$1" 3)" "$1: Content-Type"
	assert_eq "$2" "$(field "$1" 4)" "$1: the problem's status member"
}
has() { # NAME TEXT: the detail contains TEXT
	detail "$1" | grep -qF -- "$2" || fail "$1: detail [$(detail "$1")] lacks [$2]"
}

# libmicrohttpd's own errors
problem neg_cl 400
has neg_cl "Content-Length"
problem http09 400
has http09 "syntactically incorrect"
problem http2 505
problem long_uri 414
problem big_headers 431
problem bad_chunk 400
has bad_chunk "chunked encoding"
# bytes that are not UTF-8 shown as \xNN
problem bad_utf8_path 400
has bad_utf8_path '\\xFF\\xFEab'
problem bad_utf8_query 400
has bad_utf8_query '\\xFF\\xFE'
# framing
problem two_cl 400
has two_cl "Content-Length given 2 times with different values"
problem cl_te 400
has cl_te "both Content-Length and Transfer-Encoding"
problem no_host 400
has no_host "no Host header"
problem two_hosts 400
has two_hosts "several Host headers"
problem two_idem 400
has two_idem "Idempotency-Key given 2 times"
problem two_if_match 400
has two_if_match "If-Match given 2 times"
# Expect: the token is checked before 100 Continue
problem expect_no_token 401
assert_eq 100 "$(field expect_token 2)" "Expect: 100-continue with a valid token"
problem expect_other 417
# no route enumeration without a token
problem unknown_no_token 401
problem method_no_token 401
problem unknown_token 404
problem method_token 405
assert_eq 200 "$(field healthz_no_token 2)" "/healthz without a token"
# nothing was created by the refused requests
assert_eq 0 "$(api GET /v1/sites | tail -n +2 | jq '.items | length')" "sites after the refused POSTs"
echo "PASS $TEST_NAME"
