package nsystest

import (
	"compress/gzip"
	"io"
	"os"
	"testing"
)

// Gunzip decompresses the gzip file gz (a capture in testdata/traces) into dst.
func Gunzip(t testing.TB, gz, dst string) {
	t.Helper()
	in, err := os.Open(gz)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatalf("%s: %v", gz, err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		out.Close()
		t.Fatalf("%s: %v", gz, err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
