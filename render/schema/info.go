package schema

// This file holds the JSON layout of stepstat info (stepstat.info.v1); schema.go the report's.

// InfoSchema names the JSON layout written by InfoJSON.
const InfoSchema = "stepstat.info.v1"

// Info is the display model of `stepstat info`: what an export holds.
type Info struct {
	Schema        string       `json:"schema"`
	Path          string       `json:"path"`
	NsysVersion   string       `json:"nsys_version"`
	ExportSchema  string       `json:"export_schema"`
	MetaTable     string       `json:"meta_table"`
	StartNS       int64        `json:"start_ns"`
	EndNS         int64        `json:"end_ns"`
	DurationNS    int64        `json:"duration_ns"`
	Devices       []InfoDevice `json:"devices"`
	Tables        []InfoTable  `json:"tables"`
	NVTXRanges    int          `json:"nvtx_ranges"`
	APICalls      int          `json:"cuda_api_calls"`
	GraphLaunches int          `json:"graph_launches"`
	Warnings      []string     `json:"warnings"`
	// Reads says how each large table was read: decoded from the file by stepstat's own
	// reader, or through SQLite and why.
	Reads []InfoRead `json:"reads"`
}

// InfoRead is how one large table was read.
type InfoRead struct {
	Table  string `json:"table"`
	Direct bool   `json:"direct"`
	Why    string `json:"why,omitempty"`
}

// InfoDevice is one GPU with activity.
type InfoDevice struct {
	Device     int    `json:"device"`
	GPU        string `json:"gpu"`
	Kernels    int    `json:"kernels"`
	Memcpy     int    `json:"memcpy"`
	Memset     int    `json:"memset"`
	GraphExecs int    `json:"graph_execs"`
	KernelNS   int64  `json:"kernel_ns"`
	// GraphNS is the summed time of the CUDA graph executions traced at graph level
	// (their kernels have no rows, so kernel_ns leaves it out).
	GraphNS int64 `json:"graph_ns"`
}

// InfoTable is one table and its row count.
type InfoTable struct {
	Name string `json:"name"`
	Rows int64  `json:"rows"`
}
