#!/usr/bin/env bash
# Print the measured facts of captured traces (needs sqlite3), for testdata/traces/README.md.
#   bash testdata/capture/verify.sh testdata/traces/*.sqlite.gz
# Step windows: a step ends with its host read-back, the device-to-host memcpy (copyKind=2);
# window 0 is the prefill, windows 1..N the decode steps.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for gz in "$@"; do
  name=$(basename "$gz" .sqlite.gz)
  db=$tmp/$name.sqlite
  gzip -dc "$gz" > "$db"
  echo "=== $name  gz_bytes=$(stat -c %s "$gz") sqlite_bytes=$(stat -c %s "$db")"
  has_nvtx=$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name='NVTX_EVENTS'")
  sqlite3 -separator ' ' "$db" "
SELECT 'kernels_per_device', group_concat('dev' || deviceId || '=' || n, ',') FROM (SELECT deviceId, count(*) n FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY deviceId);
SELECT 'kernels_total', count(*), 'graph_node_kernels', sum(graphNodeId IS NOT NULL AND graphNodeId<>0), 'distinct_names', count(DISTINCT demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL;
SELECT 'cudaGraphLaunch', count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id=r.nameId WHERE s.value LIKE 'cudaGraphLaunch%';
SELECT 'memcpy_D2H', sum(copyKind=2), 'memcpy_D2D', sum(copyKind=8), 'memcpy_H2D', sum(copyKind=1) FROM CUPTI_ACTIVITY_KIND_MEMCPY;
SELECT 'memset', count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET;
WITH d AS (SELECT end AS t, row_number() OVER (ORDER BY start) AS i FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind=2),
b AS (SELECT i, t, coalesce(lag(t) OVER (ORDER BY i), 0) AS t0 FROM d)
SELECT 'kernels_per_window(prefill,decode...)', group_concat(n, ',') FROM (SELECT b.i, count(k.start) n FROM b LEFT JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.start>=b.t0 AND k.start<b.t GROUP BY b.i ORDER BY b.i);
SELECT 'kernels_after_last_D2H', count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start > (SELECT max(end) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind=2);
WITH d AS (SELECT r.end AS t, row_number() OVER (ORDER BY r.start) AS i FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId=r.correlationId AND m.copyKind=2),
b AS (SELECT i, t, coalesce(lag(t) OVER (ORDER BY i), 0) AS t0 FROM d),
api AS (SELECT r.start, s.value AS nm FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id=r.nameId
        WHERE s.value LIKE 'cudaLaunchKernel%' OR s.value LIKE 'cuLaunchKernel%' OR s.value LIKE 'cudaGraphLaunch%' OR s.value LIKE 'cudaMemcpy%' OR s.value LIKE 'cudaMemset%')
SELECT 'host_launch_calls_per_window(kernel+graph+memcpy+memset)', group_concat(n, ',') FROM (SELECT b.i, count(api.start) n FROM b LEFT JOIN api ON api.start>=b.t0 AND api.start<b.t GROUP BY b.i ORDER BY b.i);
"
  if [ "$has_nvtx" = 1 ]; then
    sqlite3 -separator ' ' "$db" "SELECT 'nvtx', coalesce(text, (SELECT value FROM StringIds WHERE id=textId)) AS t, count(*) FROM NVTX_EVENTS GROUP BY t ORDER BY t;"
  else
    echo "nvtx none (no NVTX_EVENTS table)"
  fi
  echo "-- kernel names in decode step 6 (window 7): count name"
  sqlite3 -separator ' ' "$db" "
WITH d AS (SELECT end AS t, row_number() OVER (ORDER BY start) AS i FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind=2),
b AS (SELECT i, t, coalesce(lag(t) OVER (ORDER BY i), 0) AS t0 FROM d)
SELECT count(*), substr(s.value, 1, 150) FROM b JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.start>=b.t0 AND k.start<b.t JOIN StringIds s ON s.id=k.demangledName WHERE b.i=7 GROUP BY s.value ORDER BY 1 DESC, 2;"
done
