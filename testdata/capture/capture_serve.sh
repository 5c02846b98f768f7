#!/usr/bin/env bash
# Capture the serving-situation traces (issues 21, 22, 23; testdata/traces/README.md, "Serving
# situations") on the GPU machine: testdata/capture/serve_workload.py, jax_workload.py and
# workload.py under nsys 2025.3.1 (../shared/docs/capturing.md).
#
# Run from the repository root on the device machine (nvidia-h200), with carry [".gpu"]:
#
#   bash testdata/capture/capture_serve.sh CONFIG...      (default: all, in the order below)
#
# CONFIG (file name = config name; runs/* go to a runs/ folder):
#   serve-multireq     3 generate() calls back to back, llama, eager, 0.2 s host pause between
#   serve-cb           transformers continuous batching (qwen2, paged|sdpa, chunked prefill,
#                      requests added while others decode), eager
#   serve-assisted     generate(assistant_model=1-layer phi3 draft, num_assistant_tokens=4), phi3
#   serve-lookup       generate(prompt_lookup_num_tokens=4) on a self-repeating prompt, olmo2
#   serve-batchgrow    hand decode loop over model(...) (granite), batch 2 then 4; --cuda-memory-usage=true
#   hf-moe-eager       generate() on OLMoE (olmoe), eager
#   sdpa-cudnn-eager   own eager loop, cuDNN SDPA, KV length growing per step; -t cuda,nvtx,osrt,cublas,cudnn
#   slow-step          workload.py's model, eager, one decode step with a 0.5 s host sleep; -t cuda,nvtx,osrt
#   graph-loop         workload.py --mode graph, 40 layers (a ~600-node graph), batch 1, 40 steps
#   jax-step           jax_workload.py --loop step
#   jax-fori           jax_workload.py --loop fori
#   runs/dense-eager-rN, runs/dense-graph-rN (N=1..4)   workload.py dense eager / graph, capture.sh's flags
# Writes $OUT/stage/NAME.sqlite.gz (gzip -9 -n) and NAME.truth.json, appends both to
# $OUT/captures.tar after each capture, logs to $OUT/capture-serve.log. DEADLINE (seconds from
# the start, default 540) stops starting new captures.
set -u
OUT=${OUT:-/tmp/capture-out}
mkdir -p "$OUT/stage/runs" "$OUT/runs"
LOG=$OUT/capture-serve.log
REPO=$PWD
TMP=${CAPTURE_TMP:-/tmp/stepstat-serve}
mkdir -p "$TMP/runs"
START=$(date +%s)
DEADLINE=${DEADLINE:-540}

source "$REPO/testdata/capture/lib.sh"
nsys_setup /tmp/ns-serve
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false XLA_PYTHON_CLIENT_PREALLOCATE=false
BASE="--sample=none --cpuctxsw=none --cuda-graph-trace=node --capture-range=cudaProfilerApi --capture-range-end=stop --wait=primary"
SW=testdata/capture/serve_workload.py

