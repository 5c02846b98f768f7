// Command testsum reads `go test -json` on stdin and writes what `go test` writes without
// -json (each package's ok/FAIL line, and the output of failed tests and of packages that
// did not build), then one line naming the tests that were skipped and why. `make test`
// runs it; it exits 1 when a test or a package failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
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
	type key struct{ pkg, test string }
	outputs := map[key][]string{}
	var skips []string
	failed := false
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Println(sc.Text()) // not an event: build output
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output": // the compiler's messages of a package that did not build
			fmt.Print(e.Output)
		case "output":
			outputs[k] = append(outputs[k], e.Output)
		case "skip":
			if e.Test != "" && !strings.Contains(e.Test, "/") {
				skips = append(skips, fmt.Sprintf("%s (%s)", e.Test, skipReason(outputs[k])))
			}
			delete(outputs, k)
		case "pass":
			delete(outputs, k)
			if e.Test == "" {
				fmt.Printf("ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
			}
		case "fail":
			failed = true
			if e.Test == "" {
				said := false
				for _, o := range outputs[k] {
					fmt.Print(o)
					said = said || strings.HasPrefix(o, "FAIL\t")
				}
				if !said {
					fmt.Printf("FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
				}
			} else if !strings.Contains(e.Test, "/") {
				for _, o := range outputs[k] {
					fmt.Print(o)
				}
				for sk, o := range outputs { // the failed test's subtests
					if sk.pkg == e.Package && strings.HasPrefix(sk.test, e.Test+"/") {
						fmt.Print(strings.Join(o, ""))
						delete(outputs, sk)
					}
				}
			}
			delete(outputs, k)
		}
	}
	sort.Strings(skips)
	if len(skips) == 0 {
		fmt.Println("skipped: none")
	} else {
		fmt.Printf("skipped %d: %s\n", len(skips), strings.Join(skips, "; "))
	}
	if failed {
		os.Exit(1)
	}
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
