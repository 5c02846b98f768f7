package render

import (
	"errors"
	"io"

	"github.com/stepstat/stepstat/breakdown"
)

// HTMLOptions control the HTML report.
type HTMLOptions struct {
	EChartsJS string
}

// DefaultHTMLOptions returns the options with the embedded ECharts source.
func DefaultHTMLOptions() HTMLOptions { return HTMLOptions{} }

// HTML writes the report as one self-contained HTML file.
func HTML(w io.Writer, r *breakdown.Report, opt HTMLOptions) error {
	return errors.New("HTML output is not built yet")
}

// DiffHTML writes a comparison as one self-contained HTML file.
func DiffHTML(w io.Writer, c *breakdown.Comparison, opt HTMLOptions) error {
	return errors.New("HTML diff output is not built yet")
}
