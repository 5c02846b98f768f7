package nsys

import (
	"path"
	"strconv"
	"strings"
)

// An Origin is what an export says about where its clock and its processes come from:
// what placing it beside other exports of one run (MergeRun) needs.
type Origin struct {
	// SessionStart is the UTC time, in ns since the Unix epoch, of the file's timestamp 0
	// (TARGET_INFO_SESSION_START_TIME.utcEpochNs, "start of the capture"); HasStart is
	// false when the export has no such table (exports before 2021).
	SessionStart int64
	HasStart     bool
	// Program is the launched command and its script, e.g. "python3 workload.py"
	// (META_DATA_CAPTURE PROCESS_0:COMMAND and its first argument naming a file); empty
	// when the export does not record it.
	Program string
	// Rank and LocalRank are RANK and LOCAL_RANK of the recorded environment (a process
	// profiled under torchrun: torchrun ... -- nsys profile ...); -1 when not set.
	Rank, LocalRank int
}

const (
	sessionTable = "TARGET_INFO_SESSION_START_TIME"
	captureTable = "META_DATA_CAPTURE"
)

// readOrigin fills Trace.Origin. Every part is optional: a table the export lacks, or
// fails to give, leaves its part unknown.
func (r *reader) readOrigin() {
	o := Origin{Rank: -1, LocalRank: -1}
	if r.has(sessionTable) && r.hasCol(sessionTable, "utcEpochNs") {
		var ns *int64
		if err := r.db.QueryRowContext(r.ctx, `SELECT utcEpochNs FROM `+sessionTable+` LIMIT 1`).Scan(&ns); err == nil && ns != nil && *ns > 0 {
			o.SessionStart, o.HasStart = *ns, true
		}
	}
	if r.has(captureTable) && r.hasCol(captureTable, "name") && r.hasCol(captureTable, "value") {
		rows, err := r.db.QueryContext(r.ctx, `SELECT name, COALESCE(value, '') FROM `+captureTable+
			` WHERE name = 'PROCESS_0:COMMAND' OR name LIKE 'PROCESS_0:ARGUMENT_%' ORDER BY rowid`)
		if err == nil {
			var cmd string
			args := map[int]string{}
			for rows.Next() {
				var k, v string
				if rows.Scan(&k, &v) != nil {
					break
				}
				if k == "PROCESS_0:COMMAND" {
					cmd = v
				} else if n, err := strconv.Atoi(strings.TrimPrefix(k, "PROCESS_0:ARGUMENT_")); err == nil && n >= 0 && n < 1000 {
					args[n] = v
				}
			}
			rows.Close()
			o.Program = programOf(cmd, args)
		}
	}
	if r.has(envTable) && r.hasCol(envTable, "name") && r.hasCol(envTable, "value") {
		var env string
		if err := r.db.QueryRowContext(r.ctx, `SELECT COALESCE(value, '') FROM `+envTable+
			` WHERE name = 'DeviceEnvironment' ORDER BY rowid LIMIT 1`).Scan(&env); err == nil {
			o.Rank, o.LocalRank = rankVars(env)
		}
	}
	r.t.Origin = o
}

// programOf names the program a capture launched: the command's base name, and the base
// name of its first argument that names a script (a path or a file with an extension, not
// an option), e.g. "python3 workload.py" or "torchrun hf_generate.py". Other arguments
// (a rank, a port) may differ between the ranks of one run and are left out.
func programOf(cmd string, args map[int]string) string {
	if cmd == "" {
		return ""
	}
	p := path.Base(cmd)
	for i := 0; i < len(args); i++ {
		a, ok := args[i]
		if !ok {
			break
		}
		if !strings.HasPrefix(a, "-") && (strings.Contains(a, "/") || strings.HasSuffix(a, ".py")) {
			return p + " " + path.Base(a)
		}
	}
	return p
}

// rankVars returns RANK and LOCAL_RANK of an environment as nsys records it
// (KEY=VALUE;KEY=VALUE;...), -1 for one that is unset or not a small non-negative number.
// No other variable is read.
func rankVars(env string) (rank, local int) {
	rank, local = -1, -1
	for part := range strings.SplitSeq(env, ";") {
		name, value, ok := strings.Cut(part, "=")
		if !ok || (name != "RANK" && name != "LOCAL_RANK") {
			continue
		}
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 || n > 1<<20 {
			continue
		}
		if name == "RANK" && rank < 0 {
			rank = n
		} else if name == "LOCAL_RANK" && local < 0 {
			local = n
		}
	}
	return rank, local
}
