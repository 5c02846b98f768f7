#!/usr/bin/env bash
# Check the serving-situation captures (capture_serve.sh) against their ground-truth sidecars,
# with SQL on the trace (needs sqlite3 and python3, no other package):
#   bash testdata/capture/verify_serve.sh testdata/traces/serve-*.sqlite.gz testdata/traces/runs/*.sqlite.gz ...
# For each NAME.sqlite.gz it reads NAME.truth.json beside it and prints the facts, then CHECK lines
# (ok / MISMATCH); it exits non-zero when a CHECK fails.
#
# Windows: with the marker (truth "marker": true; one cudaMemGetInfo per forward from a forward
# pre-hook), forward i runs from its marker to the next marker of the same process; serve-cb has
# one more cudaMemGetInfo before the first forward (continuous batching sizing its paged cache:
# a real call, not the marker), so its first one is skipped. Without the marker (workload.py,
# JAX), a forward ends with its device-to-host read-back (window i ends at the i-th D2H copy's
# API call). A kernel belongs to the window in which its launching API call (cudaLaunchKernel,
# cuLaunchKernel*, cudaGraphLaunch, cuGraphLaunch: by correlationId) started.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
check() {  # check LABEL WANT GOT
  if [ "$2" = "$3" ]; then echo "CHECK $name $1: ok ($3)"; else echo "CHECK $name $1: MISMATCH want $2 got $3"; bad=1; fi
}
for gz in "$@"; do
  name=$(basename "$gz" .sqlite.gz)
  truth=${gz%.sqlite.gz}.truth.json
  db=$tmp/$name.sqlite
  gzip -dc "$gz" > "$db"
  echo "=== $name  gz_bytes=$(stat -c %s "$gz") sqlite_bytes=$(stat -c %s "$db")"
  T() { python3 -c "import json,sys; d=json.load(open('$truth')); print($1)"; }
  fw=$(T "len(d['forwards'])")
  marker=$(T "int(d.get('marker', False))")
  skip=0
  [ "$name" = serve-cb ] && skip=1
  echo "truth: $(T "d['counts']")"
  # windows table w(i, t0, t1): one row per forward
  if [ "$marker" = 1 ]; then
    wsql="CREATE TEMP TABLE m0 AS SELECT r.start AS t, row_number() OVER (ORDER BY r.start) - 1 - $skip AS i
      FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id=r.nameId WHERE s.value LIKE 'cudaMemGetInfo%';
    CREATE TEMP TABLE w AS SELECT i, t AS t0, coalesce(lead(t) OVER (ORDER BY i), 9e18) AS t1 FROM m0 WHERE i >= 0;"
  else
    wsql="CREATE TEMP TABLE d0 AS SELECT r.end AS t, row_number() OVER (ORDER BY r.start) - 1 AS i
      FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId=r.correlationId AND m.copyKind=2;
    CREATE TEMP TABLE w AS SELECT i, coalesce(lag(t) OVER (ORDER BY i), (SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME)) AS t0, t AS t1 FROM d0;"
  fi
  has() { sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name='$1'"; }
  sqlite3 -separator ' ' "$db" > "$tmp/facts" "
$wsql
CREATE TEMP TABLE api AS SELECT r.correlationId AS c, r.start, r.end, s.value AS nm FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id=r.nameId;
CREATE TEMP TABLE kl AS SELECT k.start, k.end, k.graphNodeId AS g, a.start AS ls, a.nm AS api FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN api a ON a.c=k.correlationId;
SELECT 'kernels', (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL), 'graph_node_kernels', (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NOT NULL AND graphNodeId<>0),
  'distinct_names', (SELECT count(DISTINCT demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL);
SELECT 'markers_cudaMemGetInfo', count(*) FROM api WHERE nm LIKE 'cudaMemGetInfo%';
SELECT 'windows', count(*) FROM w;
SELECT 'graph_launches', count(*), 'mean_us', round(avg(end-start)/1000.0, 1), 'max_us', round(max(end-start)/1000.0, 1) FROM api WHERE nm LIKE 'cudaGraphLaunch%' OR nm LIKE 'cuGraphLaunch%';
SELECT 'kernel_launch_calls', count(*) FROM api WHERE nm LIKE 'cudaLaunchKernel%' OR nm LIKE 'cuLaunchKernel%';
SELECT 'memcpy_D2H', sum(copyKind=2), 'memcpy_H2D', sum(copyKind=1), 'memcpy_D2D', sum(copyKind=8) FROM CUPTI_ACTIVITY_KIND_MEMCPY;
SELECT 'kernels_before_first_window', count(*) FROM kl WHERE ls < (SELECT min(t0) FROM w);
SELECT 'kernels_per_window', group_concat(n, ',') FROM (SELECT w.i, count(kl.start) n FROM w LEFT JOIN kl ON kl.ls>=w.t0 AND kl.ls<w.t1 GROUP BY w.i ORDER BY w.i);
SELECT 'graph_launches_per_window', group_concat(n, ',') FROM (SELECT w.i, count(a.start) n FROM w LEFT JOIN api a ON a.start>=w.t0 AND a.start<w.t1 AND (a.nm LIKE 'cudaGraphLaunch%' OR a.nm LIKE 'cuGraphLaunch%') GROUP BY w.i ORDER BY w.i);
SELECT 'D2H_per_window', group_concat(n, ',') FROM (SELECT w.i, count(a.start) n FROM w LEFT JOIN (SELECT a.start FROM api a JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId=a.c AND m.copyKind=2) a ON a.start>=w.t0 AND a.start<w.t1 GROUP BY w.i ORDER BY w.i);
SELECT 'window_ms', group_concat(ms, ',') FROM (SELECT i, round((min(t1, (SELECT max(end) FROM api)) - t0)/1e6, 2) ms FROM w ORDER BY i);
SELECT 'kernels_per_graph_launch', group_concat(n, ',') FROM (SELECT a.c, count(k.start) n FROM api a LEFT JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId=a.c
  WHERE a.nm LIKE 'cudaGraphLaunch%' OR a.nm LIKE 'cuGraphLaunch%' GROUP BY a.c ORDER BY a.start);
WITH g AS (SELECT start, end, lag(end) OVER (ORDER BY start) AS pe FROM CUPTI_ACTIVITY_KIND_KERNEL)
SELECT 'gpu_gaps_over_1ms', count(*), 'sum_ms', round(coalesce(sum(start-pe), 0)/1e6, 2), 'max_ms', round(coalesce(max(start-pe), 0)/1e6, 2) FROM g WHERE start-pe > 1000000;
SELECT 'longest_api_calls_us', group_concat(nm || '=' || us, ',') FROM (SELECT nm, round((end-start)/1000.0) us FROM api ORDER BY end-start DESC LIMIT 5);
SELECT 'module_load_calls', count(*), 'ms', round(coalesce(sum(end-start), 0)/1e6, 2) FROM api WHERE nm LIKE 'cuLibraryLoad%' OR nm LIKE 'cuModuleLoad%';
SELECT 'cuKernelSetAttribute', count(*), 'ms', round(coalesce(sum(end-start), 0)/1e6, 2) FROM api WHERE nm LIKE 'cuKernelSetAttribute%' OR nm LIKE 'cuFuncSetAttribute%';
SELECT 'module_load_calls_per_window', group_concat(n, ',') FROM (SELECT w.i, count(a.start) n FROM w LEFT JOIN api a ON a.start>=w.t0 AND a.start<w.t1 AND (a.nm LIKE 'cuLibraryLoad%' OR a.nm LIKE 'cuModuleLoad%') GROUP BY w.i ORDER BY w.i);
"
  if [ "$(has CUPTI_ACTIVITY_KIND_MEMSET)" = 1 ]; then
    sqlite3 -separator ' ' "$db" "SELECT 'memset', count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET;" >> "$tmp/facts"
  fi
  if [ "$(has OSRT_API)" = 1 ]; then
    sqlite3 -separator ' ' "$db" "SELECT 'osrt_calls_over_100ms', group_concat(s.value || '=' || round((o.end-o.start)/1e6, 1) || 'ms', ',') FROM OSRT_API o JOIN StringIds s ON s.id=o.nameId WHERE o.end-o.start > 100000000;" >> "$tmp/facts"
  fi
  if [ "$(has CUDA_GPU_MEMORY_USAGE_EVENTS)" = 1 ]; then
    sqlite3 -separator ' ' "$db" "SELECT 'cuda_gpu_memory_usage_events', count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS;" >> "$tmp/facts"
  fi
  echo "tables: cublas/cudnn $(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name LIKE '%CUBLAS%' OR name LIKE '%CUDNN%'"), nvtx $(has NVTX_EVENTS), osrt $(has OSRT_API)" >> "$tmp/facts"
  cat "$tmp/facts"
  F() { grep "^$1 " "$tmp/facts" | cut -d' ' -f"${2:-2}"; }
  # ---- checks against the truth ----
  # windows: one per forward, or per host read-back where the loop runs on the device (jax-fori)
  nw=$(T "d.get('host_readbacks', len(d['forwards']))")
  check windows "$nw" "$(F windows)"
  if [ "$marker" = 1 ]; then
    check markers "$((fw + skip))" "$(F markers_cudaMemGetInfo)"
  else
    check D2H=host_readbacks "$nw" "$(F memcpy_D2H)"
  fi
  case $name in
    graph-loop|dense-graph-r*)
      check graph_launches=decode_steps "$(T "d['counts']['decode']")" "$(F graph_launches)"
      check graph_launches_per_window "$(T "','.join(['0']+['1']*d['counts']['decode'])")" "$(F graph_launches_per_window)";;
    jax-step)
      check cuGraphLaunch_per_window "$(T "','.join(['1']*len(d['forwards']))")" "$(F graph_launches_per_window)";;
    serve-batchgrow)
      # the batch grows 2 -> 4 after the second prefill: the decode forwards' kernel count may change there
      echo "batch_by_forward $(T "','.join(str(x) for x in d['batch_by_iteration'])")";;
    slow-step)
      s=$(T "[f['i'] for f in d['forwards'] if f.get('slow')][0]")
      ms=$(F window_ms | cut -d, -f$((s + 1)))
      check "slow_window_over_500ms(window $s: ${ms} ms)" 1 "$(python3 -c "print(int($ms >= 500))")";;
  esac
done
exit $bad
