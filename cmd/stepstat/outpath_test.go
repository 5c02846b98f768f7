package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOutputRespectsPath (issue 17, item 2): -o and --html write into a device or a pipe,
// through a symlink to its target, and over a regular file keeping its mode (and, as
// root, its owner); only a regular file or a new path is replaced by rename.
func TestOutputRespectsPath(t *testing.T) {
	inTempDir(t)
	buildFixture(t, "schema-meta-data-export", "in.sqlite")

	// A symlink: the link stays, its target gets the report.
	writeFile(t, "target.txt", "old")
	if err := os.Symlink("target.txt", "link.txt"); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("report", "-o", "link.txt", "in.sqlite"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if fi, err := os.Lstat("link.txt"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.txt is no longer a symlink")
	}
	if b, _ := os.ReadFile("target.txt"); !strings.Contains(string(b), "\nTrace: in.sqlite") {
		t.Errorf("the symlink's target did not get the report: %q", firstN(string(b), 100))
	}
	// A dangling symlink names the file to create.
	if err := os.Symlink("new.txt", "dangling.txt"); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("report", "-o", "dangling.txt", "in.sqlite"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if fi, err := os.Lstat("dangling.txt"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("dangling.txt is no longer a symlink")
	}
	if _, err := os.Stat("new.txt"); err != nil {
		t.Errorf("the dangling symlink's target was not created: %v", err)
	}

	// A regular file keeps its mode, and as root its owner.
	writeFile(t, "private.txt", "old")
	if err := os.Chmod("private.txt", 0o600); err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0
	if root {
		if err := os.Chown("private.txt", 1234, 5678); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := runCLI("report", "-o", "private.txt", "in.sqlite"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	fi, err := os.Stat("private.txt")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("private.txt has mode %v after the report, want 0600", fi.Mode().Perm())
	}
	if st := fi.Sys().(*syscall.Stat_t); root && (st.Uid != 1234 || st.Gid != 5678) {
		t.Errorf("private.txt is owned by %d:%d after the report, want 1234:5678", st.Uid, st.Gid)
	}

	// A named pipe is written into, not replaced.
	if err := syscall.Mkfifo("pipe", 0o644); err != nil {
		t.Skipf("this file system makes no named pipe: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile("pipe")
		got <- string(b)
	}()
	if code, _, stderr := runCLI("report", "-f", "json", "-o", "pipe", "in.sqlite"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	select {
	case s := <-got:
		if !strings.Contains(s, `"schema":"stepstat.report.v1"`) {
			t.Errorf("the pipe got %q", firstN(s, 100))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing came through the pipe")
	}
	if fi, err := os.Lstat("pipe"); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("pipe is no longer a named pipe")
	}

	// A character device (a null device made here, as root: never the system's).
	if root {
		if err := syscall.Mknod("null", syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Logf("no device node: %v", err)
		} else {
			if code, _, stderr := runCLI("report", "--html", "null", "-o", "null2", "in.sqlite"); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if fi, err := os.Lstat("null"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
				t.Errorf("the device was replaced: %v", fi.Mode())
			}
		}
	}
	ents, _ := os.ReadDir(".")
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("%s left behind", e.Name())
		}
	}
}

// TestSameOutputTwice (issue 17, item 10): -o X --html X is a usage error, not a lost
// text report.
func TestSameOutputTwice(t *testing.T) {
	inTempDir(t)
	buildFixture(t, "schema-meta-data-export", "in.sqlite")
	code, _, stderr := runCLI("report", "-o", "x.html", "--html", "./x.html", "in.sqlite")
	if code != 2 || !strings.Contains(stderr, "-o and --html name one file") {
		t.Errorf("exit %d, stderr %q; want 2 and a line saying the outputs are one file", code, stderr)
	}
	if _, err := os.Stat("x.html"); err == nil {
		t.Errorf("x.html was written")
	}
}

// TestSignalCleansUp (issue 17, item 7): SIGTERM during a .nsys-rep export kills the
// child nsys, removes the temporary export folder and exits non-zero.
func TestSignalCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a subprocess")
	}
	dir := inTempDir(t)
	_, tmpdir := fakeNsys(t, "")
	// An nsys that hangs in export, telling its pid.
	script := "#!/bin/sh\necho $$ > \"" + dir + "/nsys.pid\"\nexec sleep 60\n"
	nsysPath := filepath.Join(strings.Split(os.Getenv("PATH"), string(os.PathListSeparator))[0], "nsys")
	if err := os.WriteFile(nsysPath, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, "run.nsys-rep", "QDSTRM\x00 a report")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		os.Remove("nsys.pid")
		cmd := helperCmd("report", "run.nsys-rep")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var pid int
		for i := 0; i < 200 && pid == 0; i++ {
			time.Sleep(50 * time.Millisecond)
			if b, err := os.ReadFile("nsys.pid"); err == nil && strings.HasSuffix(string(b), "\n") {
				pid = atoi(strings.TrimSpace(string(b)))
			}
		}
		if pid == 0 {
			cmd.Process.Kill()
			t.Fatal("the fake nsys never started")
		}
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		if err == nil || code != 128+int(sig) {
			t.Errorf("%v: exit %d, want %d; stderr %q", sig, code, 128+int(sig), stderr.String())
		}
		if !strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("%v: stderr %q does not say it was interrupted", sig, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
		if syscall.Kill(pid, 0) == nil {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("%v: the child nsys (pid %d) still runs", sig, pid)
		}
		emptyDir(t, tmpdir)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}
