package kernelclass

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"
)

// A Rule assigns a category to the kernels whose demangled name its regular expression
// matches. Rules are tried in order; the first match wins.
type Rule struct {
	Name     string         // e.g. "nccl-allreduce"; FILE:LINE for rules read by ParseRules
	Category Category       // never Other, UntracedGraph or Idle
	Match    *regexp.Regexp // matched (unanchored) against the demangled kernel name
	Source   string         // "builtin", or FILE:LINE for rules read by ParseRules
}

// headRE returns a pattern that matches alt only in the head of a demangled name: before its
// template arguments and argument list, with <unnamed> and (anonymous namespace) allowed
// in the namespace path. Rules that run before attention use it, since attention kernels
// may mention rotary or KV-cache details in their template arguments.
func headRE(alt string) string {
	return `^(?:[^<(]|<unnamed>|\(anonymous namespace\))*?(?:` + alt + `)`
}

// builtinRuleTable is the built-in rule table, in match order. It is data: to recognise a
// new kernel family, add a line in the right group. The groups, in order:
//
//  1. memcpy/memset pseudo-kernels, as nsys stats and other tools name them;
//  2. communication: all-reduce first (NCCL, then custom one-/two-shot kernels, so that a
//     fused all-reduce+RMSNorm or GEMM+all-reduce kernel counts as all-reduce), then all
//     other collectives and the MoE all-to-all dispatch/combine kernels;
//  3. MoE, before GEMM: routing and bookkeeping, then expert kernels with specific names,
//     then any other kernel that names MoE or experts (expert compute);
//  4. sampling, before attention and before the generic reduction kernels;
//  5. Inductor's generated pointwise/reduction kernels, and the elementwise kernels whose
//     names mention attention words (KV-cache writes, rotary embedding, step metadata such
//     as slot mappings and KV indices), matched in the name's head only;
//  6. attention;
//  7. GEMM (including GEMV, split-K reduce, quantised GEMMs and convolutions);
//  8. elementwise: norms, activations, quantisation, copies, fills, reductions, indexing;
//  9. a last fallback that counts any other CUTLASS kernel as GEMM.
//
// No needle is a vendor or project word ("flashinfer", "vllm::", "tensorrt_llm"): those
// projects ship samplers, all-reduces and norms as well as attention.
//
// Generic PyTorch kernels serve many purposes and their names cannot tell them apart; the
// choices are: softmax_warp_forward and _scatter_gather_elementwise_kernel are elementwise;
// gatherTopK, sbtopk/mbtopk, bitonicSortKVInPlace, cub radix sorts, cunn_SoftMaxForward
// (softmax over a vocabulary-sized row) and ArgMax reductions are sampling. An MoE router
// written with torch ops (softmax, topk, sort, scatter) therefore lands in elementwise and
// sampling; map its NVTX range to moe_routing (breakdown.Options.NVTXCategories) to count it so.
// Convolutions (cuDNN, TensorRT implicit GEMM) count as gemm. vllm::act_and_mul_kernel
// (SiLU-and-multiply of dense MLPs and experts alike) is elementwise. nvFuser fusions are
// elementwise unless their scheduler is matmul.
var builtinRuleTable = []struct {
	name string
	cat  Category
	re   string
}{
	// 1. Memory pseudo-kernels.
	{"memcpy-memset", Memory, `^\[CUDA mem(?:cpy|set)|^Mem(?:cpy|set)(?: |$)`},

	// 2. Communication.
	{"nccl-allreduce", AllReduce, `(?i)nccl\w*all_?reduce`},
	{"cross-device-reduce", AllReduce, `cross_device_reduce_\w*stage`},
	{"allreduce", AllReduce, `(?:^|[^m])all_?reduce|All_?[Rr]educe|ALL_?REDUCE`},
	{"lamport", AllReduce, `[Ll]amport`},
	{"nccl", Collective, `(?i)\b(?:nccl|rccl|msccl|pccl)\w*kernel`},
	{"allgather", Collective, `(?:^|[^m])all_?gather|All_?[Gg]ather|ALL_?GATHER`},
	{"reducescatter", Collective, `(?i)reduce_?scatter`},
	{"alltoall", Collective, `(?i)all_?to_?all|moe_?a2a|a2a_?(?:dispatch|combine)`},
	{"ep-dispatch-combine", Collective, `(?:^|[^A-Za-z0-9_])(?:dispatch|combine)Kernel\b|deep_ep::(?:\w+::)*\w*(?:dispatch|combine)`},
	{"userbuffers", Collective, `(?i)userbuffers`},

	// 3. MoE. Finalize (unpermute and weighted sum) names routing but is expert work; routing
	// and bookkeeping come before the expert GEMMs, whose names their arguments may mention.
	{"moe-finalize", MoEExpert, `(?i)finalize\w*(?:moe|routing)|moe\w*finalize|finalize::finalizeKernel`},
	{"moe-router", MoERouting, `(?i)topk_?gating|gating_?softmax|topk_?softmax|grouped_?topk|deepseek_v3_topk|moe_fused_gate|noaux_tc|topk_forward|router|routing|bitmatrix`},
	{"moe-align-sort", MoERouting, `(?i)moe_?align|align_block_size|count_and_sort|sort_tokens|moe_?sort|expert_?counts?|expert_?ids|expert\w{0,8}prefix_?sum|build_?expert_?maps|count_?and_?indice|computeCumsumDevice|move_?indice|computeStridesTmaWarpSpecialized`},
	{"moe-permute", MoERouting, `(?i)moe_?(?:un)?permute|expandInputRows|(?:^|[^a-z])ep_(?:scatter|gather)|(?:pre|post)_reorder`},
	{"fused-moe", MoEExpert, `(?i)fused_?moe|fmoe|moe_?sum|moe\w{0,16}gemm|moe_?mlp`},
	{"expert-grouped-gemm", MoEExpert, `(?i)grouped_?\w{0,24}gemm|group_?gemm|gemm_?grouped|m_grouped|GroupProblemShape|batched_triton_kernel`},
	{"moe-activation", MoEExpert, `doActivationKernel|_silu_and_mul_post_quant|_masked_index_copy_group_quant`},
	{"moe", MoEExpert, `(?i)moe|expert`},

	// 4. Sampling.
	{"sampling", Sampling, `(?:^|[^a-z])sampling|Sampling|(?i:gumbel|multinomial|rejection_\w*sample|recovered_tokens)`},
	{"top-k-top-p", Sampling, `(?i)top_?k_?top_?p|top_?p_?(?:renorm|mask)|top_?k_?(?:renorm|mask)|topk_?stage\d|air_?top_?p|penalt(?:y|ies)`},
	{"argmax", Sampling, `Arg(?:Max|Min)Ops|(?i:arg_?max)`},
	{"softmax-vocab", Sampling, `cunn_SoftMaxForward`},
	{"sort-topk", Sampling, `(?i)radix_?sort|bitonic_?sort|sort_?kv_?in_?place|segmented_?sort|sort_postprocess|sbtopk|mbtopk|gather_?top_?k`},
	{"decoding", Sampling, `(?i)(?:stop|bad)_?words|length_?criterion|beam_?search`},

	// 5. Generated elementwise kernels, and elementwise kernels named after attention details.
	{"inductor-pointwise", Elementwise, `^(?:void )?triton_(?:poi|red|per|for)_`},
	{"kv-cache-write", Elementwise, headRE(`(?i)(?:reshape|concat|quant)_and_cache|and_cache_kernel|update_?kv_?cache|k_?cache_?scatter|append_?paged_?kv_?cache|kv_?cache_?(?:write|store|update|scatter|copy)|store_?kv_?cache|set_kv_buffer|write_req_to_token`)},
	{"rotary", Elementwise, headRE(`[Rr]otary|(?:^|[^A-Za-z])m?rope|Rope|RoPE|ROPE`)},
	{"step-metadata", Elementwise, headRE(`(?i)advance_step|slot_mapping|kv_indices|block_tables?_|req_to_token|prepare_inputs`)},

	// 6. Attention.
	{"flash-attention", Attention, `(?i)flash_?(?:fwd|bwd|attn|mla|decod)|flash::`},
	{"fmha", Attention, `(?i)fmha|mmha|xqa|multi_?head|(?:^|[^a-z])mha(?:[^a-z]|$)`},
	{"sdpa", Attention, `(?i)sdpa|scaled_dot_product|efficient_attention`},
	{"attention", Attention, `(?i)attention|attn`},
	{"paged-attention", Attention, `(?:Batch|Single)(?:Decode|Prefill)|BatchMLA|MergeStates|PODWithKVCache|(?i:merge_(?:attn_)?states|paged_?attention|paged_?mqa|mqa_?logits|reduce_segments|topk_?per_?row)`},
	{"mla", Attention, `(?:^|[^A-Za-z])mla|MLA`},
	{"triton-decode-attention", Attention, `^(?:void )?_fwd_(?:grouped_)?kernel(?:_stage\d|_unified)?\b`},
	{"linear-attention", Attention, `(?i)gated_?delta|delta_?rule|fused_gdn|causal_conv1d|selective_(?:scan|state)|chunk_(?:scan|state|cumsum|fwd)|state_passing|mamba|recompute_w_u|chunk_scaled_dot_kkt|solve_tril|chunk_local_cumsum`},

	// 7. GEMM.
	{"nvjet", GEMM, `(?i)nvjet`},
	{"gemm", GEMM, `(?i)gemm|gemv`},
	{"splitk-reduce", GEMM, `(?i)split_?k_?reduce|reduce_?split_?k`},
	{"blas", GEMM, `(?i)cublas|cijk_|wvsplitk|matmul|scaled_mm|marlin|machete|mul_mat|dequantize_(?:block|mul_mat)|[sb]gmv|lora_(?:expand|shrink)`},
	{"bmm", GEMM, `(?:^|[\s:])bmm_`},
	{"triton-template", GEMM, `^(?:void )?triton_tem_`},
	{"convolution", GEMM, `(?i)scudnn|hcudnn|convolve|conv2d|fprop|dgrad|wgrad|winograd|fft2d_`},
	{"nvfuser-matmul", GEMM, `nvfuser_\w*matmul`},

	// 8. Elementwise.
	{"norm", Elementwise, `[Nn]orm(?:[^a-z]|$)|[Nn]ormali[sz]|NORM`},
	{"activation", Elementwise, `(?i)silu|gelu|relu|swiglu|geglu|act_and_mul|activation|sigmoid|tanh|softplus|softmax`},
	{"quantize", Elementwise, `(?i)quant|cvt_`},
	{"copy-fill", Elementwise, `(?i)copy|cast|fill|memset|memcpy|transpose|permut|reformat|cat_?array|concat|arange|where|masked|clamp|embedding|dropout|im2col|col2im|flip`},
	{"reduce", Elementwise, `(?i)reduc|pooling|cumsum|scan|moments|loss`},
	{"index", Elementwise, `(?i)index|indices|gather|scatter|nonzero|device_?select|unique`},
	{"torch-elementwise", Elementwise, `(?i)elementwise|vectorized|unrolled|multi_tensor_apply|foreach|pointwise|distribution`},
	{"nvfuser", Elementwise, `nvfuser_`},
	// XLA names a kernel after its fusion (gemm_fusion_dot* matched GEMM above): loop and
	// input fusions, wrapped single ops, numbered plain fusions.
	{"xla-fusion", Elementwise, `^(?:loop|input|wrapped)_[a-z0-9_]+$|^(?:[a-z]+_)*fusion(?:_\d+)*(?:\.\d+)?$`},
	{"cupy", Elementwise, `^cupy_`},

	// 9. Fallback.
	{"cutlass", GEMM, `(?i)cutlass`},
}

