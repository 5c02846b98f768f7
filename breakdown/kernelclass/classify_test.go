package kernelclass

import (
	"bufio"
	"cmp"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/stepstat/stepstat/nsys/nsystest"
)

// kernelNamesFile is the classifier corpus: <category> TAB <name> per line.
const kernelNamesFile = "../../testdata/kernel_names.txt"

func TestCategoryString(t *testing.T) {
	want := []string{"other", "gemm", "attention", "moe_routing", "moe_expert", "allreduce",
		"collective", "elementwise", "sampling", "memory", "untraced_graph", "idle"}
	for c := Category(0); c < NumCategories; c++ {
		if got := c.String(); got != want[c] {
			t.Errorf("Category(%d).String() = %q, want %q", c, got, want[c])
		}
		back, err := ParseCategory(c.String())
		if err != nil || back != c {
			t.Errorf("ParseCategory(%q) = %v, %v; want %v", c.String(), back, err, c)
		}
	}
	if got := NumCategories.String(); got != "category(12)" {
		t.Errorf("NumCategories.String() = %q", got)
	}
	if got := Category(200).String(); got != "category(200)" {
		t.Errorf("Category(200).String() = %q", got)
	}
	if c, err := ParseCategory(" GEMM "); err != nil || c != GEMM {
		t.Errorf("ParseCategory(\" GEMM \") = %v, %v", c, err)
	}
	for _, bad := range []string{"", "matmul", "category(3)", "moe-routing"} {
		if _, err := ParseCategory(bad); err == nil {
			t.Errorf("ParseCategory(%q): no error", bad)
		} else if !strings.Contains(err.Error(), "moe_routing") {
			t.Errorf("ParseCategory(%q) error %q does not list the categories", bad, err)
		}
	}
}

func TestOrder(t *testing.T) {
	want := "gemm attention moe_routing moe_expert allreduce collective elementwise sampling memory other untraced_graph idle"
	var names []string
	seen := map[Category]bool{}
	for _, c := range Order {
		names = append(names, c.String())
		if seen[c] {
			t.Errorf("Order lists %v twice", c)
		}
		seen[c] = true
	}
	if got := strings.Join(names, " "); got != want {
		t.Errorf("Order = %s\nwant    %s", got, want)
	}
	if len(Order) != int(NumCategories) {
		t.Errorf("Order has %d categories, want %d", len(Order), NumCategories)
	}
}

func TestAssignable(t *testing.T) {
	for c := Category(0); c <= NumCategories; c++ {
		want := c != Other && c != UntracedGraph && c != Idle && c != NumCategories
		if got := c.Assignable(); got != want {
			t.Errorf("%v.Assignable() = %v, want %v", c, got, want)
		}
	}
	// A rules file cannot put kernels in untraced_graph.
	if _, err := ParseRules(strings.NewReader("untraced_graph ^foo$\n"), "x.rules"); err == nil ||
		!strings.Contains(err.Error(), "cannot be assigned") {
		t.Errorf("rule for untraced_graph: error %v, want 'cannot be assigned'", err)
	}
}

func TestPriority(t *testing.T) {
	// Highest first.
	want := []Category{AllReduce, Collective, Attention, MoEExpert, GEMM, MoERouting, Sampling,
		Elementwise, Other, UntracedGraph, Memory, Idle}
	if len(want) != int(NumCategories) {
		t.Fatalf("test lists %d categories, want %d", len(want), NumCategories)
	}
	for i := 1; i < len(want); i++ {
		if hi, lo := want[i-1].Priority(), want[i].Priority(); hi <= lo {
			t.Errorf("%v.Priority() = %d, not above %v.Priority() = %d", want[i-1], hi, want[i], lo)
		}
	}
	if p := NumCategories.Priority(); p >= Idle.Priority() {
		t.Errorf("NumCategories.Priority() = %d, want below idle", p)
	}
}

// kernelNameCase is one line of the classifier corpus.
type kernelNameCase struct {
	line int
	want Category
	name string
}

