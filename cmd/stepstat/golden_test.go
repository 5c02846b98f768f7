package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// update rewrites the CLI goldens (and any other golden of this package's tests).
var update = flag.Bool("update", false, "rewrite the goldens in testdata/golden")

// goldenDir holds the CLI goldens: <scenario>.stdout and <scenario>.stderr.
var goldenDir = func() string {
	d, err := filepath.Abs(filepath.Join("..", "..", "testdata", "golden"))
	if err != nil {
		panic(err)
	}
	return d
}()

// golden runs `stepstat args...` in-process and compares its stdout and stderr with
// testdata/golden/<scenario>.stdout and .stderr (a missing file means empty). With
// -update it rewrites them (and removes a golden that became empty); on a mismatch it
// writes <scenario>.got-stdout / .got-stderr beside them and shows a diff. It returns the
// exit status for the caller to check. Paths in the output are whatever the caller passed:
// run from a fixed directory (t.Chdir) with relative paths to keep goldens stable.
func golden(t *testing.T, scenario string, args ...string) int {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(""), &stdout, &stderr)
	for _, s := range []struct {
		ext string
		got []byte
	}{{"stdout", stdout.Bytes()}, {"stderr", stderr.Bytes()}} {
		file := filepath.Join(goldenDir, scenario+"."+s.ext)
		gotFile := filepath.Join(goldenDir, scenario+".got-"+s.ext)
		want, err := os.ReadFile(file)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Equal(want, s.got) {
			os.Remove(gotFile)
			continue
		}
		if *update {
			if err := os.MkdirAll(goldenDir, 0o777); err != nil {
				t.Fatal(err)
			}
			if len(s.got) == 0 {
				err = os.Remove(file)
			} else {
				err = os.WriteFile(file, s.got, 0o666)
			}
			if err != nil {
				t.Fatal(err)
			}
			os.Remove(gotFile)
			t.Logf("updated %s", file)
			continue
		}
		if err := os.WriteFile(gotFile, s.got, 0o666); err != nil {
			t.Error(err)
		}
		t.Errorf("stepstat %s: %s differs from %s (exit %d; got written to %s; run 'go test -update' to accept):\n%s",
			strings.Join(args, " "), s.ext, rel(file), code, rel(gotFile), unifiedDiff(rel(file), "got", string(want), string(s.got)))
	}
	return code
}

// rel shortens a golden path for messages.
func rel(path string) string {
	if r, err := filepath.Rel(filepath.Dir(filepath.Dir(goldenDir)), path); err == nil {
		return r
	}
	return path
}

// unifiedDiff returns a line diff of a and b in the style of diff -u, with three lines of
// context. It is quadratic, which is fine for goldens.
func unifiedDiff(nameA, nameB, a, b string) string {
	x, y := splitLines(a), splitLines(b)
	n, m := len(x), len(y)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var ops []line
	for i, j := 0, 0; i < n || j < m; {
		switch {
		case i < n && j < m && x[i] == y[j]:
			ops = append(ops, line{' ', x[i]})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j]):
			ops = append(ops, line{'+', y[j]})
			j++
		default:
			ops = append(ops, line{'-', x[i]})
			i++
		}
	}
	var out strings.Builder
	out.WriteString("--- " + nameA + "\n+++ " + nameB + "\n")
	const context = 3
	for i := 0; i < len(ops); {
		if ops[i].op == ' ' {
			i++
			continue
		}
		// A hunk: from context lines before the change to context lines after the last
		// change that is within 2*context of the previous one.
		start := max(0, i-context)
		end := i
		for end < len(ops) {
			if ops[end].op != ' ' {
				end++
				continue
			}
			k := end
			for k < len(ops) && ops[k].op == ' ' {
				k++
			}
			if k == len(ops) || k-end > 2*context {
				break
			}
			end = k
		}
		stop := min(len(ops), end+context)
		aLine, bLine := 1, 1
		for _, o := range ops[:start] {
			if o.op != '+' {
				aLine++
			}
			if o.op != '-' {
				bLine++
			}
		}
		var aN, bN int
		for _, o := range ops[start:stop] {
			if o.op != '+' {
				aN++
			}
			if o.op != '-' {
				bN++
			}
		}
		out.WriteString("@@ -" + strconv.Itoa(aLine) + "," + strconv.Itoa(aN) + " +" + strconv.Itoa(bLine) + "," + strconv.Itoa(bN) + " @@\n")
		for _, o := range ops[start:stop] {
			out.WriteByte(o.op)
			out.WriteString(o.text)
			out.WriteByte('\n')
		}
		i = stop
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if strings.HasSuffix(l, "\n") {
			lines[i] = l[:len(l)-1]
		} else {
			lines[i] = l + "\\ (no newline at end)"
		}
	}
	return lines
}

func TestUnifiedDiff(t *testing.T) {
	var a, b []string
	for i := 1; i <= 20; i++ {
		a = append(a, strconv.Itoa(i))
		b = append(b, strconv.Itoa(i))
	}
	b[4] = "five"
	b = append(b[:16], b[17:]...)
	got := unifiedDiff("a", "b", strings.Join(a, "\n")+"\n", strings.Join(b, "\n"))
	want := `--- a
+++ b
@@ -2,7 +2,7 @@
 2
 3
 4
-5
+five
 6
 7
 8
@@ -14,7 +14,6 @@
 14
 15
 16
-17
 18
 19
-20
+20\ (no newline at end)
`
	if got != want {
		t.Errorf("unifiedDiff:\n%s\nwant:\n%s", got, want)
	}
}
