package render

import (
	"strings"
	"unicode/utf8"
)

// Text width. A text report or diff is wrapped to the terminal's width (TextOptions.Width;
// DefaultTextWidth when piped), the answer and the details alike; only the rows of its
// tables (tableRow) keep their columns, within MaxTextLine. JSON and CSV are not wrapped.

// DefaultTextWidth is the width of the answer when the output is not a terminal.
const DefaultTextWidth = 100

// MaxTextLine is the longest line any text output has: longer prose lines are wrapped,
// longer kernel names elided (elideNames).
const MaxTextLine = 160

// minTextWidth is the narrowest width the answer is wrapped to, whatever the terminal says.
const minTextWidth = 40

// textWidth returns the width to wrap the answer to: w, or DefaultTextWidth when w is 0,
// between minTextWidth and MaxTextLine.
func textWidth(w int) int {
	if w <= 0 {
		w = DefaultTextWidth
	}
	return min(max(w, minTextWidth), MaxTextLine)
}

// tableRow starts a line that wrapText writes as it is, without the marker: a row of a
// table (its columns would not survive wrapping; rows stay within MaxTextLine, names
// elided). The unit separator never reaches the output otherwise: TerminalSafe escapes
// control characters in data.
const tableRow = "\x1f"

// wrapText wraps every line of s that is longer than width (in runes) at spaces, but
// table rows (tableRow). A
// continuation line is indented under the text of its line: past a list marker ("  1. "),
// or two spaces deeper than the line. A word longer than the room left is cut.
func wrapText(s string, width int) string {
	if !strings.Contains(s, "\n") && !strings.HasPrefix(s, tableRow) && utf8.RuneCountInString(s) <= width {
		return s
	}
	var b strings.Builder
	lines := strings.SplitAfter(s, "\n")
	for _, l := range lines {
		nl := strings.HasSuffix(l, "\n")
		l = strings.TrimSuffix(l, "\n")
		if row, ok := strings.CutPrefix(l, tableRow); ok {
			b.WriteString(row)
		} else {
			wrapLine(&b, l, width)
		}
		if nl {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// wrapLine writes line l wrapped to width, the lines separated by newlines (none after the
// last).
func wrapLine(b *strings.Builder, l string, width int) {
	if utf8.RuneCountInString(l) <= width {
		b.WriteString(l)
		return
	}
	lead := len(l) - len(strings.TrimLeft(l, " "))
	hang := lead + 2
	if m := listMarker(l[lead:]); m > 0 {
		hang = lead + m
	}
	if hang > width/2 {
		hang = min(lead, width/2)
	}
	indent := strings.Repeat(" ", hang)
	b.WriteString(l[:lead])
	col := lead // runes on the current output line
	first := true
	rest := l[lead:]
	for rest != "" {
		// The next word and the spaces before it, kept as they are within a line.
		sp := len(rest) - len(strings.TrimLeft(rest, " "))
		rest = rest[sp:]
		end := strings.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		word := rest[:end]
		rest = rest[end:]
		if sep := strings.TrimLeft(rest, " "); strings.HasPrefix(sep, "· ") || sep == "·" {
			// A list separator stays at the end of the line before, not at the start of
			// the next.
			word += rest[:len(rest)-len(sep)] + "·"
			rest = sep[len("·"):]
		}
		if word == "" {
			break // trailing spaces
		}
		n := utf8.RuneCountInString(word)
		if !first && col+sp+n > width { // the word starts the next line
			b.WriteString("\n" + indent)
			col, sp = hang, 0
		}
		b.WriteString(strings.Repeat(" ", sp))
		col += sp
		for col+n > width && col < width { // a word longer than the room left: cut it
			room := width - col
			head, tail := splitRunes(word, room)
			b.WriteString(head)
			b.WriteString("\n" + indent)
			col, word, n = hang, tail, n-room
		}
		b.WriteString(word)
		col += n
		first = false
	}
}

// listMarker returns the length of a numbered-list marker ("1. ", "12. ") at the start of
// s, with its space, or 0.
func listMarker(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 3 || !strings.HasPrefix(s[i:], ". ") {
		return 0
	}
	return i + 2
}

// splitRunes splits s after its first n runes.
func splitRunes(s string, n int) (string, string) {
	for i := range s {
		if n == 0 {
			return s[:i], s[i:]
		}
		n--
	}
	return s, ""
}
