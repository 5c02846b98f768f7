package nsys

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// String returns a stable text dump of the parsed model: metadata, tables, processes,
// devices, then kernels, memory operations, graph executions, API calls, NVTX ranges and
// warnings, one item per line, in the order the Trace holds them. Times are raw
// nanoseconds. It is the golden format of the reader tests.
//
// Free text is printed last on a line: kernel and API names as they are unless they hold
// control characters or spaces at either end (then strconv.Quote), NVTX texts and device
// names always quoted.
func (t *Trace) String() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	t.dumpHead(&b, p)
	t.dumpActivities(p)
	t.dumpRanges(p)
	t.dumpTail(p)
	return b.String()
}

// dumpHead prints the metadata, the tables, the processes and the devices.
func (t *Trace) dumpHead(b *strings.Builder, p func(format string, args ...any)) {
	p("meta nsys=%s schema=%s table=%s\n", orDash(t.Meta.NsysVersion), orDash(t.Meta.SchemaVersion), orDash(t.Meta.MetaTable))
	b.WriteString("tables")
	for _, tb := range t.Tables {
		b.WriteByte(' ')
		b.WriteString(tb.Name)
		if tb.Rows >= 0 {
			p("=%d", tb.Rows)
		}
	}
	b.WriteByte('\n')
	p("kernel table %t\n", t.HasKernelTable)

	p("procs %d (proc globalPid)\n", len(t.Procs))
	for i, g := range t.Procs {
		p("  %d %d\n", i, g)
	}

	p("devices %d (id memory sms bandwidth name)\n", len(t.Devices))
	for _, d := range t.Devices {
		p("  %d %d %d %d %s\n", d.ID, d.Memory, d.SMs, d.Bandwidth, strconv.Quote(d.Name))
	}
}

// dumpActivities prints the kernels, memory operations, graph executions and API calls.
func (t *Trace) dumpActivities(p func(format string, args ...any)) {
	p("kernels %d (start end dev stream corr proc name)\n", len(t.Kernels))
	for _, k := range t.Kernels {
		st := t.lookupSite(k.Site)
		p("  %d %d %d %d %d %d %s\n", k.Start, k.End, st.Device, st.Stream, k.Correlation, st.Proc, t.lookup(t.Names, uint32(st.Name)))
	}

	p("memops %d (start end dev stream corr proc bytes kind)\n", len(t.Memops))
	for _, m := range t.Memops {
		p("  %d %d %d %d %d %d %d %s\n", m.Start, m.End, m.Device, m.Stream, m.Correlation, m.Proc, m.Bytes, token(m.Kind.String()))
	}

	p("graphs %d (start end dev stream corr proc)\n", len(t.Graphs))
	for _, g := range t.Graphs {
		p("  %d %d %d %d %d %d\n", g.Start, g.End, g.Device, g.Stream, g.Correlation, g.Proc)
	}

	p("api %d (start end kind name corr thread proc)\n", len(t.APICalls))
	for _, c := range t.APICalls {
		w := Caller{Name: uint8(min(len(t.APINames), 255))}
		if int(c.Caller) < len(t.Callers) {
			w = t.Callers[c.Caller]
		}
		p("  %d %d %s %s %d %d %d\n", c.Start, c.End, token(w.Kind.String()), t.lookup(t.APINames, uint32(w.Name)), c.Correlation, w.Thread, w.Proc)
	}
}

// dumpRanges prints the NVTX ranges and domains.
func (t *Trace) dumpRanges(p func(format string, args ...any)) {
	p("ranges %d (start end depth thread domain proc text)\n", len(t.Ranges))
	for _, r := range t.Ranges {
		end := strconv.FormatInt(int64(r.End), 10)
		if r.Open() {
			end = "open"
		}
		text := fmt.Sprintf("<bad text %d>", r.Text)
		if int(r.Text) < len(t.RangeTexts) {
			text = strconv.Quote(t.RangeTexts[r.Text])
		}
		p("  %d %s %d %d %d %d %s\n", r.Start, end, r.Depth, r.Thread, r.Domain, r.Proc, text)
	}

	ids := make([]uint32, 0, len(t.Domains))
	for id := range t.Domains {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	p("domains %d (id name)\n", len(ids))
	for _, id := range ids {
		p("  %d %s\n", id, strconv.Quote(t.Domains[id]))
	}
}

// dumpTail prints the run configuration and the warnings.
func (t *Trace) dumpTail(p func(format string, args ...any)) {
	if len(t.Config) > 0 { // only then: fixtures without a recorded environment print as before
		p("config %d (name value)\n", len(t.Config))
		for _, e := range t.Config {
			p("  %s %s\n", e.Name, strconv.Quote(e.Value))
		}
	}
	p("warnings %d\n", len(t.Warnings))
	for _, w := range t.Warnings {
		p("  %s\n", strings.ReplaceAll(w.Error(), "\n", `\n`))
	}
}

// lookup returns names[i] for printing, or a marker when i is out of range.
// lookupSite returns the site of id, or a site whose name reads "<bad name>" when out of range.
func (t *Trace) lookupSite(id SiteID) Site {
	if int(id) >= len(t.Sites) {
		return Site{Name: NameID(len(t.Names))}
	}
	return t.Sites[id]
}

func (t *Trace) lookup(names []string, i uint32) string {
	if int(i) >= len(names) {
		return fmt.Sprintf("<bad name %d>", i)
	}
	return printable(names[i])
}

// printable returns s unchanged when it reads unambiguously as the last field of a line,
// else quoted.
func printable(s string) string {
	if s == "" || strings.TrimSpace(s) != s || strings.HasPrefix(s, `"`) ||
		strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// token turns a kind name with spaces ("graph launch") into one field ("graph-launch").
func token(s string) string { return strings.ReplaceAll(s, " ", "-") }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return strconv.Quote(s)
}
