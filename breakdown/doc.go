// Package breakdown breaks the GPU timeline of an LLM inference server down into steps and
// per-category time. It does not read trace files (package nsys does) and does not classify
// kernel names (package kernelclass does).
package breakdown
