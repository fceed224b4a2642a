#!/usr/bin/env bash
# test_logs.sh - serve's log lines are one structured format (docs/operations.md "Logs"):
# - default: every line of serve.log is strict logfmt (ts, level, msg first, then unique
#   key=value pairs; a value bare or quoted with only \" \\ \n \r \t \uXXXX escapes), even
#   for a request path that carries a quote, spaces, "level=error" and a newline (logged at
#   debug level): it stays one value of one line and reads back byte for byte;
# - the bound port is logged: --listen 127.0.0.1:0, and the "serve: listening" line's url and
#   the "api listening" line's addr carry the port that serve.url names;
# - `log-format json` in a --config file: every line is one JSON object with the same first
#   keys, and the same url;
# - a data dir whose store is schema 1 (docs/operations.md "Upgrades"; the SQL and rows of
#   bf37143, as tests/unit/test_store_migrate.c) is upgraded when serve starts: the log names
#   the backup, the backup file is there, the node it held is served.
. "$(dirname "$0")/lib.sh"

# check_logfmt FILE: exit 1 naming the first line that is not strict logfmt; prints the decoded
# lines as JSON, one a line, for the checks below.
check_logfmt() {
	python3 - "$1" <<'PY'
import json, re, sys
KEY = r'[A-Za-z_][A-Za-z0-9_.-]*'
BARE = r'[^\x00-\x20="\\\x7f]+'
QUOTED = r'"(?:[^"\\\x00-\x1f\x7f]|\\["\\nrt]|\\u[0-9a-fA-F]{4})*"'
PAIR = re.compile(r'(%s)=(%s|%s)(?: |$)' % (KEY, QUOTED, BARE))
ESC = {'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t'}
def unquote(v):
    if not v.startswith('"'):
        return v
    return re.sub(r'\\(u[0-9a-fA-F]{4}|.)',
                  lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == 'u' and len(m.group(1)) == 5 else ESC[m.group(1)],
                  v[1:-1])
n = 0
for no, raw in enumerate(open(sys.argv[1], 'rb'), 1):
    line = raw.decode('utf-8')  # raises on bad UTF-8
    assert line.endswith('\n'), f'line {no}: no newline'
    line = line[:-1]
    pos, keys, rec = 0, [], {}
    while pos < len(line):
        m = PAIR.match(line, pos)
        if not m:
            sys.exit(f'line {no} is not logfmt at column {pos}: {line!r}')
        k = m.group(1)
        if k in rec:
            sys.exit(f'line {no}: key {k} twice: {line!r}')
        keys.append(k); rec[k] = unquote(m.group(2)); pos = m.end()
    if keys[:3] != ['ts', 'level', 'msg']:
        sys.exit(f'line {no}: keys start {keys[:3]}, not ts level msg: {line!r}')
    if not re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z', rec['ts']) or \
       rec['level'] not in ('debug', 'info', 'warn', 'error'):
        sys.exit(f'line {no}: bad ts or level: {line!r}')
    print(json.dumps(rec)); n += 1
if n < 5:
    sys.exit(f'only {n} lines')
PY
}

# --- logfmt (the default), at debug level, with a hostile request path
D="$WORK/d"
start_serve "$D" --log-level debug
URL_FILE=$(cat "$D/serve.url")
PORT=${URL_FILE##*:}
[ "$PORT" != 0 ] || fail "serve.url names port 0"
# the path, URL-escaped: /v1/nodes/a"b level=error<LF>ts=x
CODE=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
	"$FLEETPLANE_URL/v1/nodes/a%22b%20level=error%0Ats=x")
case $CODE in 4??) ;; *) fail "GET of the hostile path: $CODE, not a 4xx" ;; esac
stop_serve
check_logfmt "$D/serve.log" >"$WORK/lines.json" || fail "serve.log is not strict logfmt"
python3 - "$WORK/lines.json" "$URL_FILE" "$PORT" "$CODE" <<'PY' || fail "logfmt content checks"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
url, port = sys.argv[2], sys.argv[3]
hostile = '/v1/nodes/a"b level=error\nts=x'
hits = [r for r in recs if r.get('path') == hostile]
assert len(hits) == 1 and hits[0]['level'] == 'debug' and hits[0]['status'] == sys.argv[4], \
    ('hostile path not logged once as one value', [r for r in recs if 'path' in r][-3:])
