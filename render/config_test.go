package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/render/schema"
)

// configReport is a report with a run configuration (one value hostile) and an NCCL kernel
// whose name says LL.
func configReport(cfg []nsys.EnvVar) *breakdown.Report {
	nc := kernelclass.NCCLKernel{Op: "AllReduce", RedOp: "Sum", Algo: "RING", Proto: "LL", DType: "bf16"}
	return &breakdown.Report{Path: "t.sqlite", Config: cfg,
		Kernels: []breakdown.KernelStat{{Name: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", Category: kernelclass.AllReduce,
			Count: 4, Total: 4000, NCCL: &nc}}}
}

func TestReportConfig(t *testing.T) {
	cfg := []nsys.EnvVar{{Name: "NCCL_PROTO", Value: "Simple"}, {Name: "VLLM_X", Value: "<script>alert(1)</script>\x1b[2J"}}
	r := configReport(cfg)

	var text bytes.Buffer
	if err := Text(&text, findings.Of(r), TextOptions{Width: MaxTextLine}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Run configuration: NCCL_PROTO=Simple  VLLM_X=<script>alert(1)</script>\\x1b[2J\n",
		"NCCL protocol: NCCL_PROTO=Simple set in the environment; kernel names say LL (the name is the kernel variant launched, not proof of the protocol setting)\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}

	var js bytes.Buffer
	if err := JSON(&js, findings.Of(r)); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Config  map[string]string   `json:"config"`
		Kernels []schema.KernelJSON `json:"kernels"`
	}
	if err := json.Unmarshal(js.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Config["NCCL_PROTO"] != "Simple" || len(v.Config) != 2 {
		t.Errorf("json config %v", v.Config)
	}
	if n := v.Kernels[0].NCCL; n == nil || n.Proto != "LL" || n.ProtoSet != "Simple" {
		t.Errorf("json nccl %+v, want proto LL, proto_set Simple", n)
	}
	// Without a recorded environment: "config" is {} and the note says NCCL_PROTO is not there.
	js.Reset()
	if err := JSON(&js, findings.Of(configReport(nil))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"config":{}`) || strings.Contains(js.String(), "proto_set") {
		t.Errorf("json without config: %s", js.String())
	}
	if n := ncclProtoNote(nil, []string{"LL", "LL128", "LL"}); n != "NCCL kernel names say LL, LL128 (the name is the kernel variant launched, not proof of the protocol setting); NCCL_PROTO is not in the recorded environment" {
		t.Errorf("note %q", n)
	}

	var page bytes.Buffer
	if err := HTML(&page, findings.Of(r), HTMLOptions{EChartsJS: "/*echarts*/"}); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	if strings.Contains(h, "<script>alert(1)") || !strings.Contains(h, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("config value not escaped in HTML")
	}
	if !strings.Contains(h, `<table id="config">`) || !strings.Contains(h, "NCCL_PROTO=Simple set in the environment; kernel names say LL") {
		t.Errorf("HTML lacks the config table or the NCCL note")
	}
}

func TestDiffConfigFirst(t *testing.T) {
	side := func(label string, cfg []nsys.EnvVar) compare.Side {
		return compare.Side{Label: label, Reports: []*findings.Report{findings.Of(configReport(cfg))}}
	}
	c := compare.Compare(side("base", []nsys.EnvVar{{Name: "NCCL_ALGO", Value: "Ring"}, {Name: "OMP_NUM_THREADS", Value: "8"}}),
		side("new", []nsys.EnvVar{{Name: "NCCL_PROTO", Value: "LL"}, {Name: "OMP_NUM_THREADS", Value: "8"}}),
		breakdown.Decode, compare.Options{})
	var text bytes.Buffer
	if err := DiffText(&text, c, 0); err != nil {
		t.Fatal(err)
	}
	s := text.String()
	block := "Run configuration changed (recorded environment, allow-listed knobs):\n  NCCL_ALGO: Ring -> (unset)\n  NCCL_PROTO: (unset) -> LL\n\n"
	i := strings.Index(s, block)
	if i < 0 || i > strings.Index(s, "time/step") {
		t.Errorf("diff text does not lead with the changed knobs:\n%s", s)
	}
	if strings.Contains(s, "OMP_NUM_THREADS") {
		t.Errorf("an unchanged knob is listed:\n%s", s)
	}
	if !strings.Contains(s, "new: NCCL_PROTO=LL set in the environment; kernel names say LL") {
		t.Errorf("diff text lacks the NCCL note:\n%s", s)
	}
	j, err := json.Marshal(NewDiffJSON(c))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"config_changes":[{"name":"NCCL_ALGO","base":"Ring","new":null},{"name":"NCCL_PROTO","base":null,"new":"LL"}]`; !strings.Contains(string(j), want) {
		t.Errorf("diff json lacks %s:\n%s", want, j)
	}
	var page bytes.Buffer
	if err := DiffHTML(&page, c, HTMLOptions{EChartsJS: "/*echarts*/"}); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	if i := strings.Index(h, `<table id="config-changes">`); i < 0 || i > strings.Index(h, "<main>") {
		t.Errorf("diff HTML does not lead with the changed knobs")
	}
}
