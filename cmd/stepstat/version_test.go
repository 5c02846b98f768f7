package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVersionNamesRevision builds stepstat in a git checkout of the module's source (the
// working tree's files, committed to a fresh repository in a temporary folder: the go
// command stamps no revision in a git worktree, whose .git is a file) and checks that
// `stepstat version` prints that commit's revision, from the build information.
func TestVersionNamesRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds stepstat")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on PATH")
	}
	root := filepath.Join("..", "..")
	out, err := exec.Command(git, "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "go.mod", "go.sum", "cmd", "nsys", "breakdown", "render").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	dir := t.TempDir()
	for _, f := range strings.Fields(string(out)) {
		if strings.Contains(f, "/testdata/") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the working tree
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
		}
		return strings.TrimSpace(string(b))
	}
	run(git, "init", "-q")
	run(git, "add", ".")
	run(git, "commit", "-q", "-m", "version test")
	rev := run(git, "rev-parse", "HEAD")
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	bin := filepath.Join(dir, "stepstat")
	run(gobin, "build", "-buildvcs=true", "-tags", "sqlite_omit_load_extension", "-o", bin, "./cmd/stepstat")
	got := run(bin, "version")
	if !strings.Contains(got, "revision "+rev) {
		t.Errorf("stepstat version: %q, want revision %s", got, rev)
	}
	if !regexp.MustCompile(`^stepstat \S+ revision [0-9a-f]{40} \(\d{4}-\d\d-\d\dT[^)]*\), go\d`).MatchString(got) {
		t.Errorf("stepstat version: %q, want the version, revision, commit time and Go version", got)
	}
	if strings.Contains(got, "modified") {
		t.Errorf("stepstat version: %q says modified in a clean checkout", got)
	}
}
