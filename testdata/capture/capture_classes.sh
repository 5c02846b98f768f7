#!/usr/bin/env bash
# Capture the trace classes of issue 44 (testdata/traces/README.md, "Engine classes of issue 44") on
# the GPU machine: testdata/capture/classes_workload.py under nsys 2025.3.1 (../shared/docs/capturing.md).
#
# Run from the repository root on the device machine (nvidia-h200), with carry [".gpu"]:
#
#   bash testdata/capture/capture_classes.sh [NAME...]      (default: all, in the order below)
#
# NAME -> case of classes_workload.py, nsys options beyond
#   -t cuda,nvtx --sample=none --cpuctxsw=none --wait=primary:
#   engine-two-servers      two-servers      cudaProfilerApi range, node-level graphs, --trace-fork-before-exec=true
#   engine-draft-target     draft-target     the same
#   engine-lifetime         lifetime         NO capture range (the whole process), -t cuda,nvtx,osrt, node-level
#   engine-swap-in          swap-in          cudaProfilerApi range, node-level graphs
#   engine-swap-in-eager    swap-in-eager    the same
#   engine-mixed-eager      mixed-eager      the same
#   engine-mixed-piecewise  mixed-piecewise  the same
#   engine-graph-level      graph-level      cudaProfilerApi range, --cuda-graph-trace=graph
#   engine-graph-level-decode graph-level-decode  the same
#   train-loop              train            cudaProfilerApi range
#   load-weights            load             cudaProfilerApi range
# Each capture runs in its own timeout, failures are logged and the next one runs; the SQLite export
# runs in the background while the next capture runs, then gzip -9 -n. Writes $OUT/captures.tar
# (NAME.sqlite.gz + NAME.truth.json per capture) and $OUT/capture-classes.log.
# DEADLINE (seconds from the start, default 470) stops starting new captures; CAPTURE_LOG names the log
# (default capture-classes).
set -u
OUT=${OUT:-/tmp/capture-out}
mkdir -p "$OUT/stage"
LOG=$OUT/${CAPTURE_LOG:-capture-classes}.log
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=${CAPTURE_TMP:-/tmp/stepstat-classes}
mkdir -p "$TMP"
START=$(date +%s)
DEADLINE=${DEADLINE:-470}

source "$HERE/lib.sh"
nsys_setup /tmp/ns-classes
COMMON="-t cuda,nvtx --sample=none --cpuctxsw=none --wait=primary"
RANGE="--capture-range=cudaProfilerApi --capture-range-end=stop"
WL=$HERE/classes_workload.py

if [ $# -eq 0 ]; then
  set -- engine-two-servers engine-draft-target engine-lifetime engine-swap-in engine-mixed-eager \
    engine-mixed-piecewise engine-graph-level train-loop load-weights engine-swap-in-eager engine-graph-level-decode
fi

{
  echo "# stepstat capture log (engine classes, issue 44)  $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "## git"; git log -1 --format='%H %s' 2>&1
  echo "## nsys --version"; $NSYS --version 2>&1
  echo "## nvidia-smi -L"; nvidia-smi -L 2>&1
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
} > "$LOG"

export_one() {
  local name=$1
  {
    timeout 200 $NSYS export --type sqlite -f true -o "$TMP/$name.sqlite" "$TMP/$name.nsys-rep" > "$TMP/$name.export" 2>&1
    rc=$?
    if [ $rc -ne 0 ] || [ ! -f "$TMP/$name.sqlite" ]; then
      echo "EXPORT FAILED rc=$rc"; tail -20 "$TMP/$name.export"; return 1
    fi
    gzip -9 -n -c "$TMP/$name.sqlite" > "$OUT/stage/$name.sqlite.gz"
    cp "$TMP/$name.truth.json" "$OUT/stage/$name.truth.json"
    echo "sqlite bytes=$(stat -c %s "$TMP/$name.sqlite") gz bytes=$(stat -c %s "$OUT/stage/$name.sqlite.gz")"
  } > "$TMP/$name.log" 2>&1
}

fail=0
names=()
for name in "$@"; do
  el=$(( $(date +%s) - START ))
  if [ $el -gt "$DEADLINE" ]; then echo "## $name: SKIPPED (deadline, ${el}s)" >> "$LOG"; fail=1; continue; fi
  node="--cuda-graph-trace=node"
  case $name in
    engine-two-servers) c=two-servers; flags="$COMMON $node $RANGE --trace-fork-before-exec=true";;
    engine-draft-target) c=draft-target; flags="$COMMON $node $RANGE --trace-fork-before-exec=true";;
    engine-lifetime) c=lifetime; flags="-t cuda,nvtx,osrt --sample=none --cpuctxsw=none --wait=primary $node";;
    engine-graph-level*) c=${name#engine-}; flags="$COMMON --cuda-graph-trace=graph $RANGE";;
    train-loop) c=train; flags="$COMMON $node $RANGE";;
    load-weights) c=load; flags="$COMMON $node $RANGE";;
    engine-*) c=${name#engine-}; flags="$COMMON $node $RANGE";;
    *) echo "## $name: unknown" >> "$LOG"; fail=1; continue;;
  esac
  truth=$TMP/$name.truth.json
  rm -f "$truth" "$TMP/$name.nsys-rep" "$truth".parts.*
  cmd="python3 $WL --case $c --name $name --truth $truth"
  echo "## config $name  (t=${el}s)" >> "$LOG"
  echo "command: nsys profile $flags -f true -o $TMP/$name $cmd" >> "$LOG"
  t0=$(date +%s)
  timeout 120 $NSYS profile $flags -f true -o "$TMP/$name" $cmd > "$TMP/$name.out" 2>&1
  rc=$?
  echo "profile rc=$rc seconds=$(( $(date +%s) - t0 ))" >> "$LOG"
  grep -E '^\{"workload"' "$TMP/$name.out" | cut -c1-1500 | sed 's/^/summary: /' >> "$LOG"
  if [ $rc -ne 0 ] || [ ! -f "$TMP/$name.nsys-rep" ] || [ ! -f "$truth" ]; then
    echo "FAILED; output tail:" >> "$LOG"; grep -v '^{"workload"' "$TMP/$name.out" | tail -40 | cut -c1-400 >> "$LOG"; fail=1; continue
  fi
  grep -v '^{"workload"' "$TMP/$name.out" | grep -iE 'warn|error' | head -5 >> "$LOG"
  export_one "$name" &
  names+=("$name")
done
wait
for name in "${names[@]}"; do
  echo "## export $name" >> "$LOG"; cat "$TMP/$name.log" >> "$LOG"
  if [ -f "$OUT/stage/$name.sqlite.gz" ]; then
    tar -C "$OUT/stage" -rf "$OUT/captures.tar" "$name.sqlite.gz" "$name.truth.json"
  else
    fail=1
  fi
done
rm -rf "$OUT/stage"
# at most 16 MiB a file comes back from the device: split a larger tar
if [ -f "$OUT/captures.tar" ] && [ "$(stat -c %s "$OUT/captures.tar")" -gt 15000000 ]; then
  split -b 15000000 -d "$OUT/captures.tar" "$OUT/captures.tar.part" && rm -f "$OUT/captures.tar"
fi
echo "## done fail=$fail seconds=$(( $(date +%s) - START ))" >> "$LOG"
exit $fail
