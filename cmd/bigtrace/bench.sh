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
# Without the sqlite3 command, Python's sqlite3 module runs the same query (the scan is
# SQLite's either way); without /usr/bin/time, Python measures the wall time and the
# child's peak memory (ru_maxrss).
if command -v sqlite3 >/dev/null; then
	sql=(sqlite3)
elif command -v python3 >/dev/null; then
	sql=(python3 -c 'import sqlite3, sys; print("|".join(map(str, sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone())))')
else
	echo "bench: needs the sqlite3 command (apt-get install sqlite3) or python3" >&2
	exit 1
fi
if [ -x /usr/bin/time ]; then
	timed() { local o=$1; shift; /usr/bin/time -f "%e %M" -o "$o" "$@"; }
elif command -v python3 >/dev/null; then
	timed() {
		python3 -c 'import resource, subprocess, sys, time
t = time.time(); rc = subprocess.call(sys.argv[2:]); w = time.time() - t
open(sys.argv[1], "w").write("%.2f %d\n" % (w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(rc)' "$@"
	}
else
	echo "bench: needs /usr/bin/time (apt-get install time) or python3" >&2
	exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
kernels=$("${sql[@]}" "$trace" 'SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL')
size=$(stat -c %s "$trace")
cat "$trace" > /dev/null # same page-cache state for every command
measure() { # key, command...
	local key=$1; shift
	timed "$out/t" "$@" > "$out/stdout" 2> "$out/stderr" || { echo "bench: $key failed:" >&2; cat "$out/stderr" >&2; exit 1; }
	read -r wall rss < "$out/t"
	printf '%s %s %s\n' "$key" "$wall" "$rss" >> "$out/results"
	printf 'bench: %s %ss %sKB\n' "$key" "$wall" "$rss" >&2 # as it goes: a run cut short keeps these
}
# total(), not sum(): sums of timestamps overflow.
scan() {
	measure scan "${sql[@]}" "$trace" 'SELECT count(*), total(start), total(end), total(deviceId), total(streamId), total(demangledName), total(correlationId) FROM CUPTI_ACTIVITY_KIND_KERNEL'
}
# KEYS picks the commands (all by default); the scan always runs.
keys=${KEYS:-json json2 json1 jsonsql classify html diff}
want() { [[ " $keys " == *" $1 "* ]]; }
for ((r = 0; r < repeat; r++)); do
	scan
	want json && measure json "$bin" report --format json -o "$out/r.json" "$trace"
	want json2 && measure json2 env GOMAXPROCS=2 "$bin" report --format json -o "$out/r2.json" "$trace"
	want json1 && measure json1 env GOMAXPROCS=1 "$bin" report --format json -o "$out/r1.json" "$trace"
	want jsonsql && measure jsonsql env STEPSTAT_READER=sqlite "$bin" report --format json -o "$out/rs.json" "$trace"
	want classify && measure classify "$bin" classify -o "$out/c.txt" "$trace"
	want html && measure html "$bin" report --format html -o "$out/r.html" "$trace"
	want diff && measure diff "$bin" diff "$trace" "$trace"
done
scan
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
wall() { awk -v k="$1" '$1 == k {print $2}' "$out/results" | median; }
rss() { awk -v k="$1" '$1 == k {print $3}' "$out/results" | sort -n | tail -1; }
base=$(wall scan)
printf 'trace: %s (%d kernels, %.2f GB), %d cores, %d round(s)\n' "$trace" "$kernels" "$(awk -v s="$size" 'BEGIN { print s / 1e9 }')" "$(nproc)" "$repeat"
printf '%-72s %9s %10s %8s %12s\n' command wall_s peak_MB ratio bytes/kernel
for key in scan $keys; do
	case $key in
	scan) name="sqlite3 scan (start,end,deviceId,streamId,demangledName,correlationId)" ;;
	json) name="stepstat report --format json, GOMAXPROCS=$(nproc) (all cores)" ;;
	json2) name="stepstat report --format json, GOMAXPROCS=2" ;;
	json1) name="stepstat report --format json, GOMAXPROCS=1" ;;
	jsonsql) name="stepstat report --format json, STEPSTAT_READER=sqlite" ;;
	classify) name="stepstat classify" ;;
	html) name="stepstat report --format html" ;;
	diff) name="stepstat diff (trace vs itself)" ;;
	esac
	w=$(wall $key) m=$(rss $key)
	ratio=$(awk -v w="$w" -v b="$base" 'BEGIN { if (b > 0) printf "%.2fx", w / b; else print "-" }')
	printf '%-72s %9.2f %10.0f %8s %12.1f\n' "$name" "$w" "$(awk -v m="$m" 'BEGIN { print m / 1024 }')" "$ratio" "$(awk -v m="$m" -v k="$kernels" 'BEGIN { print m * 1024 / k }')"
done
same=$(cd "$out" && { ls r.json r2.json r1.json rs.json 2>/dev/null || true; } | tr '\n' ' ')
set -- $same
ok=yes
for f in "$@"; do cmp -s "$out/$1" "$out/$f" || ok=no; done
echo "report JSON identical across $same: $ok"
if want json1; then
	want json2 && awk -v a="$(wall json2)" -v b="$(wall json1)" 'BEGIN { printf "GOMAXPROCS=2 vs 1: %.2fx\n", a / b }'
	want json && awk -v a="$(wall json)" -v b="$(wall json1)" 'BEGIN { printf "GOMAXPROCS=%d vs 1: %.2fx\n", '"$(nproc)"', a / b }'
fi
