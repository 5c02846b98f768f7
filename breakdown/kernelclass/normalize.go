package kernelclass

import (
	"regexp"
	"strings"
)

// Markers of anonymous namespaces in demangled names; they look like template arguments or
// argument lists but belong to the name.
const (
	unnamedNS   = "<unnamed>"
	anonymousNS = "(anonymous namespace)"
)

var (
	// normShapeRE matches tile, cluster and warp shapes: 128x8, 64x128x128, 1x1x1.
	normShapeRE = regexp.MustCompile(`\d+(?:x\d+)+`)
	// normDigitsRE matches knob, stage, load-width and alignment numbers (knob_7, stage3,
	// ldg8, align8, aligna4), which select among implementations of one kernel.
	normDigitsRE = regexp.MustCompile(`(knob_|stages?|ldg|align[a-c]?)\d+`)
	// normNvFuserRE matches nvFuser's fusion and segment numbers (_f0_c1_r0_g2).
	normNvFuserRE = regexp.MustCompile(`_f\d+_c\d+_r\d+_g\d+`)
	// normTritonSuffixRE matches the serial number Inductor appends to its kernels.
	normTritonSuffixRE = regexp.MustCompile(`_\d+$`)
)

// nvjetVariantTokens are the '_'-separated parts of cuBLAS nvjet kernel names that choose a
// schedule rather than an operation: raster order, cooperative/ping-pong and split-K.
var nvjetVariantTokens = map[string]bool{"v": true, "h": true, "coopA": true, "coopB": true, "splitK": true, "streamK": true}

// normalizeMaxDepth bounds the unwrapping of nested wrapper templates.
const normalizeMaxDepth = 4

// Normalize returns a kernel name with template arguments, tile shapes and similar variant
// details removed, so that two cuBLAS/CUTLASS tile choices of one GEMM family compare equal
// (diff uses it to report a changed variant instead of new work). The rules:
//
//   - a leading "void " and the argument list are removed;
//   - template arguments are removed, except that wrapper templates whose own name says
//     nothing (cutlass::Kernel, cutlass::Kernel2, cutlass::device_kernel,
//     flash::enable_sm90_or_later, ...) keep their first argument, itself normalised:
//     cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90>>;
//   - every shape such as 128x8 or 64x128x128 becomes NxN (tilesize128x128x64 becomes
//     tilesizeNxN), and the numbers of knob_N, stageN, stagesN, ldgN and alignN become N;
//   - in nvjet names, the schedule tokens v, h, coopA, coopB, splitK and streamK are
//     dropped; the data-type, epilogue and layout tokens (tst, bias, bz, NNT) stay;
//   - the serial number at the end of Inductor kernels (triton_poi_fused_add_3) and
//     nvFuser's fusion numbers (nvfuser_pointwise_f0_c1_r0_g4) become N.
//
// Operation words stay, so nvjet_sm90_tst_128x8_64x12_2x1_v_bz_NNT and
// nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT both become
// nvjet_sm90_tst_NxN_NxN_NxN_bz_NNT, while the TNT layout stays apart. The op that a
// generic PyTorch kernel applies lives in its template arguments and is dropped:
// at::native::vectorized_elementwise_kernel is one family. NCCL names are kept whole apart
// from their arguments (diff reports NCCL algorithms and protocols by themselves).
// Normalize is idempotent.
func Normalize(name string) string {
	return normalizeDepth(name, 0)
}

func normalizeDepth(name string, depth int) string {
	s := strings.TrimSpace(name)
	for strings.HasPrefix(s, "void ") {
		s = strings.TrimSpace(s[len("void "):])
	}
	base, first := splitKernelName(s)
	base = strings.TrimSpace(base)
	if base == "" {
		return s
	}
	base = normalizeVariants(base)
	if first = strings.TrimSpace(first); first != "" && depth < normalizeMaxDepth && isWrapperTemplate(base) {
		if inner := normalizeDepth(first, depth+1); inner != "" {
			return base + "<" + inner + ">"
		}
	}
	return base
}

// splitKernelName returns the name s without its template arguments and argument list, and
// the first argument of its last top-level template argument list (empty when none).
func splitKernelName(s string) (base, first string) {
	var (
		b          strings.Builder
		angle      int // depth of template brackets
		paren      int // depth of parentheses inside template arguments
		argStart   = -1
		firstFound bool
	)
	for i := 0; i < len(s); i++ {
		if strings.HasPrefix(s[i:], unnamedNS) {
			if angle == 0 {
				b.WriteString(unnamedNS)
			}
			i += len(unnamedNS) - 1
			continue
		}
		if strings.HasPrefix(s[i:], anonymousNS) {
			if angle == 0 {
				b.WriteString(anonymousNS)
			}
			i += len(anonymousNS) - 1
			continue
		}
		c := s[i]
		if angle == 0 {
			switch c {
			case '(':
				return b.String(), first
			case '<':
				angle = 1
				paren = 0
				argStart = i + 1
				firstFound = false
				first = ""
			case '>':
				// An unbalanced '>' is dropped.
			default:
				b.WriteByte(c)
			}
			continue
		}
		switch c {
		case '<':
			angle++
		case '>':
			angle--
			if angle == 0 && !firstFound {
				first = s[argStart:i]
				firstFound = true
			}
		case '(':
			paren++
		case ')':
			if paren > 0 {
				paren--
			}
		case ',':
			if angle == 1 && paren == 0 && !firstFound {
				first = s[argStart:i]
				firstFound = true
			}
		}
	}
	return b.String(), first
}

// isWrapperTemplate reports whether a normalised kernel base name is a wrapper template
// whose first template argument names the real kernel.
func isWrapperTemplate(base string) bool {
	last := base
	if i := strings.LastIndex(base, "::"); i >= 0 {
		last = base[i+2:]
	}
	switch last {
	case "Kernel", "Kernel2", "device_kernel":
		return true
	}
	return strings.HasPrefix(last, "enable_sm")
}

// normalizeVariants replaces shapes and variant numbers in a name without template
// arguments.
func normalizeVariants(s string) string {
	s = normShapeRE.ReplaceAllString(s, "NxN")
	s = normDigitsRE.ReplaceAllString(s, "${1}N")
	if strings.Contains(s, "nvjet") {
		parts := strings.Split(s, "_")
		kept := parts[:0]
		for _, p := range parts {
			if !nvjetVariantTokens[p] {
				kept = append(kept, p)
			}
		}
		s = strings.Join(kept, "_")
	}
	if strings.HasPrefix(s, "triton_") {
		s = normTritonSuffixRE.ReplaceAllString(s, "_N")
	}
	if strings.Contains(s, "nvfuser_") {
		s = normNvFuserRE.ReplaceAllString(s, "_fN_cN_rN_gN")
	}
	return s
}
