package render

import (
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/render/schema"
)

// configJSON is the configuration as a JSON object (never nil: {} when none).
func configJSON(cfg []nsys.EnvVar) map[string]string {
	out := make(map[string]string, len(cfg))
	for _, e := range cfg {
		out[e.Name] = e.Value
	}
	return out
}

func configChangesJSON(cs []compare.ConfigChange) []schema.ConfigChangeJSON {
	out := []schema.ConfigChangeJSON{}
	for _, c := range cs {
		j := schema.ConfigChangeJSON{Name: c.Name}
		if c.BaseSet {
			j.Base = &c.Base
		}
		if c.NewSet {
			j.New = &c.New
		}
		out = append(out, j)
	}
	return out
}
