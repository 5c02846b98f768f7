// Package render writes stepstat's results as text, JSON, CSV and HTML. It takes finished
// results from packages breakdown, findings and compare (and trace metadata from package
// nsys) and never reads a database. It is the only package that knows go-echarts.
//
// Files are named <subject>_<format>.go (report_text.go, report_json.go, report_csv.go,
// report_html.go, diff_text.go ...): a format's file writes one subject in one format.
// <subject>.go holds the subject's words that several formats use (diff.go, ranks.go,
// headline.go, config.go ...), words.go the words every subject uses, safe.go the
// escaping writers of untrusted text, page_html.go, chart_html.go and axes_html.go (log
// axes, wrapped legends) what every HTML page uses. A format's file calls words, never another format's file. The JSON contract's
// types are in package schema, which imports only the standard library.
package render
