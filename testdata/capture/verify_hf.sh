#!/usr/bin/env bash
# Print the measured facts of the hf_workload.py captures (needs sqlite3), for
# testdata/traces/README.md:  bash testdata/capture/verify_hf.sh testdata/traces/hf-*.sqlite.gz ...
# Forward windows come from the ground-truth marker (one cudaMemGetInfo per forward, on the
# thread that runs the model): window 0 is the prefill forward, windows 1..N-1 the decode
# forwards, each running from its marker to the next one of the same process. A kernel belongs
# to the window in which its launching runtime call (cudaLaunchKernel, cuLaunchKernel*,
# cudaGraphLaunch, by correlationId) started.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for gz in "$@"; do
  name=$(basename "$gz" .sqlite.gz)
  db=$tmp/$name.sqlite
  gzip -dc "$gz" > "$db"
  echo "=== $name  gz_bytes=$(stat -c %s "$gz") sqlite_bytes=$(stat -c %s "$db")"
  sqlite3 -separator ' ' "$db" "
CREATE TEMP TABLE m AS SELECT r.globalTid/16777216 % 16777216 AS pid, r.start AS t,
  row_number() OVER (PARTITION BY r.globalTid/16777216 % 16777216 ORDER BY r.start) - 1 AS i
  FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id=r.nameId WHERE s.value LIKE 'cudaMemGetInfo%';
CREATE TEMP TABLE w AS SELECT pid, i, t AS t0, coalesce(lead(t) OVER (PARTITION BY pid ORDER BY i), 9e18) AS t1 FROM m;
CREATE TEMP TABLE kl AS SELECT k.deviceId AS dev, (SELECT value FROM StringIds WHERE id=k.demangledName) AS nm, k.start, k.end, r.start AS ls,
  r.globalTid/16777216 % 16777216 AS pid FROM CUPTI_ACTIVITY_KIND_KERNEL k
  JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId=k.correlationId AND r.globalTid/16777216 % 16777216 = k.globalPid/16777216 % 16777216;
SELECT 'kernels_per_device', group_concat('dev' || deviceId || '=' || n, ',') FROM (SELECT deviceId, count(*) n FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY deviceId);
SELECT 'graph_node_kernels', sum(graphNodeId IS NOT NULL AND graphNodeId<>0), 'distinct_names', count(DISTINCT demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL;
SELECT 'forward_markers_per_process', group_concat(n, ',') FROM (SELECT pid, count(*) n FROM m GROUP BY pid);
SELECT 'kernels_before_first_marker', count(*) FROM kl WHERE ls < (SELECT min(t) FROM m WHERE m.pid=kl.pid);
SELECT 'dev' || dev || '_kernels_per_forward(prefill,decode...)', group_concat(n, ',') FROM (
  SELECT kl.dev, w.i, count(*) n FROM kl JOIN w ON w.pid=kl.pid AND kl.ls>=w.t0 AND kl.ls<w.t1 GROUP BY kl.dev, w.i ORDER BY kl.dev, w.i) GROUP BY dev;
SELECT 'dev' || dev || '_allreduce_per_forward', group_concat(n, ',') FROM (
  SELECT kl.dev, w.i, sum(kl.nm LIKE '%AllReduce%') n FROM kl JOIN w ON w.pid=kl.pid AND kl.ls>=w.t0 AND kl.ls<w.t1 GROUP BY kl.dev, w.i ORDER BY kl.dev, w.i) GROUP BY dev;
SELECT 'dev' || dev || '_allgather_per_forward', group_concat(n, ',') FROM (
  SELECT kl.dev, w.i, sum(kl.nm LIKE '%AllGather%') n FROM kl JOIN w ON w.pid=kl.pid AND kl.ls>=w.t0 AND kl.ls<w.t1 GROUP BY kl.dev, w.i ORDER BY kl.dev, w.i) GROUP BY dev;
SELECT 'kernels_per_graph_launch', group_concat(n, ',') FROM (SELECT r.correlationId, count(k.start) n FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id=r.nameId
  LEFT JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId=r.correlationId WHERE s.value LIKE 'cudaGraphLaunch%' GROUP BY r.correlationId ORDER BY r.start);
SELECT 'cudaGraphLaunch', count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id=r.nameId WHERE s.value LIKE 'cudaGraphLaunch%';
SELECT 'memcpy_D2H', sum(copyKind=2), 'memcpy_H2D', sum(copyKind=1), 'memcpy_D2D', sum(copyKind=8) FROM CUPTI_ACTIVITY_KIND_MEMCPY;
SELECT 'syncs', group_concat(s.value || '=' || n, ',') FROM (SELECT nameId, count(*) n FROM CUPTI_ACTIVITY_KIND_RUNTIME r GROUP BY nameId) x JOIN StringIds s ON s.id=x.nameId WHERE s.value LIKE '%Synchronize%';
SELECT 'nvtx_ranges', count(*) FROM sqlite_master WHERE name='NVTX_EVENTS';
"
  if [ "$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name='NVTX_EVENTS'")" = 1 ]; then
    sqlite3 -separator ' ' "$db" "SELECT 'nvtx_events', count(*), 'distinct_texts', count(DISTINCT coalesce(text, textId)) FROM NVTX_EVENTS WHERE eventType=59;"
  fi
  sqlite3 "$db" "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name='DeviceEnvironment'" 2>/dev/null | tr ';' '\n' | grep -E '^NCCL_(PROTO|ALGO|NVLS)' | sed 's/^/env /' || true
done
