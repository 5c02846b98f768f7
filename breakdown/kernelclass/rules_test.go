package kernelclass

import (
	"os"
	"strings"
	"testing"
)

const exampleRules = "../../testdata/rules/example.rules"

func TestParseRulesExample(t *testing.T) {
	f, err := os.Open(exampleRules)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rules, err := ParseRules(f, "example.rules")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		cat  Category
		re   string
	}{
		{"example.rules:15", MoERouting, `^void mymodel::route_tokens<`},
		{"example.rules:18", AllReduce, `(?i)my_fused_ar_norm`},
		{"example.rules:21", Sampling, `softmax_warp_forward`},
		{"example.rules:24", GEMM, `^void skinny_dot_[0-9]+x[0-9]+ #v2`},
	}
	if len(rules) != len(want) {
		t.Fatalf("got %d rules, want %d: %v", len(rules), len(want), rules)
	}
	for i, w := range want {
		r := rules[i]
		if r.Name != w.name || r.Source != w.name || r.Category != w.cat || r.Match.String() != w.re {
			t.Errorf("rule %d = {%s %v %q %s}, want {%s %v %q}", i, r.Name, r.Category, r.Match, r.Source, w.name, w.cat, w.re)
		}
	}

	cls := NewClassifier(rules)
	tests := []struct {
		name string
		cat  Category
		rule string
	}{
		{"void mymodel::route_tokens<int>(int*)", MoERouting, "example.rules:15"},
		{"void My_Fused_AR_Norm_kernel<8>(float*)", AllReduce, "example.rules:18"},
		// A user rule takes precedence over the built-in elementwise rule.
		{"void <unnamed>::softmax_warp_forward<float, float, float, 6, false, false>(float*, float const*, int, int, int, bool const*, int, bool)", Sampling, "example.rules:21"},
		{"void skinny_dot_8x1 #v2(float*)", GEMM, "example.rules:24"},
		// Built-in rules still apply after the user rules.
		{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", AllReduce, "nccl-allreduce"},
	}
	for _, tt := range tests {
		cat, rule := cls.Classify(tt.name)
		if cat != tt.cat || rule == nil || rule.Name != tt.rule {
			t.Errorf("Classify(%q) = %v, %v; want %v by %s", tt.name, cat, rule, tt.cat, tt.rule)
		}
	}
	if c, _ := DefaultClassifier().Classify(tests[2].name); c != Elementwise {
		t.Errorf("built-in category of softmax_warp_forward = %v, want elementwise", c)
	}
}

func TestParseRulesPrecedence(t *testing.T) {
	// A user rule can move a kernel that a built-in rule would put elsewhere.
	rules, err := ParseRules(strings.NewReader("elementwise nvjet_\n"), "r")
	if err != nil {
		t.Fatal(err)
	}
	cls := NewClassifier(rules)
	if c, r := cls.Classify("nvjet_sm90_tst_128x8_64x12_2x1_v_bz_NNT"); c != Elementwise || r.Source != "r:1" {
		t.Errorf("user rule not first: %v %v", c, r)
	}
	all := cls.Rules()
	if len(all) != len(DefaultClassifier().Rules())+1 || all[0].Source != "r:1" || all[1].Source != "builtin" {
		t.Errorf("Rules() does not list the user rule first")
	}
}

func TestParseRulesErrors(t *testing.T) {
	tests := []struct {
		name, input string
		want        []string // substrings of the error
	}{
		{"bad category", "# c\n\ngemm x\nmatmul foo\n", []string{"my.rules:4:", `unknown category "matmul"`}},
		{"bad regexp", "gemm ok\nattention (unclosed\n", []string{"my.rules:2:", "bad regular expression", "missing closing )"}},
		{"missing regexp", "gemm\n", []string{"my.rules:1:", "missing regular expression"}},
		{"missing regexp spaces", "gemm   \t \n", []string{"my.rules:1:", "missing regular expression"}},
		{"other", "other foo\n", []string{"my.rules:1:", "other cannot be assigned"}},
		{"idle", "  idle foo\n", []string{"my.rules:1:", "idle cannot be assigned"}},
		{"several", "foo a\ngemm [\n", []string{"my.rules:1:", "my.rules:2:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := ParseRules(strings.NewReader(tt.input), "my.rules")
			if err == nil {
				t.Fatalf("no error; rules %v", rules)
			}
			if rules != nil {
				t.Errorf("rules returned with an error: %v", rules)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseRulesEmpty(t *testing.T) {
	rules, err := ParseRules(strings.NewReader("\n# only comments\n   # indented comment\n"), "empty")
	if err != nil || len(rules) != 0 {
		t.Errorf("ParseRules(comments) = %v, %v", rules, err)
	}
}

func TestNewClassifierSkipsUnusableRules(t *testing.T) {
	builtin := len(DefaultClassifier().Rules())
	bad := []Rule{
		{Name: "nil", Category: GEMM},
		{Name: "other", Category: Other, Match: builtinRules[0].Match},
		{Name: "idle", Category: Idle, Match: builtinRules[0].Match},
		{Name: "range", Category: NumCategories + 3, Match: builtinRules[0].Match},
	}
	if n := len(NewClassifier(bad).Rules()); n != builtin {
		t.Errorf("NewClassifier kept %d unusable rules", n-builtin)
	}
}

// TestRulesErrorListsOnlyAssignable checks that the categories an error offers are the
// ones a rule may use: each category the unknown-word error lists parses as a rule, and
// other, untraced_graph and idle are not offered (they were listed, then refused).
func TestRulesErrorListsOnlyAssignable(t *testing.T) {
	_, err := ParseRules(strings.NewReader("matmul foo\n"), "my.rules")
	if err == nil {
		t.Fatal("unknown category accepted")
	}
	_, list, ok := strings.Cut(err.Error(), "want one of ")
	if !ok {
		t.Fatalf("error %q lists no categories", err)
	}
	list = strings.TrimSuffix(list, ")")
	offered := map[string]bool{}
	for _, name := range strings.Split(list, ", ") {
		offered[name] = true
		if _, err := ParseRules(strings.NewReader(name+" foo\n"), "my.rules"); err != nil {
			t.Errorf("error offers %q, but a rule for it fails: %v", name, err)
		}
	}
	for _, c := range Order {
		if offered[c.String()] != c.Assignable() {
			t.Errorf("%s: offered %v, assignable %v", c, offered[c.String()], c.Assignable())
		}
	}
	for _, refused := range []string{"other", "untraced_graph", "idle"} {
		_, err := ParseRules(strings.NewReader(refused+" foo\n"), "my.rules")
		if err == nil || strings.Contains(strings.SplitN(err.Error(), "want one of", 2)[1], refused) {
			t.Errorf("%s: error %v", refused, err)
		}
	}
}