if [ $# -eq 0 ]; then
  set -- serve-multireq serve-cb serve-assisted serve-lookup serve-batchgrow hf-moe-eager \
    sdpa-cudnn-eager slow-step graph-loop jax-step jax-fori \
    runs/dense-eager-r1 runs/dense-graph-r1 runs/dense-eager-r2 runs/dense-graph-r2 \
    runs/dense-eager-r3 runs/dense-graph-r3 runs/dense-eager-r4 runs/dense-graph-r4
fi

{
  echo "# stepstat capture log (serving situations)  $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "## nsys --version"; $NSYS --version 2>&1
  echo "## nvidia-smi -L"; nvidia-smi -L 2>&1
  python3 -c 'import sys, torch, transformers; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "transformers", transformers.__version__)' 2>&1
  python3 -c 'import jax; print("jax", jax.__version__)' 2>&1 | tail -1
} > "$LOG"

fail=0
for cfg in "$@"; do
  el=$(( $(date +%s) - START ))
  if [ $el -gt "$DEADLINE" ]; then echo "## $cfg: SKIPPED (deadline, ${el}s)" >> "$LOG"; fail=1; continue; fi
  tr="-t cuda,nvtx"; extra=""; to=150; wl=""
  name=$cfg
  truth=$TMP/$name.truth.json
  rm -f "$truth"
  case $cfg in
    serve-multireq) cmd="python3 $SW --case multireq --family llama";;
    serve-cb) cmd="python3 $SW --case cb --family qwen2";;
    serve-assisted) cmd="python3 $SW --case assisted --family phi3 --new-tokens 24 --prompt-len 96";;
    serve-lookup) cmd="python3 $SW --case lookup --family olmo2 --new-tokens 24 --prompt-len 160";;
    serve-batchgrow) cmd="python3 $SW --case batchgrow --family granite --steps 24"; extra="--cuda-memory-usage=true";;
    hf-moe-eager) cmd="python3 $SW --case generate --family olmoe --new-tokens 16 --prompt-len 128";;
    sdpa-cudnn-eager) cmd="python3 $SW --case cudnn --steps 24 --prompt-len 128"; tr="-t cuda,nvtx,osrt,cublas,cudnn";;
    slow-step) cmd="python3 $SW --case slowstep --steps 16"; tr="-t cuda,nvtx,osrt";;
    graph-loop) cmd="python3 $SW --case wl"
      wl="--mode graph --mlp dense --layers 40 --hidden 512 --ffn 1024 --heads 8 --steps 40 --batch 1 --prefill-len 64 --max-seq 160";;
    jax-step) cmd="python3 testdata/capture/jax_workload.py --loop step";;
    jax-fori) cmd="python3 testdata/capture/jax_workload.py --loop fori";;
    runs/dense-eager-r*) cmd="python3 $SW --case wl"; wl="--mode eager --mlp dense --tp 1"; to=90;;
    runs/dense-graph-r*) cmd="python3 $SW --case wl"; wl="--mode graph --mlp dense --tp 1"; to=90;;
    *) echo "## $cfg: unknown config" >> "$LOG"; fail=1; continue;;
  esac
  flags="$tr $BASE $extra"
  echo "## config $cfg  (t=${el}s)" >> "$LOG"
  echo "command: $NSYS profile $flags -f true -o $TMP/$name $cmd --name $name --truth $truth ${wl:+--wl-args=\"$wl\"}" >> "$LOG"
  t0=$(date +%s)
  if [ -n "$wl" ]; then
    timeout $to $NSYS profile $flags -f true -o "$TMP/$name" $cmd --name "$name" --truth "$truth" --wl-args="$wl" > "$TMP/$name.out" 2>&1
  else
    timeout $to $NSYS profile $flags -f true -o "$TMP/$name" $cmd --name "$name" --truth "$truth" > "$TMP/$name.out" 2>&1
  fi
  rc=$?
  echo "profile rc=$rc seconds=$(( $(date +%s) - t0 ))" >> "$LOG"
  grep -E '^\{"workload"' "$TMP/$name.out" | cut -c1-1500 | sed 's/^/summary: /' >> "$LOG"
  grep -E '^\[serve_workload\]' "$TMP/$name.out" | head -20 >> "$LOG"
  if [ $rc -ne 0 ] || [ ! -f "$TMP/$name.nsys-rep" ] || [ ! -f "$truth" ]; then
    echo "FAILED; output tail:" >> "$LOG"; grep -v '^{"workload"' "$TMP/$name.out" | tail -40 | cut -c1-400 >> "$LOG"; fail=1; continue
  fi
  if export_capture "$name"; then
    mv "$OUT/$name.sqlite.gz" "$OUT/stage/$name.sqlite.gz"
    cp "$truth" "$OUT/stage/$name.truth.json"
    tar -C "$OUT/stage" -rf "$OUT/captures.tar" "$name.sqlite.gz" "$name.truth.json"
    rm -f "$OUT/stage/$name.sqlite.gz" "$OUT/stage/$name.truth.json"
  else
    fail=1
  fi
done
rm -rf "$OUT/stage" "$OUT/runs"
echo "## done fail=$fail seconds=$(( $(date +%s) - START ))" >> "$LOG"
exit $fail
