#!/bin/bash
# bench/mk100k.sh SRC DST [N] - synthesizes a steady-state data dir of N (100000) available sim
# nodes from a settled `serve --sim 10000 --sim-speed 0` data dir SRC, offline with sqlite3: copies
# SRC's store, then adds nodes r1251n01.. (and their racks and /sim/hw records) cloned from
# r01n01 with the name, uid, rack and serial numbers rewritten; the change feed is emptied
# (compacted) so the copy looks like a long-running store. Use when the real onboarding of
# 100,000 nodes is too slow to produce one (see docs/benchmarks.md).
set -euo pipefail
SRC=$1 DST=$2 N=${3:-100000}
rm -rf "$DST"; mkdir -p "$DST"; chmod 700 "$DST"
sqlite3 "$SRC/fleetplane.db" "VACUUM INTO '$DST/fleetplane.db'"
cp "$SRC/admin.token" "$DST/admin.token"
sqlite3 "$DST/fleetplane.db" <<SQL
PRAGMA journal_mode = WAL;
BEGIN;
CREATE TEMP TABLE t AS SELECT (SELECT value FROM kv WHERE key = '/nodes/r01n01') AS node,
  (SELECT value FROM kv WHERE key = '/sim/hw/r01n01') AS hw,
  (SELECT value FROM kv WHERE key = '/racks/r01') AS rack,
  (SELECT rev FROM meta) AS rev;
CREATE TEMP TABLE ids AS WITH RECURSIVE i(x) AS (SELECT (SELECT count(*) FROM kv WHERE key LIKE '/nodes/%') UNION ALL SELECT x + 1 FROM i WHERE x + 1 < $N)
  SELECT x, printf('r%02dn%02d', x / 8 + 1, x % 8 + 1) AS name, printf('r%02d', x / 8 + 1) AS rk FROM i;
INSERT OR IGNORE INTO kv(key, value, create_rev, mod_rev)
  SELECT '/nodes/' || name, replace(replace(json_set(node, '$.metadata.name', name, '$.metadata.uid',
      printf('%08x-0000-4000-8000-%012x', x, x), '$.spec.rack', rk, '$.metadata.labels.rack', rk),
      '"r01n01', '"' || name), 'SIM' || substr(json_extract(node, '$.status.inventory.gpus[0].serial'), 4, 8), 'SIM' || printf('%08x', x)),
    (SELECT rev FROM t) + x, (SELECT rev FROM t) + x FROM ids, t;
INSERT OR IGNORE INTO kv(key, value, create_rev, mod_rev)
  SELECT '/sim/hw/' || name, replace(hw, 'r01n01', name), (SELECT rev FROM t) + x, (SELECT rev FROM t) + x FROM ids, t;
INSERT OR IGNORE INTO kv(key, value, create_rev, mod_rev)
  SELECT '/racks/' || rk, json_set(rack, '$.metadata.name', rk, '$.metadata.labels.pdu', rk, '$.metadata.labels.nvlink_domain', 'nvl-' || rk), (SELECT rev FROM t) + x, (SELECT rev FROM t) + x FROM ids, t WHERE x % 8 = 0;
DELETE FROM changes;
UPDATE meta SET rev = (SELECT max(mod_rev) FROM kv), compacted_rev = (SELECT max(mod_rev) FROM kv);
COMMIT;
SQL
sqlite3 "$DST/fleetplane.db" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
echo "$DST: $(sqlite3 "$DST/fleetplane.db" "SELECT count(*) FROM kv WHERE key LIKE '/nodes/%'") nodes, $(du -sm "$DST" | cut -f1) MB"
