package render

import (
	"encoding/json"
	"io"

	"github.com/stepstat/stepstat/render/schema"
)

// InfoJSON writes the info model as indented JSON.
func InfoJSON(w io.Writer, in *schema.Info) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(in)
}
