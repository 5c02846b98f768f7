package breakdown

import (
	"regexp"
	"strconv"
)

// vllmTokens reads vLLM's step NVTX text, execute_context_C(c)_generation_G(g): C prompt
// requests of c tokens, G generating requests of g tokens.
var vllmTokens = regexp.MustCompile(`execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)`)

// StepTokens returns the tokens a step generates when its NVTX text says (vLLM's
// execute_context_C(c)_generation_G(g): the g generation tokens; a prompt chunk samples no
// token until its last chunk, so c is not counted), and false when the text does not say.
// With speculative decoding vLLM's g counts the tokens it scheduled (drafts included), not
// those accepted.
func StepTokens(s *Step) (int, bool) {
	m := vllmTokens.FindStringSubmatch(s.Label)
	if m == nil {
		return 0, false
	}
	gen, _ := strconv.Atoi(m[4])
	return gen, true
}
