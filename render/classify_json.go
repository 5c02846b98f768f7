package render

import (
	"encoding/json"
	"io"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/render/schema"
)

// ClassifyJSONWrite writes the classify result as JSON.
func ClassifyJSONWrite(w io.Writer, path string, ks []breakdown.KernelStat) error {
	out, total, other := classifyOrder(ks)
	j := schema.ClassifyJSON{Schema: schema.ClassifySchema, Path: path, TotalNS: total, OtherShare: round6(frac(other, total)), Kernels: []schema.ClassifyKernelJSON{}}
	for _, k := range out {
		j.Kernels = append(j.Kernels, schema.ClassifyKernelJSON{Name: k.Name, Category: k.Category.String(), Rule: k.Rule,
			Count: k.Count, TotalNS: int64(k.Total), Share: round6(frac(int64(k.Total), total))})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}
