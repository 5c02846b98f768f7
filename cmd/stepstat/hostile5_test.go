package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Tests of issue 41 (hostile inputs, round five), on real captures.

// TestDiffSideNamedWithEquals (item 11): a diff side that exists as given is a file, even
// when its name holds "=" (run=3.sqlite), as a name holding "+" is; a label still works
// when the name as given does not exist.
func TestDiffSideNamedWithEquals(t *testing.T) {
	inCaptureDir(t, "dense-graph", "dense-eager")
	if err := os.Rename("dense-graph.sqlite", "run=3.sqlite"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := solRun(t, "diff", "run=3.sqlite", "new=dense-eager.sqlite")
	if code != 0 || !strings.Contains(out, "run=3") {
		t.Errorf("diff run=3.sqlite new=dense-eager.sqlite: exit %d, stderr %q; want the file run=3.sqlite read as the base side", code, errOut)
	}
	if code, _, errOut := solRun(t, "diff", "base=dense-eager.sqlite", "x=missing.sqlite"); code != 1 || !strings.Contains(errOut, "missing.sqlite: no such file") {
		t.Errorf("diff with a labelled missing side: exit %d, stderr %q", code, errOut)
	}
}

// TestRunSameCaptureTwice (item 1): a run folder holding one capture twice, as a link
// beside its target (latest.sqlite -> rank0.sqlite), a hard link or a byte copy, is
// refused, naming both files: a link or hard link is one file (a usage error, before
// anything is read), a copy the same capture (exit 1, once read); neither is merged as an
// extra rank. The folder without them is one run of two ranks.
func TestRunSameCaptureTwice(t *testing.T) {
	dir := t.TempDir()
	_, folder := splitRun(t, dir)
	rank0 := filepath.Join(folder, "rank0.sqlite")
	for _, tc := range []struct {
		name string
		make func(dst string) error
		code int
		want string
	}{
		{"symlink", func(dst string) error { return os.Symlink("rank0.sqlite", dst) }, 2, "run/latest.sqlite and " + rank0 + " are one file"},
		{"hard link", func(dst string) error { return os.Link(rank0, dst) }, 2, "run/latest.sqlite and " + rank0 + " are one file"},
		{"copy", func(dst string) error {
			b, err := os.ReadFile(rank0)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		}, 1, rank0 + ": is the same capture as " + filepath.Join(folder, "latest.sqlite")},
	} {
		dst := filepath.Join(folder, "latest.sqlite")
		if err := tc.make(dst); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCLI("report", folder)
		if code != tc.code || !strings.Contains(errOut, tc.want) || strings.Contains(out, "device 2") {
			t.Errorf("%s: report of the folder: exit %d, stderr %q; want exit %d naming %q", tc.name, code, errOut, tc.code, tc.want)
		}
		for _, args := range [][]string{{"report", rank0, dst}, {"diff", "a=" + rank0 + "+" + dst, "b=" + rank0}} {
			if code, _, errOut := runCLI(args...); code != tc.code {
				t.Errorf("%s: %q: exit %d, stderr %q; want %d", tc.name, args, code, errOut, tc.code)
			}
		}
		os.Remove(dst)
	}
	if code, _, errOut := runCLI("report", folder); code != 0 {
		t.Errorf("report of the two ranks: exit %d, stderr %q", code, errOut)
	}
}

// TestDamagedStringIds (item 5): a damaged StringIds (two child pointers of an interior
// page to one leaf: the other leaf's strings are gone, quick_check fails) was read as it
// stood: exit 0, most kernel time "other", the only sign a warning that ids were not
// found. It is an error naming StringIds and quick_check's finding, exit 1; the same
// capture undamaged still reads.
func TestDamagedStringIds(t *testing.T) {
	inTempDir(t)
	capture(t, "dense-eager", "base.sqlite")
	base := []byte(readString(t, "base.sqlite"))
	si, sl := btreeOf(t, base, rootPage(t, "base.sqlite", "StringIds"))
	if len(si) == 0 || len(sl) < 3 {
		t.Fatalf("StringIds: %d interior pages, %d leaves; want a tree of several leaves", len(si), len(sl))
	}
	b := slices.Clone(base)
	copy(b[childPointer(b, si[0], 1):][:4], b[childPointer(b, si[0], 0):][:4])
	if err := os.WriteFile("in.sqlite", b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("report", "in.sqlite")
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 ||
		!strings.HasPrefix(errOut, "stepstat: in.sqlite: StringIds is damaged: ") || !strings.Contains(errOut, "quick_check of the table fails too") {
		t.Errorf("damaged StringIds: exit %d, stdout %d bytes, stderr %q; want exit 1 and one line naming StringIds", code, len(out), errOut)
	}
	if code, _, errOut := runCLI("report", "base.sqlite"); code != 0 {
		t.Errorf("undamaged: exit %d, %s", code, errOut)
	}
}

// TestInfoClassifyWidth (item 13): info and classify keep every line within MaxTextLine
// (160 columns): info printed a 284-column warning, classify a 299-column row for a rule
// of a rules file deep in folders (rules are named FILE:LINE). Long paths too.
func TestInfoClassifyWidth(t *testing.T) {
	inTempDir(t)
	deep := filepath.Join(strings.Repeat("experiments_of_the_week_", 4), strings.Repeat("run_with_a_long_name_", 4))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(deep, "dense-graph.sqlite")
	capture(t, "dense-graph", trace)
	rules := filepath.Join(deep, "our_team_kernel_rules_for_the_decode_path.rules")
	if err := os.WriteFile(rules, []byte("elementwise  (?i)elementwise\ngemm  (?i)gemm|cutlass|nvjet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"info", trace}, {"classify", "--rules", rules, trace}} {
		code, out, errOut := runCLI(args...)
		if code != 0 {
			t.Fatalf("%s: exit %d, %s", args[0], code, errOut)
		}
		for _, l := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(l); n > 160 {
				t.Errorf("%s: a line of %d columns: %s", args[0], n, l)
			}
		}
	}
}
