#!/usr/bin/env bash
# Measures stepstat against sqlite3 scanning the same kernel columns, on one trace, in one
# run: wall time and peak resident memory of each command, and the ratio of each wall time
# to the scan's. Shared, noisy machines make absolute numbers drift; the ratios hold better.
# REPEAT=N runs N rounds (scan, report JSON, report HTML, diff) and a last scan, and
# reports each command's median wall time and largest peak memory; the ratios are to the
# median of all the scans, which follows the machine's speed over the run.
set -euo pipefail
trace=${1:?usage: bench.sh TRACE}
bin=${STEPSTAT:-bin/stepstat}
repeat=${REPEAT:-1}
command -v sqlite3 >/dev/null || { echo "bench: needs the sqlite3 command (apt-get install sqlite3)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
kernels=$(sqlite3 "$trace" 'SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL')
size=$(stat -c %s "$trace")
cat "$trace" > /dev/null # same page-cache state for every command
measure() { # key, command...
	local key=$1; shift
	/usr/bin/time -f "%e %M" -o "$out/t" "$@" > "$out/stdout" 2> "$out/stderr" || { echo "bench: $key failed:" >&2; cat "$out/stderr" >&2; exit 1; }
	read -r wall rss < "$out/t"
	printf '%s %s %s\n' "$key" "$wall" "$rss" >> "$out/results"
}
# total(), not sum(): sums of timestamps overflow.
scan() {
	measure scan sqlite3 "$trace" 'SELECT count(*), total(start), total(end), total(deviceId), total(streamId), total(demangledName), total(correlationId) FROM CUPTI_ACTIVITY_KIND_KERNEL'
}
for ((r = 0; r < repeat; r++)); do
	scan
	measure json "$bin" report --format json -o "$out/r.json" "$trace"
	measure json1 env GOMAXPROCS=1 "$bin" report --format json -o "$out/r1.json" "$trace"
	measure jsonsql env STEPSTAT_READER=sqlite "$bin" report --format json -o "$out/rs.json" "$trace"
	measure classify "$bin" classify -o "$out/c.txt" "$trace"
	measure html "$bin" report --format html -o "$out/r.html" "$trace"
	measure diff "$bin" diff "$trace" "$trace"
done
scan
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
wall() { awk -v k="$1" '$1 == k {print $2}' "$out/results" | median; }
rss() { awk -v k="$1" '$1 == k {print $3}' "$out/results" | sort -n | tail -1; }
base=$(wall scan)
printf 'trace: %s (%d kernels, %.2f GB), %d cores, %d round(s)\n' "$trace" "$kernels" "$(echo "$size/1000000000" | bc -l)" "$(nproc)" "$repeat"
printf '%-72s %9s %10s %8s %12s\n' command wall_s peak_MB ratio bytes/kernel
for key in scan json json1 jsonsql classify html diff; do
	case $key in
	scan) name="sqlite3 scan (start,end,deviceId,streamId,demangledName,correlationId)" ;;
	json) name="stepstat report --format json" ;;
	json1) name="stepstat report --format json, GOMAXPROCS=1" ;;
	jsonsql) name="stepstat report --format json, STEPSTAT_READER=sqlite" ;;
	classify) name="stepstat classify" ;;
	html) name="stepstat report --format html" ;;
	diff) name="stepstat diff (trace vs itself)" ;;
	esac
	w=$(wall $key) m=$(rss $key)
	ratio=$(awk -v w="$w" -v b="$base" 'BEGIN { if (b > 0) printf "%.2fx", w / b; else print "-" }')
	printf '%-72s %9.2f %10.0f %8s %12.1f\n' "$name" "$w" "$(echo "$m/1024" | bc -l)" "$ratio" "$(echo "$m*1024/$kernels" | bc -l)"
done
cmp -s "$out/r.json" "$out/rs.json" && cmp -s "$out/r.json" "$out/r1.json" && echo "report JSON identical: direct reader, SQLite, GOMAXPROCS=1" || echo "report JSON DIFFERS between the direct reader, SQLite and GOMAXPROCS=1"
awk -v a="$(wall json)" -v b="$(wall json1)" 'BEGIN { printf "GOMAXPROCS=%d vs 1: %.2fx\n", '"$(nproc)"', a / b }'
