package nsys_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

func TestParseEnvironment(t *testing.T) {
	env := "HOME=/root;AWS_SECRET_ACCESS_KEY=abc;HF_TOKEN=hf_x;NCCL_PROTO=Simple;MY_NCCL_PROTO=LL;" +
		"nccl_proto=LL;CUDA_VISIBLE_DEVICES=0,1;VLLM_API_KEY=k;CUDA_FOO_TOKEN=t;TORCH_SECRET_X=s;" +
		"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True;OMP_NUM_THREADS=8;NCCL_PASSWORD=p;" +
		"TRTLLM_ENABLE_PDL=1;SGLANG_AUTH_HEADER=h;NCCL_;NCCL_DEBUG=INFO;a;b;PATH=/bin;NCCL_PROTO=LL128;;" +
		"VLLM_USE_V1=1;NCCL-IB=1;GITHUB_TOKEN=g"
	got := fmt.Sprint(nsys.ParseEnvironment(env))
	want := "[{CUDA_VISIBLE_DEVICES 0,1} {NCCL_DEBUG INFO;a;b} {NCCL_PROTO Simple} {OMP_NUM_THREADS 8} " +
		"{PYTORCH_CUDA_ALLOC_CONF expandable_segments:True} {TRTLLM_ENABLE_PDL 1} {VLLM_USE_V1 1;NCCL-IB=1}]" // not a name: continues the value
	if got != want {
		t.Errorf("ParseEnvironment =\n %s\nwant\n %s", got, want)
	}
	for _, name := range []string{"AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "MY_NCCL_PROTO", "nccl_proto", "VLLM_API_KEY",
		"CUDA_FOO_TOKEN", "TORCH_SECRET_X", "NCCL_PASSWORD", "SGLANG_AUTH_HEADER", "NCCL_", "GITHUB_TOKEN", "NCCL-IB",
		"CUDA_PRIVATE_Key", "PATH", ""} {
		if nsys.ConfigKnob(name) {
			t.Errorf("ConfigKnob(%q) = true, want false", name)
		}
	}
	if len(nsys.ParseEnvironment("")) != 0 {
		t.Errorf("empty environment has knobs")
	}
}

// TestConfigCapture reads the environment of a real capture: the tensor-parallel run was
// launched with NCCL_PROTO=Simple (testdata/traces/capture-hf.log); its environment also
// holds paths, package metadata and certificate settings that must not be kept.
func TestConfigCapture(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tp2.sqlite")
	nsystest.Gunzip(t, filepath.Join("..", "testdata", "traces", "hf-qwen3moe-tp2.sqlite.gz"), path)
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range tr.Config {
		got[e.Name] = e.Value
		if !nsys.ConfigKnob(e.Name) {
			t.Errorf("kept %s, not a knob", e.Name)
		}
	}
	if got["NCCL_PROTO"] != "Simple" {
		t.Errorf("NCCL_PROTO = %q, want Simple (config %v)", got["NCCL_PROTO"], tr.Config)
	}
	for _, name := range []string{"HOME", "PATH", "NV_LIBNCCL_PACKAGE", "AWS_CA_BUNDLE", "HF_HUB_OFFLINE"} {
		if _, ok := got[name]; ok {
			t.Errorf("kept %s", name)
		}
	}
}
