#!/usr/bin/env bash
# sameoutput.sh: check that two stepstat binaries write the same bytes.
#
#   testdata/sameoutput.sh BEFORE AFTER [OUTDIR]
#
# Runs report (text, -f json, -f csv, --html, and with --phase all / --sol-step / --batch),
# classify (text, json), info (text, json) over every testdata/traces/*.sqlite.gz (gunzipped
# to a temporary folder) and every public trace of the test corpus ($STEPSTAT_CORPUS, else
# ../shared beside the repository: traces/public/*.sqlite; skipped when absent),
# and diff (text, json, html; per step and --unit run) over pairs of captures including the
# 2-GPU eager vs graph pair, with each binary; stdout, stderr and the exit status of every
# run, and every written HTML file, are compared byte for byte. Exit 0 when all match;
# otherwise the differing files are listed and the exit status is 1.
set -u
before=$(realpath "$1"); after=$(realpath "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
out=${3:-$(mktemp -d /tmp/sameoutput.XXXXXX)}
traces=$out/traces
mkdir -p "$traces"
for gz in "$root"/testdata/traces/*.sqlite.gz; do
	n=$(basename "$gz" .gz)
	[ -f "$traces/$n" ] || gunzip -c "$gz" >"$traces/$n"
done
inputs=("$traces"/*.sqlite)
pub=${STEPSTAT_CORPUS:-$root/../shared}/traces/public
[ -d "$pub" ] && inputs+=("$pub"/*.sqlite)

# run BIN DIR NAME ARGS...: one command; its stdout, stderr and status under DIR/NAME.
run() {
	local bin=$1 dir=$2 name=$3
	shift 3
	(cd "$dir" && "$bin" "$@" >"$name.out" 2>"$name.err"; echo $? >"$name.rc")
}

side() {
	local bin=$1 dir=$2
	mkdir -p "$dir"
	for t in "${inputs[@]}"; do
		n=$(basename "$t" .sqlite)
		run "$bin" "$dir" "$n.report" report "$t"
		run "$bin" "$dir" "$n.report-json" report -f json "$t"
		run "$bin" "$dir" "$n.report-csv" report -f csv "$t"
		run "$bin" "$dir" "$n.report-html" report --top 3 --html "$n.report.html" "$t"
		run "$bin" "$dir" "$n.report-all" report --phase all -f json "$t"
		run "$bin" "$dir" "$n.report-sol" report --sol-step 1ms --batch 8 "$t"
		run "$bin" "$dir" "$n.report-sol-json" report --sol-step 1ms --batch 8 -f json "$t"
		run "$bin" "$dir" "$n.classify" classify "$t"
		run "$bin" "$dir" "$n.classify-json" classify -f json "$t"
		run "$bin" "$dir" "$n.info" info "$t"
		run "$bin" "$dir" "$n.info-json" info -f json "$t"
	done
	local T=$traces
	local pairs=(
		"$T/dense-eager.sqlite $T/dense-graph.sqlite"
		"$T/dense-eager-nvtx.sqlite $T/dense-graph-nvtx.sqlite"
		"$T/moe-eager-nvtx.sqlite $T/moe-graph-nvtx-serve.sqlite"
		"$T/tp2-moe-eager.sqlite $T/tp2-moe-graph.sqlite"
		"$T/tp2-moe-eager-nvtx.sqlite $T/tp2-moe-graph-nvtx.sqlite"
		"$T/hf-qwen3moe-eager.sqlite $T/hf-qwen3moe-compile.sqlite"
		"$T/moe-graph.sqlite $T/tp2-moe-graph-serve.sqlite"
	)
	[ -d "$pub" ] && pairs+=("$pub/nsys-ai__mfu_2gpu_before.sqlite $pub/nsys-ai__mfu_2gpu_after.sqlite")
	local i=0
	for p in "${pairs[@]}"; do
		set -- $p
		i=$((i + 1))
		run "$bin" "$dir" "diff$i" diff "$1" "$2"
		run "$bin" "$dir" "diff$i-json" diff -f json "$1" "$2"
		run "$bin" "$dir" "diff$i-html" diff --min-change 1% --html "diff$i.html" "$1" "$2"
	done
	run "$bin" "$dir" diff-runs diff --unit run "eager=$T/dense-eager.sqlite,$T/dense-eager-nvtx.sqlite" "graph=$T/dense-graph.sqlite,$T/dense-graph-nvtx.sqlite"
	run "$bin" "$dir" diff-runs-json diff -f json --unit run "eager=$T/dense-eager.sqlite,$T/dense-eager-nvtx.sqlite" "graph=$T/dense-graph.sqlite,$T/dense-graph-nvtx.sqlite"
}

side "$before" "$out/before" &
side "$after" "$out/after" &
wait
n=$(ls "$out/before" | wc -l)
if diff -rq "$out/before" "$out/after"; then
	echo "sameoutput: $n files identical ($out)"
	exit 0
fi
echo "sameoutput: outputs differ ($out)"
exit 1
