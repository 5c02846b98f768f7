package kernelclass

import "strings"

// A Role is what a kernel's name says about its place in a layer or a forward, beside its
// category: the context rules of package breakdown (a sampler after the lm_head samples the
// token, a top-k before the first expert GEMM routes) and its step finder (a sampler ends a
// forward) read it. Like the rule table, it is name knowledge and lives here.
type Role uint8

// Roles.
const (
	RoleNone    Role = iota
	RoleGate         // softmax or sigmoid: may start routing
	RoleTopK         // top-k or sort
	RoleSampler      // argmax, multinomial and other samplers
	RoleNorm         // layer or RMS norm (in PyTorch: the mean of squares)
	RoleGather       // an inductor kernel that indexes (after routing: expert weights)
	// RoleReduce is an XLA reduction fusion (input_reduce_fusion): after the forward's last
	// GEMM (the lm_head) it is the sampler's argmax; elsewhere a norm's or a softmax's
	// reduction.
	RoleReduce
)

// NameRole reads a kernel name (inductor names list their fused ops:
// triton_per_fused__softmax_topk_3; XLA names their fusion kind: input_reduce_fusion_2).
func NameRole(name string) Role {
	s := strings.ToLower(name)
	switch {
	case strings.Contains(s, "topk") || strings.Contains(s, "top_k") || strings.Contains(s, "sort"):
		return RoleTopK
	case strings.Contains(s, "argmax") || strings.Contains(s, "argmin") || strings.Contains(s, "multinomial") || strings.Contains(s, "sampl"):
		return RoleSampler
	case strings.Contains(s, "softmax") || strings.Contains(s, "sigmoid"):
		return RoleGate
	case strings.HasPrefix(s, "triton_") && strings.Contains(s, "_index"):
		return RoleGather
	case strings.HasPrefix(s, "triton_"):
		// Inductor fuses the next layer's norm into expert kernels: only the weighted
		// combine (a sum) fused with the norm ends expert work.
		if strings.Contains(s, "rsqrt") && strings.Contains(s, "_sum") {
			return RoleNorm
		}
		return RoleNone
	case strings.Contains(s, "layer_norm") || strings.Contains(s, "rms_norm") || strings.Contains(s, "rmsnorm") ||
		strings.Contains(s, "layernorm") || strings.Contains(s, "meanops") || (strings.Contains(s, "mean") && strings.Contains(s, "rsqrt")):
		return RoleNorm
	case isXLAReduce(s):
		return RoleReduce
	}
	return RoleNone
}

// isXLAReduce reports whether a lower-cased name is an XLA reduction fusion
// (input_reduce_fusion, input_reduce_fusion_3, wrapped_reduce...).
func isXLAReduce(s string) bool {
	return strings.HasPrefix(s, "input_reduce_fusion") || strings.HasPrefix(s, "reduce_fusion") ||
		(strings.HasPrefix(s, "wrapped_reduce") && !strings.Contains(s, "<"))
}
