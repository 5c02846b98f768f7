// Command testsum reads `go test -json` on stdin and writes what `go test` writes without
// -json (each package's ok/FAIL line, and the output of failed tests and of packages that
// did not build), then one line naming the tests that were skipped and why (and one for
// skipped subtests, when there are any), and last the
// totals of the top-level tests: "tests: 512 passed, 0 failed, 9 skipped" (-label names
// the pass: "race: ..."), with the packages that failed to build. `make test` and
// `make check` run it; it exits 1 when a test or a package failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	label := flag.String("label", "tests", "what the totals line calls the pass")
	flag.Parse()
	if !summarize(os.Stdin, os.Stdout, *label) {
		os.Exit(1)
	}
}

// summarize reads go test -json from r and writes the summary to w; it reports whether
// every test and package passed.
func summarize(r io.Reader, w io.Writer, label string) bool {
	s := &summary{w: w, outputs: map[testKey][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(w, sc.Text()) // not an event: build output
			continue
		}
		s.event(&e)
	}
	sort.Strings(s.skips)
	if len(s.skips) == 0 {
		fmt.Fprintln(w, "skipped: none")
	} else {
		fmt.Fprintf(w, "skipped %d: %s\n", len(s.skips), strings.Join(s.skips, "; "))
	}
	if len(s.subSkips) > 0 { // a case of a table-driven test left out on purpose says why
		sort.Strings(s.subSkips)
		fmt.Fprintf(w, "skipped subtests %d: %s\n", len(s.subSkips), strings.Join(s.subSkips, "; "))
	}
	fmt.Fprintln(w, totals(label, s.passed, s.failedTests, s.skipped, s.failedPkgs))
	return !s.failed
}

// A testKey names a test of a package ("" for the package itself).
type testKey struct{ pkg, test string }

// A summary is what summarize has read so far.
type summary struct {
	w                                        io.Writer
	passed, failedTests, skipped, failedPkgs int
	outputs                                  map[testKey][]string // by test, until it ends
	skips, subSkips                          []string             // top-level tests; subtests (not in the totals)
	failed                                   bool
}

// event takes one event of go test -json.
func (s *summary) event(e *event) {
	w := s.w
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "build-output": // the compiler's messages of a package that did not build
		fmt.Fprint(w, e.Output)
	case "output":
		s.outputs[k] = append(s.outputs[k], e.Output)
	case "skip":
		if e.Test != "" && !strings.Contains(e.Test, "/") {
			s.skipped++
			s.skips = append(s.skips, fmt.Sprintf("%s (%s)", e.Test, skipReason(s.outputs[k])))
		} else if e.Test != "" {
			s.subSkips = append(s.subSkips, fmt.Sprintf("%s (%s)", e.Test, skipReason(s.outputs[k])))
		}
		delete(s.outputs, k)
	case "pass":
		delete(s.outputs, k)
		if e.Test != "" && !strings.Contains(e.Test, "/") {
			s.passed++
		}
		if e.Test == "" {
			fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
	case "fail":
		s.fail(e, k)
	}
}

// fail takes a fail event: of a package, its output; of a top-level test, its output
// and its failed subtests', in name order; of a subtest, nothing yet (its output waits
// for its top-level test's).
func (s *summary) fail(e *event, k testKey) {
	w := s.w
	s.failed = true
	switch {
	case e.Test == "":
		s.failedPkgs++
		said := false
		for _, o := range s.outputs[k] {
			fmt.Fprint(w, o)
			said = said || strings.HasPrefix(o, "FAIL\t")
		}
		if !said {
			fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
	case !strings.Contains(e.Test, "/"):
		s.failedTests++
		for _, o := range s.outputs[k] {
			fmt.Fprint(w, o)
		}
		var subs []testKey // the failed test's subtests that failed, in name order
		for sk := range s.outputs {
			if sk.pkg == e.Package && strings.HasPrefix(sk.test, e.Test+"/") {
				subs = append(subs, sk)
			}
		}
		sort.Slice(subs, func(i, j int) bool { return subs[i].test < subs[j].test })
		for _, sk := range subs {
			fmt.Fprint(w, strings.Join(s.outputs[sk], ""))
			delete(s.outputs, sk)
		}
	default:
		return // a failed subtest: its output waits for its top-level test's
	}
	delete(s.outputs, k)
}

// totals is the last line: the top-level tests that passed, failed and skipped, and the
// packages that failed (with failed tests, or without: a build failure, a panic, a timeout).
func totals(label string, passed, failed, skipped, failedPkgs int) string {
	s := fmt.Sprintf("%s: %d passed, %d failed, %d skipped", label, passed, failed, skipped)
	if failedPkgs > 0 {
		s += fmt.Sprintf("; %d package%s failed", failedPkgs, map[bool]string{true: "s"}[failedPkgs != 1])
	}
	return s
}

// skipReason is the message of t.Skip in a skipped test's output: the last
// "file_test.go:NN: message" line, without its prefix (go test writes it before the
// "--- SKIP" line).
func skipReason(out []string) string {
	reason := ""
	for _, o := range out {
		o = strings.TrimSpace(o)
		if strings.HasPrefix(o, "--- SKIP") {
			break
		}
		if loc, msg, ok := strings.Cut(o, ": "); ok && strings.Contains(loc, ".go:") {
			reason = msg
		}
	}
	if reason == "" {
		return "no reason given"
	}
	return reason
}
