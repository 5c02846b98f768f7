// Package breakdown breaks the GPU timeline of an LLM inference server down into steps and
// per-category time. It reads no trace file (package nsys does), does not decide what a
// kernel name is (package kernelclass does), and neither draws conclusions nor compares
// reports (packages findings and compare do, on its results).
//
// Summarize (summarize.go) runs the pipeline; each stage has its own file, in this order:
//
//  1. options.go: the Options, checked before any work.
//  2. classify.go: each distinct kernel name classified once (kernelclass), and the
//     Options.NVTXCategories overrides per launch; activity.go merges a device's kernels, memory
//     operations and graph executions into one timeline in start order.
//  3. kernels.go: the whole-trace kernel table (runs beside the steps).
//  4. steps.go: the one dispatcher of step detection per device, running the detectors of
//     the method asked for (method.go: the one table of methods and auto's chain): NVTX
//     ranges (nvtxsteps.go, with the work outside them), else the iterations of the serving
//     loop from host signals (cuts.go: syncs, graph launches, input copies; stepfind.go
//     groups the segments they cut), split at the ends of the model's forwards
//     (forwards.go: the sampler after the lm_head; speculative rounds; pauses between
//     requests), else periodicity (periodic.go), else the whole trace; owners.go maps host
//     ranges to the GPU work they launched; selfcheck.go warns when the steps look wrong;
//     context.go then classifies kernels by their place in their step.
//  5. sweep.go: one sweep of the timeline accounts each step's exclusive and busy time,
//     counts and idle gaps (long timelines in two halves at once).
//  6. hostgaps.go: idle gaps attributed to what the host was doing.
//  7. phases.go: prefill, decode or mixed for steps whose detection gave no phase: by
//     kernel mix, then by copies (input copies per token against the read-back per sequence).
//  8. summary.go and stats.go: the steps of one phase summarised (medians, quantiles,
//     means that add up, shares).
//  9. ranks.go: the rank view of multi-GPU traces (collectives matched across devices);
//     sol.go: the speed-of-light view.
//
// report.go holds the result types; units.go how a time and a share are written in text.
package breakdown
