// Package steps finds the steps of each device of a trace: the iterations of an inference
// server's serving loop (package breakdown's doc says what a step is and how each method
// finds it). It reads the trace (package nsys) and what kernel names say (package
// kernelclass); package breakdown accounts the steps it finds.
//
// The API is one call per device and its result: Detect returns a Detection, the steps'
// boundaries (Boundary: start, phase, label, batch, draft forwards, what cut it), the
// method that found them and the model's forward ends; MatchNVTX maps the NVTX step ranges
// of every device first (ranges are per thread, work per device). A Timeline is a device's
// GPU work in start order (kernels, memory operations, graph executions), with each kernel's
// category (by name, or a per-kernel table the caller fills: NVTX category rules, a
// kernel's place in its step).
//
// The files, in the order a detection runs:
//
//   - activity.go: the Timeline and its Activities.
//   - steps.go: Detect, the one dispatcher, running the detectors of the method asked for;
//     method.go: the one table of methods and auto's chain, and ParseStepMethod.
//   - nvtxsteps.go: NVTX step ranges (dialects of TensorRT-LLM, vLLM, SGLang, plain names,
//     or the user's expression), mapped to the work they launched (owners.go: host ranges to
//     the GPU work their threads launched), with the work outside them.
//   - cuts.go: host signals (syncs, read-backs, graph launches, input copies) cut a
//     device's timeline into segments; stepfind.go groups them into steps; forwards.go
//     splits them at the ends of the model's forwards (the sampler after the lm_head),
//     speculative rounds and pauses between requests.
//   - periodic.go: the period of the kernel sequence, when no signal cuts it.
package steps
