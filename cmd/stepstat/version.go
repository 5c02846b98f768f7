package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=..."; empty, the module
// version of the build is used.
var version = ""

// versionLine is what `stepstat version` prints: the version (the -X value, else the main
// module's version from the build information), the VCS revision and commit time the go
// command stamped into the binary, "modified" when the working tree had changes, and the Go
// version; e.g. "stepstat (devel) revision 1f0c2e3a9b7d (2026-12-01T09:00:00Z, modified), go1.26.8".
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	v := version
	if v == "" && ok {
		v = bi.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	parts := []string{"stepstat " + v}
	if !ok {
		return parts[0] + " (no build information)"
	}
	var rev, when string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		parts = append(parts, "no VCS revision (built outside a git checkout, or with -buildvcs=false)")
	} else {
		var about []string
		if when != "" {
			about = append(about, when)
		}
		if modified {
			about = append(about, "modified")
		}
		r := "revision " + rev
		if len(about) > 0 {
			r += " (" + strings.Join(about, ", ") + ")"
		}
		parts = append(parts, r)
	}
	return fmt.Sprintf("%s, %s", strings.Join(parts, " "), bi.GoVersion)
}