// builtinRules holds the compiled built-in rules.
var builtinRules = compileBuiltinRules()

func compileBuiltinRules() []Rule {
	rules := make([]Rule, len(builtinRuleTable))
	for i, r := range builtinRuleTable {
		rules[i] = Rule{Name: r.name, Category: r.cat, Match: regexp.MustCompile(r.re), Source: "builtin"}
	}
	return rules
}

// ParseRules reads user rules in the rules-file format (testdata/rules/example.rules; the
// README's "How steps and time are counted") and returns them in file order; source names
// the input in rule names and errors.
//
// The format is line-oriented. Blank lines and lines whose first non-blank character is
// '#' are ignored. Every other line is a category identifier (as printed by
// Category.String, except other and idle), white space, and a regular expression in Go
// (RE2) syntax that extends to the end of the line (trailing white space removed), so it may
// contain spaces and '#'. The expression is matched, unanchored, against the demangled
// kernel name; use (?i) for case-insensitive matching. For example:
//
//	# Our fused kernels.
//	moe_routing  ^void mymoe::route_tokens<
//	allreduce    (?i)my_custom_ar_kernel
//
// Each rule is named FILE:LINE after source and its line number. Errors name FILE:LINE
// and the problem; all bad lines are reported.
func ParseRules(r io.Reader, source string) ([]Rule, error) {
	var (
		rules []Rule
		errs  []error
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for lineno := 1; sc.Scan(); lineno++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pos := fmt.Sprintf("%s:%d", source, lineno)
		word, expr := line, ""
		if i := strings.IndexFunc(line, unicode.IsSpace); i >= 0 {
			word, expr = line[:i], strings.TrimSpace(line[i:])
		}
		cat, err := ParseAssignable(word)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", pos, err))
			continue
		case expr == "":
			errs = append(errs, fmt.Errorf("%s: missing regular expression after %q", pos, word))
			continue
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: bad regular expression: %w", pos, err))
			continue
		}
		rules = append(rules, Rule{Name: pos, Category: cat, Match: re, Source: pos})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("reading %s: %w", source, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rules, nil
}
