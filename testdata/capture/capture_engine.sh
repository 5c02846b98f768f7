#!/usr/bin/env bash
# Capture the engine-loop traces of issue 30 (testdata/traces/README.md, "Engine loops") on the GPU
# machine: testdata/capture/engine_workload.py under nsys 2025.3.1 (../shared/docs/capturing.md).
#
# Run from the repository root on the device machine (nvidia-h200), with carry [".gpu"]:
#
#   bash testdata/capture/capture_engine.sh CONFIG...      (default: all, in the order below)
#
# CONFIG = engine-CASE, CASE one of engine_workload.py's cases:
#   eager-cb graph-buckets lazy-capture window bench repeat disagg-prefill disagg-decode
#   nvtx-vllm nvtx-vllm-detailed nvtx-sglang piecewise eagle
# Each capture: $NSYS profile -t cuda,nvtx $BASE python3 engine_workload.py --case CASE, then the
# SQLite export (in the background, while the next capture runs), gzip -9 -n. Writes
# $OUT/captures.tar (NAME.sqlite.gz + NAME.truth.json per capture) and $OUT/capture-engine.log.
# DEADLINE (seconds from the start, default 520) stops starting new captures.
set -u
OUT=${OUT:-/tmp/capture-out}
mkdir -p "$OUT/stage"
LOG=$OUT/capture-engine.log
REPO=$PWD
TMP=${CAPTURE_TMP:-/tmp/stepstat-engine}
mkdir -p "$TMP"
START=$(date +%s)
DEADLINE=${DEADLINE:-520}

source "$REPO/testdata/capture/lib.sh"
nsys_setup /tmp/ns-engine
BASE="--sample=none --cpuctxsw=none --cuda-graph-trace=node --capture-range=cudaProfilerApi --capture-range-end=stop --wait=primary"
EW=testdata/capture/engine_workload.py

if [ $# -eq 0 ]; then
  set -- engine-eager-cb engine-graph-buckets engine-lazy-capture engine-window engine-bench engine-repeat \
    engine-disagg-prefill engine-disagg-decode engine-nvtx-vllm engine-nvtx-vllm-detailed \
    engine-nvtx-sglang engine-piecewise engine-eagle
fi

{
  echo "# stepstat capture log (engine loops, issue 30)  $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "## git"; git log -1 --format='%H %s' 2>&1
  echo "## nsys --version"; $NSYS --version 2>&1
  echo "## nvidia-smi -L"; nvidia-smi -L 2>&1
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
} > "$LOG"

# export NAME: the SQLite export and gzip of one capture, its log lines into $TMP/NAME.log
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
for cfg in "$@"; do
  el=$(( $(date +%s) - START ))
  if [ $el -gt "$DEADLINE" ]; then echo "## $cfg: SKIPPED (deadline, ${el}s)" >> "$LOG"; fail=1; continue; fi
  name=$cfg
  case=${cfg#engine-}
  truth=$TMP/$name.truth.json
  rm -f "$truth" "$TMP/$name.nsys-rep"
  flags="-t cuda,nvtx $BASE"
  cmd="python3 $EW --case $case --name $name --truth $truth"
  echo "## config $cfg  (t=${el}s)" >> "$LOG"
  echo "command: nsys profile $flags -f true -o $TMP/$name $cmd" >> "$LOG"
  t0=$(date +%s)
  timeout 150 $NSYS profile $flags -f true -o "$TMP/$name" $cmd > "$TMP/$name.out" 2>&1
  rc=$?
  echo "profile rc=$rc seconds=$(( $(date +%s) - t0 ))" >> "$LOG"
  grep -E '^\{"workload"' "$TMP/$name.out" | cut -c1-1500 | sed 's/^/summary: /' >> "$LOG"
  if [ $rc -ne 0 ] || [ ! -f "$TMP/$name.nsys-rep" ] || [ ! -f "$truth" ]; then
    echo "FAILED; output tail:" >> "$LOG"; grep -v '^{"workload"' "$TMP/$name.out" | tail -30 | cut -c1-400 >> "$LOG"; fail=1; continue
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
echo "## done fail=$fail seconds=$(( $(date +%s) - START ))" >> "$LOG"
exit $fail
