package nsystest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorpusDir: the corpus is the folder STEPSTAT_CORPUS names when it holds traces/,
// else ../shared beside the repository's root; a folder without traces/ is an error that
// names the folder and says how to get the corpus.
func TestCorpusDir(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(CorpusEnv, empty)
	dir, err := CorpusDir()
	if err == nil || dir != empty || !strings.Contains(err.Error(), empty) || !strings.Contains(err.Error(), "set "+CorpusEnv) {
		t.Errorf("%s=%s (no traces folder): %q, %v; want that folder and an error naming it and %s", CorpusEnv, empty, dir, err, CorpusEnv)
	}

	full := t.TempDir()
	if err := os.Mkdir(filepath.Join(full, "traces"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(CorpusEnv, full)
	if dir, err := CorpusDir(); err != nil || dir != full {
		t.Errorf("%s=%s: %q, %v; want that folder", CorpusEnv, full, dir, err)
	}

	os.Unsetenv(CorpusEnv) // t.Setenv restores it at the end
	dir, err = CorpusDir()
	want, _ := filepath.Abs(filepath.Join(root, "..", "shared"))
	if dir != want {
		t.Errorf("unset: %q, want ../shared beside the repository (%s)", dir, want)
	}
	if _, serr := os.Stat(filepath.Join(want, "traces")); (serr == nil) != (err == nil) {
		t.Errorf("unset: error %v, but stat of %s/traces: %v", err, want, serr)
	}
	if err != nil && !strings.Contains(err.Error(), "../shared") {
		t.Errorf("unset, absent: %q does not say to put the corpus at ../shared", err)
	}
}
