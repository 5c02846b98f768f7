#!/usr/bin/env bash
# Measures stepstat against sqlite3 scanning the same kernel columns, on one trace, in one
# run: wall time and peak resident memory of each command, and the ratio of each wall time
# to the scan's. Shared, noisy machines make absolute numbers drift; the ratios hold better.
set -euo pipefail
trace=${1:?usage: bench.sh TRACE}
bin=${STEPSTAT:-bin/stepstat}
command -v sqlite3 >/dev/null || { echo "bench: needs the sqlite3 command (apt-get install sqlite3)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
kernels=$(sqlite3 "$trace" 'SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL')
size=$(stat -c %s "$trace")
cat "$trace" > /dev/null # same page-cache state for every command
measure() { # name, command...
	local name=$1; shift
	/usr/bin/time -f "%e %M" -o "$out/t" "$@" > "$out/stdout" 2> "$out/stderr" || { echo "bench: $name failed:" >&2; cat "$out/stderr" >&2; exit 1; }
	read -r wall rss < "$out/t"
	printf '%s %s %s\n' "$name" "$wall" "$rss"
}
# The scan runs first and last: the ratios are to the mean of the two, which follows the
# machine's speed over the run (total(), not sum(): sums of timestamps overflow).
scan() {
	measure "sqlite3 scan (start,end,deviceId,streamId,demangledName,correlationId)" \
		sqlite3 "$trace" 'SELECT count(*), total(start), total(end), total(deviceId), total(streamId), total(demangledName), total(correlationId) FROM CUPTI_ACTIVITY_KIND_KERNEL'
}
{
	scan
	measure "stepstat report --format json" "$bin" report --format json -o "$out/r.json" "$trace"
	measure "stepstat report --format html" "$bin" report --format html -o "$out/r.html" "$trace"
	measure "stepstat diff (trace vs itself)" "$bin" diff "$trace" "$trace"
	scan
} > "$out/results"
printf 'trace: %s (%d kernels, %.2f GB), %d cores\n' "$trace" "$kernels" "$(echo "$size/1000000000" | bc -l)" "$(nproc)"
printf '%-72s %9s %10s %8s %12s\n' command wall_s peak_MB ratio bytes/kernel
base=$( (head -1 "$out/results"; tail -1 "$out/results") | awk '{s += $(NF-1)} END {print s/2}')
while read -r line; do
	rss=${line##* }; rest=${line% *}; wall=${rest##* }; name=${rest% *}
	printf '%-72s %9.2f %10.0f %7.2fx %12.1f\n' "$name" "$wall" "$(echo "$rss/1024" | bc -l)" "$(echo "$wall/$base" | bc -l)" "$(echo "$rss*1024/$kernels" | bc -l)"
done < "$out/results"
