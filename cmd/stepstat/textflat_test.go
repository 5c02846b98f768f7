package main

import "strings"

// flat is a text output with every run of white space (the wrapping's newlines and
// indents included) as one space: tests that look for a sentence read it whole, at any
// width the report was wrapped to.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// bare is a text output without its white space: outputs that differ only in where a
// longer path made them wrap (a word longer than a line is cut) compare equal.
func bare(s string) string { return strings.Join(strings.Fields(s), "") }
