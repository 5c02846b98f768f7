package findings

import (
	"strings"

	"github.com/stepstat/stepstat/breakdown"
)

// A Stack is the serving stack a capture shows, for advice in its own terms: vLLM,
// SGLang, TensorRT-LLM, or plain PyTorch (a generate() loop, a script of one's own).
type Stack string

// The stacks advice is written for.
const (
	StackPyTorch Stack = "PyTorch"
	StackVLLM    Stack = "vLLM"
	StackSGLang  Stack = "SGLang"
	StackTRTLLM  Stack = "TensorRT-LLM"
)

// StackOf says which stack the report's capture shows: the engine whose NVTX step ranges
// cut the steps (breakdown.DeviceReport.MethodDetail names the dialect), else the launched
// program (nsys' PROCESS_0:COMMAND and script: vllm, sglang, trtllm-serve), else the
// engine's own knobs in the recorded environment (VLLM_*, SGLANG_*, TRTLLM_*); else
// PyTorch.
func StackOf(r *breakdown.Report) Stack {
	for i := range r.Devices {
		if s := stackIn(r.Devices[i].MethodDetail); s != "" {
			return s
		}
	}
	if s := stackIn(r.Origin.Program); s != "" {
		return s
	}
	for _, e := range r.Config {
		for prefix, s := range map[string]Stack{"VLLM_": StackVLLM, "SGLANG_": StackSGLang, "TRTLLM_": StackTRTLLM} {
			if strings.HasPrefix(e.Name, prefix) {
				return s
			}
		}
	}
	return StackPyTorch
}

// stackIn finds an engine's name in a text: "vLLM NVTX ranges", "python3 -m sglang...".
func stackIn(text string) Stack {
	t := strings.ToLower(text)
	switch {
	case strings.Contains(t, "vllm"):
		return StackVLLM
	case strings.Contains(t, "sglang"):
		return StackSGLang
	case strings.Contains(t, "tensorrt-llm"), strings.Contains(t, "trtllm"):
		return StackTRTLLM
	}
	return ""
}

// graphAdvice is how to capture the step in CUDA graphs on a stack, in its own options.
func graphAdvice(s Stack) string {
	switch s {
	case StackVLLM:
		return "capture the step in CUDA graphs (vLLM: drop --enforce-eager; the batch sizes the run uses among the captured ones)"
	case StackSGLang:
		return "capture the step in CUDA graphs (SGLang: no --disable-cuda-graph, and --cuda-graph-max-bs at least the run's batch)"
	case StackTRTLLM:
		return "capture the step in CUDA graphs (TensorRT-LLM: cuda_graph_config with enable_padding and a max_batch_size covering " +
			"the run's, in the --extra_llm_api_options YAML)"
	}
	return "capture the step in CUDA graphs (PyTorch: torch.compile(mode=\"reduce-overhead\"), or torch.cuda.CUDAGraph around " +
		"a static-shape step; transformers generate(): a static cache, cache_implementation=\"static\", with torch.compile)"
}

// customAllReduce is the one-shot (custom) all-reduce for small transfers on a stack, in its
// own options.
func customAllReduce(s Stack) string {
	switch s {
	case StackVLLM:
		return "vLLM's custom all-reduce (on unless --disable-custom-all-reduce)"
	case StackSGLang:
		return "SGLang's custom all-reduce (on unless --disable-custom-all-reduce)"
	case StackTRTLLM:
		return "a one-shot all-reduce (allreduce_strategy: ONESHOT, or AUTO, in the --extra_llm_api_options YAML)"
	}
	return "a one-shot all-reduce (FlashInfer's, or torch's symmetric-memory all-reduce)"
}
