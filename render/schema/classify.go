package schema

// This file holds the JSON layout of stepstat classify (stepstat.classify.v1); schema.go the report's.

// ClassifySchema names the JSON layout of `stepstat classify --format json`.
const ClassifySchema = "stepstat.classify.v1"

// ClassifyJSON is the JSON layout of classify: every distinct kernel name with its category.
type ClassifyJSON struct {
	Schema     string               `json:"schema"`
	Path       string               `json:"path"`
	TotalNS    int64                `json:"total_ns"`
	OtherShare float64              `json:"other_share"`
	Kernels    []ClassifyKernelJSON `json:"kernels"`
}

// ClassifyKernelJSON is one kernel name (and category, when NVTX rules split it).
type ClassifyKernelJSON struct {
	Name     string  `json:"name"`
	Category string  `json:"category"`
	Rule     string  `json:"rule"`
	Count    int     `json:"count"`
	TotalNS  int64   `json:"total_ns"`
	Share    float64 `json:"share"`
}
