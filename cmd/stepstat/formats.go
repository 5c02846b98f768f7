package main

import (
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/render"
	"github.com/stepstat/stepstat/render/schema"
)

// A format is one value of a command's --format: its name and how it writes the
// command's result. noTerminal formats (HTML) refuse a terminal as their output.
type format[T any] struct {
	name       string
	noTerminal bool
	write      func(w io.Writer, v T) error
}

// formats is a command's table of formats, its default first: the flag's help, the check
// of its value and the writing all read it.
type formats[T any] []format[T]

// names lists the formats as help and errors say them: "text, json or html".
func (fs formats[T]) names() string {
	ns := make([]string, len(fs))
	for i, f := range fs {
		ns[i] = f.name
	}
	if len(ns) < 2 {
		return strings.Join(ns, "")
	}
	return strings.Join(ns[:len(ns)-1], ", ") + " or " + ns[len(ns)-1]
}

// flag registers -f/--format, whose default is the first format.
func (fs formats[T]) flag(set *pflag.FlagSet) *string {
	return set.StringP("format", "f", fs[0].name, "output format: "+fs.names())
}

// lookup returns the format named name, or cmd's usage error naming the formats.
func (fs formats[T]) lookup(cmd, name string) (format[T], error) {
	for _, f := range fs {
		if f.name == name {
			return f, nil
		}
	}
	return format[T]{}, usagef(cmd, "unknown format %q (want %s)", name, fs.names())
}

// reportOutput is what report writes: the report and the options of its formats.
type reportOutput struct {
	rep  *findings.Report
	text render.TextOptions
	html render.HTMLOptions
}

var reportFormats = formats[*reportOutput]{
	{name: "text", write: func(w io.Writer, v *reportOutput) error { return render.Text(w, v.rep, v.text) }},
	{name: "json", write: func(w io.Writer, v *reportOutput) error { return render.JSON(w, v.rep) }},
	{name: "csv", write: func(w io.Writer, v *reportOutput) error { return render.CSV(w, v.rep.Report) }},
	{name: "html", noTerminal: true, write: func(w io.Writer, v *reportOutput) error { return render.HTML(w, v.rep, v.html) }},
}

// diffOutput is what diff writes: the comparison and the width its text answer wraps to.
type diffOutput struct {
	c     *compare.Comparison
	width int // textWidth's
}

var diffFormats = formats[*diffOutput]{
	{name: "text", write: func(w io.Writer, v *diffOutput) error { return render.DiffText(w, v.c, v.width) }},
	{name: "json", write: func(w io.Writer, v *diffOutput) error { return render.DiffJSONWrite(w, v.c) }},
	{name: "html", noTerminal: true, write: diffHTML},
}

// diffHTML writes the comparison's HTML page with the embedded ECharts.
func diffHTML(w io.Writer, v *diffOutput) error {
	return render.DiffHTML(w, v.c, render.DefaultHTMLOptions())
}

// classifyOutput is what classify writes: the trace's path and its kernel table.
type classifyOutput struct {
	path string
	ks   []breakdown.KernelStat
}

var classifyFormats = formats[*classifyOutput]{
	{name: "text", write: func(w io.Writer, v *classifyOutput) error { return render.ClassifyText(w, v.path, v.ks) }},
	{name: "json", write: func(w io.Writer, v *classifyOutput) error { return render.ClassifyJSONWrite(w, v.path, v.ks) }},
}

var infoFormats = formats[*schema.Info]{
	{name: "text", write: render.InfoText},
	{name: "json", write: render.InfoJSON},
}
