#!/usr/bin/env bash
# Capture Nsight Systems SQLite exports of testdata/capture/hf_workload.py (transformers'
# own generate() and hand-written decode loops over transformers models) on the GPU machine.
#
# Run from the repository root on the device machine (nvidia-h200-x2 for the tp2 config),
# with carry [".gpu"] (libdw.so.1 and libelf.so.1 in .gpu/lib, see ../shared/docs/capturing.md):
#
#   bash testdata/capture/capture_hf.sh GPU CONFIG...
#
# GPU is the CUDA device for single-GPU configs (two lists can run at once on two GPUs).
# CONFIG (file name = config name):
#   hf-qwen3moe-eager        generate(), dynamic cache, eager
#   hf-glm5-eager            the same on GLM-5's architecture (glm_moe_dsa)
#   hf-qwen3moe-autograd     as hf-qwen3moe-eager, nsys --pytorch=autograd-nvtx, 8 tokens
#   hf-qwen3moe-compile      static cache + torch.compile(mode="reduce-overhead")
#   hf-glm5-compile          the same on glm_moe_dsa
#   hf-qwen3moe-compile-graphlevel   as hf-qwen3moe-compile, nsys' default --cuda-graph-trace=graph
#   hf-dsv3-eager            generate() on DeepSeek-V3's architecture (MLA, group-limited routing)
#   hf-mixtral-eager         generate() on Mixtral with transformers' eager experts (a loop over experts)
#   loop-h2d                 decode loop: H2D token copy -> forward -> D2H read-back
#   loop-2sync               decode loop: .item() sync -> forward -> D2H read-back
#   hf-qwen3moe-tp2          generate() under torchrun, tp_plan="auto" on 2 GPUs, NCCL_PROTO=Simple
# Writes $OUT/CONFIG.sqlite.gz (gzip -9 -n) and $OUT/capture-hf-GPU.log.
set -u
OUT=${OUT:-/tmp/capture-out}
mkdir -p "$OUT"
GPU=$1; shift
LOG=$OUT/capture-hf-$GPU.log
REPO=$PWD
WL=$REPO/testdata/capture/hf_workload.py
TMP=${CAPTURE_TMP:-/tmp/stepstat-capture-$GPU}
mkdir -p "$TMP"

source "$REPO/testdata/capture/lib.sh"
nsys_setup /tmp/ns-$GPU
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
BASE="-t cuda,nvtx --sample=none --cpuctxsw=none --capture-range=cudaProfilerApi --wait=primary"

{
  echo "# stepstat capture log (hf workloads, GPU list $GPU)  $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "## nsys --version"; $NSYS --version 2>&1
  echo "## nvidia-smi -L"; nvidia-smi -L 2>&1
  echo "## python / torch / transformers / NCCL"
  python3 -c 'import sys, torch, transformers; v = torch.cuda.nccl.version(); print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, v)) if isinstance(v, tuple) else v, "transformers", transformers.__version__)' 2>&1
} > "$LOG"

fail=0
for cfg in "$@"; do
  flags="$BASE --cuda-graph-trace=node --capture-range-end=stop"
  envs="CUDA_VISIBLE_DEVICES=$GPU"
  launcher="python3"
  case $cfg in
    hf-qwen3moe-eager) args="--family qwen3_moe";;
    hf-glm5-eager) args="--family glm_moe_dsa";;
    hf-qwen3moe-autograd) args="--family qwen3_moe --new-tokens 8"; flags="$flags --pytorch=autograd-nvtx";;
    hf-qwen3moe-compile) args="--family qwen3_moe --compile";;
    hf-glm5-compile) args="--family glm_moe_dsa --compile";;
    hf-qwen3moe-compile-graphlevel) args="--family qwen3_moe --compile"; flags="$BASE --capture-range-end=stop";;
    hf-mixtral-eager) args="--family mixtral --experts-impl eager";;
    hf-dsv3-eager) args="--family deepseek_v3";;
    loop-h2d) args="--family qwen3_moe --loop h2d";;
    loop-2sync) args="--family qwen3_moe --loop 2sync";;
    hf-qwen3moe-tp2)
      CUDA_VISIBLE_DEVICES=0 timeout 120 python3 "$WL" --family qwen3_moe --save "$TMP/qwen3moe" >> "$LOG" 2>&1
      args="--load $TMP/qwen3moe"; envs="NCCL_PROTO=Simple"
      launcher="torchrun --nproc-per-node 2 --master-port 29533"
      flags="$BASE --cuda-graph-trace=node --capture-range-end=none";;
    *) echo "## $cfg: unknown config" >> "$LOG"; fail=1; continue;;
  esac
  echo "## config $cfg" >> "$LOG"
  echo "command: env $envs $NSYS profile $flags -f true -o $TMP/$cfg $launcher testdata/capture/hf_workload.py $args" >> "$LOG"
  t0=$(date +%s)
  env $envs timeout 300 $NSYS profile $flags -f true -o "$TMP/$cfg" $launcher "$WL" $args > "$TMP/$cfg.out" 2>&1
  rc=$?
  echo "profile rc=$rc seconds=$(( $(date +%s) - t0 ))" >> "$LOG"
  grep '^{"workload"' "$TMP/$cfg.out" | sed 's/^/summary: /' >> "$LOG"
  if [ ! -f "$TMP/$cfg.nsys-rep" ]; then
    echo "FAILED; output tail:" >> "$LOG"; tail -40 "$TMP/$cfg.out" >> "$LOG"; fail=1; continue
  fi
  export_capture "$cfg" || fail=1
done
echo "## done fail=$fail" >> "$LOG"
exit $fail
