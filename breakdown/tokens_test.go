package breakdown

import "testing"

// TestStepTokens reads the tokens of vLLM's step NVTX text: the generation tokens, not the
// prompt's; other texts say nothing.
func TestStepTokens(t *testing.T) {
	for _, tc := range []struct {
		label string
		n     int
		ok    bool
	}{
		{"execute_context_0(0)_generation_8(8)", 8, true},
		{"execute_context_0(0)_generation_4(20)", 20, true}, // speculative: scheduled tokens, drafts included
		{"execute_context_2(1024)_generation_6(6)", 6, true},
		{"execute_context_4(512)_generation_0(0)", 0, true},
		{"step[decode bs=8]", 0, false},
		{"", 0, false},
	} {
		if n, ok := StepTokens(&Step{Label: tc.label}); n != tc.n || ok != tc.ok {
			t.Errorf("%q: %d %v; want %d %v", tc.label, n, ok, tc.n, tc.ok)
		}
	}
}