func readKernelNames(t testing.TB) []kernelNameCase {
	t.Helper()
	f, err := os.Open(kernelNamesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []kernelNameCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cat, name, ok := strings.Cut(text, "\t")
		if !ok {
			t.Fatalf("%s:%d: no tab between category and name", kernelNamesFile, line)
		}
		c, err := ParseCategory(cat)
		if err != nil {
			t.Fatalf("%s:%d: %v", kernelNamesFile, line, err)
		}
		cases = append(cases, kernelNameCase{line, c, name})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func TestClassifyKernelNames(t *testing.T) {
	cls := DefaultClassifier()
	cases := readKernelNames(t)
	if len(cases) < 100 {
		t.Fatalf("%s: only %d names", kernelNamesFile, len(cases))
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("line%d", tc.line), func(t *testing.T) {
			got, rule := cls.Classify(tc.name)
			if got != tc.want {
				ruleName := "<none>"
				if rule != nil {
					ruleName = rule.Name
				}
				t.Errorf("%s:%d: Classify(%q) = %v (rule %s), want %v",
					kernelNamesFile, tc.line, tc.name, got, ruleName, tc.want)
			}
			if (got == Other) != (rule == nil) {
				t.Errorf("Classify(%q) = %v with rule %v", tc.name, got, rule)
			}
		})
	}
}

func TestClassifyCoversEveryKernelCategory(t *testing.T) {
	seen := map[Category]bool{}
	for _, tc := range readKernelNames(t) {
		seen[tc.want] = true
	}
	for c := Category(0); c < NumCategories; c++ {
		if c != Idle && c != UntracedGraph && !seen[c] {
			t.Errorf("%s has no %v kernel", kernelNamesFile, c)
		}
	}
}

func TestBuiltinRules(t *testing.T) {
	rules := DefaultClassifier().Rules()
	if len(rules) == 0 {
		t.Fatal("no built-in rules")
	}
	names := map[string]bool{}
	for _, r := range rules {
		if r.Source != "builtin" {
			t.Errorf("rule %s: source %q", r.Name, r.Source)
		}
		if names[r.Name] {
			t.Errorf("rule name %s used twice", r.Name)
		}
		names[r.Name] = true
		if r.Category == Other || r.Category >= Idle {
			t.Errorf("rule %s assigns %v", r.Name, r.Category)
		}
	}
	// Rules returns a copy.
	rules[0].Category = Idle
	if DefaultClassifier().Rules()[0].Category == Idle {
		t.Error("Rules does not return a copy")
	}
}

// classifyNaive returns the first of the classifier's rules that matches name, trying
// every rule's regular expression (no substring prefilter).
func classifyNaive(c *Classifier, name string) *Rule {
	for _, r := range c.Rules() {
		if r.Match.MatchString(name) {
			return &r
		}
	}
	return nil
}

// TestClassifyPrefilter checks that the substring prefilter changes no result.
func TestClassifyPrefilter(t *testing.T) {
	cls := DefaultClassifier()
	names := []string{"", "ALLREDUCE", "ſampling", "\u212aernel", "xAll_Reduce", "Sampling"}
	for _, tc := range readKernelNames(t) {
		names = append(names, tc.name, strings.ToUpper(tc.name))
	}
	for _, name := range names {
		_, r := cls.Classify(name)
		want := classifyNaive(cls, name)
		if (r == nil) != (want == nil) || r != nil && r.Name != want.Name {
			t.Errorf("Classify(%q) = rule %v, but the first matching rule is %v", name, r, want)
		}
	}
}

func TestRequiredSubstrings(t *testing.T) {
	tests := []struct {
		re   string
		want []string
	}{
		{`(?i)nvjet`, []string{"nvjet"}},
		{`Sampling|(?i:gumbel)`, []string{"sampling", "gumbel"}},
		{`(?:^|[^m])all_?reduce`, []string{"reduce"}},
		{`^void foo<`, []string{"void foo<"}},
		{`cross_device_reduce_\w*stage`, []string{"cross_device_reduce_"}},
		{`(ab)+cd`, []string{"ab"}},
		{`x{2,}`, []string{"x"}},
		{`a*|b`, nil},
		{`[Rr]otary`, []string{"otary"}},
		{`.*`, nil},
		{`^$`, nil},
		{`ſ`, nil},
	}
	for _, tt := range tests {
		got := requiredSubstrings(regexp.MustCompile(tt.re))
		if !slices.Equal(got, tt.want) {
			t.Errorf("requiredSubstrings(%q) = %q, want %q", tt.re, got, tt.want)
		}
	}
	if requiredSubstrings(nil) != nil {
		t.Error("requiredSubstrings(nil) != nil")
	}
}

func TestClassifyOther(t *testing.T) {
	cls := DefaultClassifier()
	for _, name := range []string{"", "Kernel", "main_41_gpu", "my_kernel(float*)", "\x00\xff"} {
		if c, r := cls.Classify(name); c != Other || r != nil {
			t.Errorf("Classify(%q) = %v, %v; want other, nil", name, c, r)
		}
	}
}

// TestPublicTraces classifies the kernels of real exports and checks the share of kernel
// time left as other (the test corpus: nsystest.PublicTraces).
func TestPublicTraces(t *testing.T) {
	files := nsystest.PublicTraces(t)
	cls := DefaultClassifier()
	for _, path := range files {
		base := filepath.Base(path)
		t.Run(strings.TrimSuffix(base, ".sqlite"), func(t *testing.T) {
			kernels, ok := readTraceKernels(t, path)
			if !ok {
				t.Skip("no kernel table")
			}
			var total, other int64
			var others []traceKernel
			byCat := map[Category]int64{}
			for _, k := range kernels {
				c, _ := cls.Classify(k.name)
				byCat[c] += k.ns
				total += k.ns
				if c == Other {
					other += k.ns
					others = append(others, k)
				}
			}
			if total == 0 {
				t.Skip("no kernel time")
			}
			share := float64(other) / float64(total)
			var parts []string
			for _, c := range Order {
				if byCat[c] > 0 {
					parts = append(parts, fmt.Sprintf("%v %.1f%%", c, 100*float64(byCat[c])/float64(total)))
				}
			}
			t.Logf("%s: %d names, other %.2f%% of kernel time; %s", base, len(kernels), 100*share, strings.Join(parts, ", "))
			slices.SortFunc(others, func(a, b traceKernel) int {
				return cmp.Or(cmp.Compare(b.ns, a.ns), strings.Compare(a.name, b.name))
			})
			for i, k := range others {
				if i == 5 {
					break
				}
				t.Logf("  other %5.2f%% %6d× %.120s", 100*float64(k.ns)/float64(total), k.count, k.name)
			}
			strict := strings.HasPrefix(base, "cs336a2-") || strings.HasPrefix(base, "nsys-ai__") || strings.HasPrefix(base, "nvfuser__")
			if strict && share >= 0.05 {
				t.Errorf("%s: %.2f%% of kernel time is other, want < 5%%", base, 100*share)
			}
		})
	}
}

// traceKernel is one distinct kernel name of a trace with its launch count and total time.
type traceKernel struct {
	name  string
	count int64
	ns    int64
}

// readTraceKernels returns the distinct demangled kernel names of an export; ok is false
// when the export has no kernel table.
func readTraceKernels(t *testing.T, path string) (kernels []traceKernel, ok bool) {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?mode=ro&immutable=1"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	err = db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'CUPTI_ACTIVITY_KIND_KERNEL'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		return nil, false
	}
	rows, err := db.Query(`SELECT s.value, count(*), sum(k.end-k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName GROUP BY k.demangledName`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k traceKernel
		if err := rows.Scan(&k.name, &k.count, &k.ns); err != nil {
			t.Fatal(err)
		}
		kernels = append(kernels, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return kernels, true
}

func FuzzClassify(f *testing.F) {
	nsystest.NeedSeeds(f) // testdata/fuzz/FuzzClassify: names of the kernel families
	cls := DefaultClassifier()
	f.Fuzz(func(t *testing.T, name string) {
		c, r := cls.Classify(name)
		if c >= NumCategories {
			t.Fatalf("Classify(%q) = category %d, out of range", name, c)
		}
		if c == Idle {
			t.Fatalf("Classify(%q) = idle", name)
		}
		if (c == Other) != (r == nil) {
			t.Fatalf("Classify(%q) = %v with rule %v", name, c, r)
		}
		if r != nil && r.Category != c {
			t.Fatalf("Classify(%q) = %v by rule %s of category %v", name, c, r.Name, r.Category)
		}
		if c2, r2 := cls.Classify(name); c2 != c || r2 != r {
			t.Fatalf("Classify(%q) is not deterministic", name)
		}
		if want := classifyNaive(cls, name); (r == nil) != (want == nil) || r != nil && r.Name != want.Name {
			t.Fatalf("Classify(%q) = rule %v, but the first matching rule is %v", name, r, want)
		}
		n := Normalize(name)
		if n2 := Normalize(n); n2 != n {
			t.Fatalf("Normalize is not idempotent: %q -> %q -> %q", name, n, n2)
		}
	})
}

func BenchmarkClassifyCorpus(b *testing.B) {
	cases := readKernelNames(b)
	cls := DefaultClassifier()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, tc := range cases {
			cls.Classify(tc.name)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cases)), "ns/name")
}

