#!/usr/bin/env bash
# Measures stepstat against one SQLite scan of the kernel table, on one trace, in one run:
# each command's wall time, its ratio to the scan's, and its peak memory, split in two: heap
# (the process's own memory: Go's heap and the arrays stepstat maps outside it, RssAnon)
# and file (pages of the trace file mapped and resident, RssFile), with the peak RSS of the
# two together (ru_maxrss, the kernel's own high-water mark).
#
# The scan is Python's sqlite3 on the file opened immutable, running
#
#	select count(*), sum(end-start), sum(deviceId), sum(streamId), sum(demangledName),
#	       sum(correlationId) from CUPTI_ACTIVITY_KIND_KERNEL
#
# (the sqlite3 command-line shell runs the same query where python3 is absent).
# Shared, noisy machines make absolute numbers drift; the ratios hold better. REPEAT=N runs
# N rounds (scan, then each command) and a last scan, and reports each command's median
# wall time and largest peaks; the ratios are to the median of all the scans, which follows
# the machine's speed over the run. KEYS picks the commands (default: all); CORES lists
# the GOMAXPROCS of the extra report rows (default: 2 1, and nproc's count first when it
# is not one of them).
set -euo pipefail
trace=${1:?usage: bench.sh TRACE}
bin=${STEPSTAT:-bin/stepstat}
repeat=${REPEAT:-1}
query='select count(*), sum(end-start), sum(deviceId), sum(streamId), sum(demangledName), sum(correlationId) from CUPTI_ACTIVITY_KIND_KERNEL'
if command -v python3 >/dev/null && python3 -c 'import sqlite3' 2>/dev/null; then
	scanner="python3 sqlite3 $(python3 -c 'import sqlite3; print(sqlite3.sqlite_version)')"
	sql=(python3 -c 'import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?immutable=1", uri=True)
print("|".join(map(str, db.execute(sys.argv[2]).fetchone())))')
elif command -v sqlite3 >/dev/null; then
	scanner="sqlite3 shell $(sqlite3 -version | cut -d' ' -f1)"
	sql=(sqlite3_uri)
	sqlite3_uri() { sqlite3 "file:$1?immutable=1" "$2"; }
else
	echo "bench: needs python3 (with its sqlite3 module) or the sqlite3 shell (apt-get install sqlite3)" >&2
	exit 1
fi
# timed OUT CMD...: runs CMD, writes "wall_s maxrss_kB heap_kB file_kB" to OUT. The heap
# and file peaks are sampled from /proc/PID/status every 5 ms (a peak shorter than that
# can be missed; maxrss cannot); without python3, /usr/bin/time gives wall and maxrss only.
if command -v python3 >/dev/null; then
	timed() {
		python3 -c 'import os, subprocess, sys, time
t = time.monotonic()
p = subprocess.Popen(sys.argv[2:])
anon = filepeak = 0
while True:
    try:
        with open("/proc/%d/status" % p.pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    anon = max(anon, int(line.split()[1]))
                elif line.startswith("RssFile:"):
                    filepeak = max(filepeak, int(line.split()[1]))
    except (OSError, ValueError):
        pass
    pid, status, ru = os.wait4(p.pid, os.WNOHANG)
    if pid:
        break
    time.sleep(0.005)
w = time.monotonic() - t
open(sys.argv[1], "w").write("%.2f %d %d %d\n" % (w, ru.ru_maxrss, anon, filepeak))
sys.exit(os.waitstatus_to_exitcode(status))' "$@"
	}
elif [ -x /usr/bin/time ]; then
	timed() {
		local o=$1
		shift
		/usr/bin/time -f "%e %M 0 0" -o "$o" "$@"
	}
else
	echo "bench: needs python3 or /usr/bin/time (apt-get install time)" >&2
	exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cores=$(nproc)
kernels=$("${sql[@]}" "$trace" 'select count(*) from CUPTI_ACTIVITY_KIND_KERNEL')
calls=$("${sql[@]}" "$trace" 'select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME' 2>/dev/null || echo 0)
size=$(stat -c %s "$trace")
cat "$trace" >/dev/null # the same page-cache state for every command
measure() { # key, command...
	local key=$1
	shift
	timed "$out/t" "$@" >"$out/stdout" 2>"$out/stderr" || {
		echo "bench: $key failed:" >&2
		cat "$out/stderr" >&2
		exit 1
	}
	read -r wall rss heap file <"$out/t"
	printf '%s %s %s %s %s\n' "$key" "$wall" "$rss" "$heap" "$file" >>"$out/results"
	printf 'bench: %s %ss rss %sKB heap %sKB file %sKB\n' "$key" "$wall" "$rss" "$heap" "$file" >&2 # as it goes: a run cut short keeps these
}
scan() { measure scan "${sql[@]}" "$trace" "$query"; }
procs=${CORES:-2 1}
[[ " $procs " == *" $cores "* ]] || procs="$cores $procs"
jsonkeys=""
for p in $procs; do jsonkeys+=" json$p"; done
keys=${KEYS:-$jsonkeys html classify diff}
want() { [[ " $keys " == *" $1 "* ]]; }
for ((r = 0; r < repeat; r++)); do
	scan
	for k in $keys; do
		case $k in
		json*) measure "$k" env GOMAXPROCS="${k#json}" "$bin" report --format json -o "$out/r${k#json}.json" "$trace" ;;
		html) measure html "$bin" report --format html -o "$out/r.html" "$trace" ;;
		classify) measure classify "$bin" classify -o "$out/c.txt" "$trace" ;;
		diff) measure diff "$bin" diff --format json -o "$out/d.json" "$trace" "$trace" ;;
		*) echo "bench: unknown key $k (json<GOMAXPROCS>, html, classify, diff)" >&2; exit 2 ;;
		esac
	done
