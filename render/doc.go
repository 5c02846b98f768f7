// Package render writes stepstat's results as text, JSON, CSV and HTML. It takes finished
// results from packages breakdown, findings and compare (and trace metadata from package
// nsys) and never reads a database. It is the only package that knows go-echarts.
package render
