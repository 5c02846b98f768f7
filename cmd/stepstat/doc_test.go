package main

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestREADMEFlags checks that the README documents every flag of every command and that
// each command has long help, so the manual cannot drift from the flags.
func TestREADMEFlags(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range commands {
		if strings.TrimSpace(c.long) == "" {
			t.Errorf("command %s has no long help", c.name)
		}
		if !strings.Contains(string(readme), "stepstat "+c.name) {
			t.Errorf("README does not show 'stepstat %s'", c.name)
		}
		fs, _ := newFlagSet(c)
		fs.VisitAll(func(f *pflag.Flag) {
			if !strings.Contains(string(readme), "--"+f.Name) {
				t.Errorf("README does not document %s --%s", c.name, f.Name)
			}
		})
	}
}