done
scan
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
wall() { awk -v k="$1" '$1 == k {print $2}' "$out/results" | median; }
peak() { awk -v k="$1" -v c="$2" '$1 == k {print $c}' "$out/results" | sort -n | tail -1; }
base=$(wall scan)
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
printf 'trace: %s (%d kernels, %d runtime rows, %.2f GB), %d cores, load %s, %d round(s)\n' "$trace" "$kernels" "$calls" "$(awk -v s="$size" 'BEGIN { print s / 1e9 }')" "$cores" "$load" "$repeat"
printf 'scan: %s: %s\n' "$scanner" "$query"
printf '%-56s %8s %7s %8s %8s %8s %7s\n' command wall_s ratio heap_MB file_MB rss_MB B/kern
for key in scan $keys; do
	case $key in
	scan) name="scan ($scanner, immutable)" ;;
	json*) name="report --format json, GOMAXPROCS=${key#json}" ;;
	html) name="report --format html" ;;
	classify) name="classify" ;;
	diff) name="diff --format json (trace vs itself)" ;;
	esac
	w=$(wall "$key")
	rss=$(peak "$key" 3) heap=$(peak "$key" 4) file=$(peak "$key" 5)
	awk -v n="$name" -v w="$w" -v b="$base" -v r="$rss" -v h="$heap" -v f="$file" -v k="$kernels" 'BEGIN {
		printf "%-56s %8.2f %6.2fx %8.0f %8.0f %8.0f %7.1f\n", n, w, (b > 0 ? w / b : 0), h / 1024, f / 1024, r / 1024, r * 1024 / k }'
done
set -- $(cd "$out" && ls r*.json 2>/dev/null || true)
if [ $# -gt 1 ]; then
	ok=yes
	for f in "$@"; do cmp -s "$out/$1" "$out/$f" || ok=no; done
	echo "report JSON identical across GOMAXPROCS ($*): $ok"
fi
if want json1; then
	for k in $keys; do
		case $k in json1 | json*[!0-9]*) continue ;; json*) awk -v p="${k#json}" -v a="$(wall "$k")" -v b="$(wall json1)" 'BEGIN { printf "GOMAXPROCS=%d vs 1: %.2fx the wall time\n", p, a / b }' ;; esac
	done
fi
