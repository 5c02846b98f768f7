#!/usr/bin/env bash
# Capture Nsight Systems SQLite exports of testdata/capture/workload.py on the GPU machine.
#
# Run from the repository root on the device machine, with carry [".gpu"] (libdw.so.1 and
# libelf.so.1 in .gpu/lib, see ../shared/docs/capturing.md):
#
#   bash testdata/capture/capture.sh [CONFIG...]
#
# CONFIG is [tp2-]{dense|moe}-{eager|graph}[-nvtx][-serve], e.g. dense-eager-nvtx, moe-graph,
# tp2-moe-eager-nvtx, moe-graph-nvtx-serve (-serve: workload.py --serve-order). Default: the six single-GPU configs
#   dense-eager-nvtx dense-eager dense-graph-nvtx dense-graph moe-eager-nvtx moe-graph
# Writes $OUT/CONFIG.sqlite.gz (gzip -9 -n) and $OUT/capture.log.
# Extra workload flags can be given in WORKLOAD_ARGS (default: none; workload defaults are
# 4 layers, 12 decode steps, batch 4, 256-token prefill).
set -u
OUT=${OUT:-/tmp/capture-out}
mkdir -p "$OUT"
LOG=$OUT/capture.log
REPO=$PWD
WL=$REPO/testdata/capture/workload.py
TMP=${CAPTURE_TMP:-/tmp/stepstat-capture}
mkdir -p "$TMP"

if [ $# -eq 0 ]; then
  set -- dense-eager-nvtx dense-eager dense-graph-nvtx dense-graph moe-eager-nvtx moe-graph
fi

source "$REPO/testdata/capture/lib.sh"
nsys_setup /tmp/ns
NSYS_FLAGS="-t cuda,nvtx --sample=none --cpuctxsw=none --cuda-graph-trace=node --capture-range=cudaProfilerApi --capture-range-end=stop --wait=primary"
# Several ranks in eager mode: the first cudaProfilerStop would end the capture for every
# process while another rank's last activity is still buffered (it was lost); record until
# the processes exit instead (the workload exits cleanly then).

{
  echo "# stepstat capture log  $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "## nsys --version"; $NSYS --version 2>&1
  echo "## nvidia-smi -L"; nvidia-smi -L 2>&1
  echo "## driver"; nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1
  echo "## python / torch / CUDA / NCCL"
  python3 -c 'import sys, torch; v = torch.cuda.nccl.version(); print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, v)) if isinstance(v, tuple) else v, "gpus", torch.cuda.device_count())' 2>&1
  echo "## nsys flags: $NSYS_FLAGS"
} > "$LOG"

fail=0
for cfg in "$@"; do
  tp=1; rest=$cfg
  case $rest in tp2-*) tp=2; rest=${rest#tp2-};; esac
  serve=""
  case $rest in *-serve) serve="--serve-order"; rest=${rest%-serve};; esac
  nvtx=""
  case $rest in *-nvtx) nvtx="--nvtx"; rest=${rest%-nvtx};; esac
  mlp=${rest%%-*}; mode=${rest#*-}
  case "$mlp/$mode" in dense/eager|dense/graph|moe/eager|moe/graph) ;; *)
    echo "## $cfg: bad config name" >> "$LOG"; fail=1; continue;; esac
  args="--mode $mode --mlp $mlp --tp $tp $nvtx $serve ${WORKLOAD_ARGS:-}"
  flags=$NSYS_FLAGS
  if [ "$tp" -gt 1 ] && { [ "$mode" = eager ] || [ -n "$serve" ]; }; then
    # --serve-order at tp 2: the first rank's stop ended the capture before the other
    # rank's activity was flushed (tp2-moe-graph-serve-truncated); record to the exit.
    flags=${flags/--capture-range-end=stop/--capture-range-end=none}
  fi
  cmd="$NSYS profile $flags -f true -o $TMP/$cfg python3 testdata/capture/workload.py $args"
  echo "## config $cfg" >> "$LOG"
  echo "command: $cmd" >> "$LOG"
  t0=$(date +%s)
  timeout 240 $NSYS profile $flags -f true -o "$TMP/$cfg" python3 "$WL" $args > "$TMP/$cfg.out" 2>&1
  rc=$?
  echo "profile rc=$rc seconds=$(( $(date +%s) - t0 ))" >> "$LOG"
  echo "summary: $(grep -m1 '^{"workload"' "$TMP/$cfg.out")" >> "$LOG"
  if [ $rc -ne 0 ] || [ ! -f "$TMP/$cfg.nsys-rep" ]; then
    echo "FAILED; output tail:" >> "$LOG"; tail -40 "$TMP/$cfg.out" >> "$LOG"; fail=1; continue
  fi
  export_capture "$cfg" || fail=1
done
echo "## done fail=$fail total gz bytes=$(cat "$OUT"/*.sqlite.gz 2>/dev/null | wc -c)" >> "$LOG"
cat "$LOG"
exit $fail
