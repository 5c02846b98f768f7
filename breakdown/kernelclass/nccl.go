package kernelclass

import (
	"regexp"
	"slices"
	"strings"
)

// An NCCLKernel is what an NCCL kernel's name says about the collective it runs.
// Fields the name does not encode are empty.
type NCCLKernel struct {
	Op    string // collective: AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv, Generic, ...
	RedOp string // reduction operator: Sum, Prod, MinMax, PreMulSum, SumPostDiv, ...
	Algo  string // algorithm: RING, TREE, NVLS, NVLS_TREE, COLLNET_DIRECT, COLLNET_CHAIN, COLLNET, PAT
	Proto string // protocol: LL, LL128, SIMPLE
	DType string // element type as the name spells it: bf16, f32, half, float, int8_t, ...
}

// NCCL protocols and algorithms as they appear in kernel names. Algorithms of two words come
// first, so that NVLS_TREE is not read as NVLS.
var (
	ncclProtos = []string{"LL128", "LL", "SIMPLE"}
	ncclAlgos  = []string{"NVLS_TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "RING", "TREE", "NVLS", "COLLNET", "PAT"}
	ncclRedOps = []string{"Sum", "Prod", "MinMax", "Min", "Max", "PreMulSum", "SumPostDiv", "Avg"}

	// ncclDTypeRE recognises element types: recent releases spell them i8, u32, f16, bf16,
	// f8e4m3; older ones use C type names (int8_t, half, float, __nv_bfloat16).
	ncclDTypeRE = regexp.MustCompile(`^(?:[iuf](?:8|16|32|64)|bf16|f8e4m3|f8e5m2|u?int(?:8|16|32|64)_t|half|float|double|(?:__nv_)?bfloat16|__nv_fp8_e4m3|__nv_fp8_e5m2)$`)

	// ncclLegacyRE matches the names of early NCCL 2.x releases, such as
	// ncclAllReduceRingLLKernel_sum_f16.
	ncclLegacyRE = regexp.MustCompile(`^nccl(AllReduce|AllGather|ReduceScatter|Broadcast|Reduce|SendRecv)(Ring|Tree|CollNet)(LL128|LL)?Kernel_([A-Za-z]+)_(\w+)$`)
)

// DecodeNCCL reads the operation, reduction operator, algorithm, protocol and element type
// from the name of an NCCL kernel, plain or demangled (a leading "void " and the argument
// list are ignored). It understands the names of recent NCCL releases (about 2.19 on:
// ncclDevKernel_AllReduce_Sum_bf16_RING_LL, ncclDevKernel_AllGather_RING_LL,
// ncclDevKernel_SendRecv, ncclDevKernel_Generic), those of earlier 2.x releases
// (ncclKernel_AllReduce_RING_LL_Sum_half) and the oldest ones
// (ncclAllReduceRingLLKernel_sum_f16). Older names carry a reduction operator and type even
// for collectives that reduce nothing (ncclKernel_AllGather_RING_LL_Sum_int8_t); those are
// dropped, so that both naming styles decode alike. Names without a protocol in the oldest
// style use SIMPLE. It reports false for a name that is not an NCCL kernel; when it
// reports true, Op is not empty.
func DecodeNCCL(name string) (NCCLKernel, bool) {
	name = strings.TrimSpace(name)
	name = strings.TrimPrefix(name, "void ")
	if i := strings.IndexAny(name, "(<"); i >= 0 {
		name = name[:i]
	}
	name = strings.TrimSpace(name)

	var rest string
	legacy := false
	switch {
	case strings.HasPrefix(name, "ncclDevKernel_"):
		rest = name[len("ncclDevKernel_"):]
	case strings.HasPrefix(name, "ncclKernel_"):
		rest, legacy = name[len("ncclKernel_"):], true
	default:
		return decodeNCCLLegacy(name)
	}

	tok := strings.Split(rest, "_")
	op := tok[0]
	if !isNCCLOpWord(op) {
		return NCCLKernel{}, false
	}
	k := NCCLKernel{Op: op}
	var dtype []string
	for i := 1; i < len(tok); i++ {
		t := tok[i]
		if i+1 < len(tok) {
			if two := t + "_" + tok[i+1]; k.Algo == "" && slices.Contains(ncclAlgos, two) {
				k.Algo = two
				i++
				continue
			}
		}
		switch {
		case k.Algo == "" && slices.Contains(ncclAlgos, t):
			k.Algo = t
		case k.Proto == "" && slices.Contains(ncclProtos, t):
			k.Proto = t
		case k.RedOp == "" && slices.Contains(ncclRedOps, t):
			k.RedOp = t
		default:
			dtype = append(dtype, t)
		}
	}
	k.DType = ncclDType(dtype)
	if legacy && !ncclReduces(k.Op) {
		k.RedOp, k.DType = "", ""
	}
	return k, true
}

// ncclDType returns the element type among the unrecognised parts of a kernel name: all of
// them joined by '_' (int8_t, __nv_bfloat16) or else the first that is a type by itself.
func ncclDType(parts []string) string {
	if d := strings.Join(parts, "_"); ncclDTypeRE.MatchString(d) {
		return d
	}
	for _, p := range parts {
		if ncclDTypeRE.MatchString(p) {
			return p
		}
	}
	return ""
}

// decodeNCCLLegacy decodes the oldest NCCL kernel names (ncclAllReduceRingLLKernel_sum_f16).
func decodeNCCLLegacy(name string) (NCCLKernel, bool) {
	m := ncclLegacyRE.FindStringSubmatch(name)
	if m == nil {
		return NCCLKernel{}, false
	}
	k := NCCLKernel{Op: m[1], Algo: strings.ToUpper(m[2]), Proto: m[3]}
	if k.Proto == "" {
		k.Proto = "SIMPLE"
	}
	if ncclReduces(k.Op) {
		if red := m[4]; red != "" {
			k.RedOp = strings.ToUpper(red[:1]) + red[1:]
		}
		if ncclDTypeRE.MatchString(m[5]) {
			k.DType = m[5]
		}
	}
	return k, true
}

// ncclReduces reports whether the collective op applies a reduction operator.
func ncclReduces(op string) bool {
	switch op {
	case "AllReduce", "ReduceScatter", "Reduce":
		return true
	}
	return false
}

// isNCCLOpWord reports whether s can be an NCCL op in a kernel name: a letter, then letters
// and digits.
func isNCCLOpWord(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z'
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}
