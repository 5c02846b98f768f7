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
	type key struct{ pkg, test string }
	var passed, failedTests, skipped, failedPkgs int
	outputs := map[key][]string{}
	var skips, subSkips []string // top-level tests; subtests (not in the totals)
	failed := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(w, sc.Text()) // not an event: build output
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output": // the compiler's messages of a package that did not build
			fmt.Fprint(w, e.Output)
		case "output":
			outputs[k] = append(outputs[k], e.Output)
		case "skip":
			if e.Test != "" && !strings.Contains(e.Test, "/") {
				skipped++
				skips = append(skips, fmt.Sprintf("%s (%s)", e.Test, skipReason(outputs[k])))
			} else if e.Test != "" {
				subSkips = append(subSkips, fmt.Sprintf("%s (%s)", e.Test, skipReason(outputs[k])))
			}
			delete(outputs, k)
		case "pass":
			delete(outputs, k)
			if e.Test != "" && !strings.Contains(e.Test, "/") {
				passed++
			}
			if e.Test == "" {
				fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
			}
		case "fail":
			failed = true
			if e.Test == "" {
				failedPkgs++
				said := false
				for _, o := range outputs[k] {
					fmt.Fprint(w, o)
					said = said || strings.HasPrefix(o, "FAIL\t")
				}
				if !said {
					fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
				}
			} else if !strings.Contains(e.Test, "/") {
				failedTests++
				for _, o := range outputs[k] {
					fmt.Fprint(w, o)
				}
				var subs []key // the failed test's subtests that failed, in name order
				for sk := range outputs {
					if sk.pkg == e.Package && strings.HasPrefix(sk.test, e.Test+"/") {
						subs = append(subs, sk)
					}
				}
				sort.Slice(subs, func(i, j int) bool { return subs[i].test < subs[j].test })
				for _, sk := range subs {
					fmt.Fprint(w, strings.Join(outputs[sk], ""))
					delete(outputs, sk)
				}
			} else {
				break // a failed subtest: its output waits for its top-level test's
			}
			delete(outputs, k)
		}
	}
	sort.Strings(skips)
	if len(skips) == 0 {
		fmt.Fprintln(w, "skipped: none")
	} else {
		fmt.Fprintf(w, "skipped %d: %s\n", len(skips), strings.Join(skips, "; "))
	}
	if len(subSkips) > 0 { // a case of a table-driven test left out on purpose says why
		sort.Strings(subSkips)
		fmt.Fprintf(w, "skipped subtests %d: %s\n", len(subSkips), strings.Join(subSkips, "; "))
	}
	fmt.Fprintln(w, totals(label, passed, failedTests, skipped, failedPkgs))
	return !failed
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