assert not any(r['level'] == 'error' for r in recs), 'a line at level error'
ls = [r for r in recs if r['msg'] == 'serve: listening']
assert len(ls) == 1 and ls[0]['url'] == url and ls[0]['port'] == port and ls[0]['listen'] == '127.0.0.1:0', ls
api = [r for r in recs if r['msg'] == 'api listening']
assert len(api) == 1 and api[0]['addr'] == '127.0.0.1:' + port, api
PY

# --- json, from the config file key log-format
printf 'log-format json\n' >"$WORK/serve.conf"
J="$WORK/j"
start_serve "$J" --config "$WORK/serve.conf"
URL_FILE=$(cat "$J/serve.url")
stop_serve
python3 - "$J/serve.log" "$URL_FILE" <<'PY' || fail "json log checks"
import json, sys
n = 0
for no, line in enumerate(open(sys.argv[1], encoding='utf-8'), 1):
    pairs = json.loads(line, object_pairs_hook=lambda p: p)
    keys = [k for k, _ in pairs]
    assert keys[:3] == ['ts', 'level', 'msg'] and len(set(keys)) == len(keys), (no, line)
    assert all(isinstance(v, str) for _, v in pairs), (no, line)
    rec = dict(pairs)
    if rec['msg'] == 'serve: listening':
        assert rec['url'] == sys.argv[2], (rec, sys.argv[2]); n += 1
assert n == 1, 'no listening line'
PY
# --- a schema 1 store upgraded by serve
U="$WORK/u"
mkdir -p "$U"
python3 - "$U/fleetplane.db" <<'PY'
import sqlite3, sys
node = ('{"kind":"Node","metadata":{"name":"r01n01","uid":"u-1","labels":{},'
        '"createdAt":"2026-11-29T10:00:00.000Z"},"spec":{"site":"s1","rack":"r01",'
        '"bmc":{"driver":"sim","address":"sim://r01n01"}},"status":{"phase":"enrolled",'
        '"phaseSince":"2026-11-29T10:00:00.000Z","holds":[],"conditions":[]}}')
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute('PRAGMA journal_mode = WAL')
db.executescript(
    'CREATE TABLE kv(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL,'
    ' create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL);'
    'CREATE TABLE changes(id INTEGER PRIMARY KEY, key TEXT NOT NULL, type INTEGER NOT NULL,'
    ' value TEXT, create_rev INTEGER NOT NULL);'
    'CREATE TABLE meta(id INTEGER PRIMARY KEY CHECK (id = 1), rev INTEGER NOT NULL,'
    ' compacted_rev INTEGER NOT NULL);'
    'INSERT INTO meta VALUES (1, 1, 0); PRAGMA user_version = 1;')
db.execute('INSERT INTO kv VALUES (?, ?, 1, 1)', ('/nodes/r01n01', node))
db.execute('INSERT INTO changes VALUES (2048, ?, 1, ?, 1)', ('/nodes/r01n01', node))
db.close()
PY
start_serve "$U"
assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
	"$FLEETPLANE_URL/v1/nodes/r01n01")" "GET of the node of the schema 1 store"
stop_serve
grep -qF "msg=\"store: sqlite schema upgraded\" path=$U/fleetplane.db from=1 to=2 backup=$U/fleetplane.db.v1.bak" \
	"$U/serve.log" || fail "no upgrade line naming the backup in serve.log"
[ -s "$U/fleetplane.db.v1.bak" ] || fail "no backup file"
check_logfmt "$U/serve.log" >/dev/null || fail "serve.log of the upgrade is not strict logfmt"
echo "ok $TEST_NAME"