// TestNameRole checks the roles kernel names give the context rules and the step finder.
func TestNameRole(t *testing.T) {
	for name, want := range map[string]Role{
		"sbtopk::gatherTopK<float, unsigned int, 2, false>":                                                                     RoleTopK,
		"at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, ArgMaxOps<float>>>":                                      RoleSampler,
		"softmax_warp_forward<float, float, float, 3, false, false>":                                                            RoleGate,
		"triton_poi_fused_index_3":                                                                                              RoleGather,
		"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_sum_1":                                                                RoleNormCombine, // the combine fused with the norm
		"triton_per_fused_gather_mean_mul_pow_rsqrt_sigmoid_squeeze_sum_40":                                                     RoleNormCombine, // GLM-5 compiled: sigmoid weights too
		"at::native::vectorized_gather_kernel<16, long>(char *, char *, T2 *, int, long)":                                       RoleWeightGather,
		"at::native::<unnamed>::indexSelectSmallIndex<c10::BFloat16, long, unsigned int>":                                       RoleWeightGather,
		"at::native::indexFuncSmallIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, at::native::<unnamed>::ReduceAdd>":        RoleCombine,
		"at::native::reduce_kernel<128, 4, ReduceOp<c10::BFloat16, func_wrapper_t<c10::BFloat16, sum_functor<c10::BFloat16>>>>": RoleCombine,
		"at::native::vectorized_layer_norm_kernel<c10::BFloat16, float, true>":                                                  RoleNorm,
		"input_reduce_fusion_5":  RoleReduce,
		"input_reduce_fusion":    RoleReduce,
		"loop_multiply_fusion_4": RoleNone,
		"gemm_fusion_dot_10":     RoleNone,
	} {
		if got := NameRole(name); got != want {
			t.Errorf("NameRole(%q) = %d, want %d", name, got, want)
		}
	}
}
