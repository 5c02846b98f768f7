package nsys_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
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
		"{PYTORCH_CUDA_ALLOC_CONF expandable_segments:True} {TRTLLM_ENABLE_PDL 1} {VLLM_USE_V1 1}]" // NCCL-IB=1: not a name, dropped
	if got != want {
		t.Errorf("ParseEnvironment =\n %s\nwant\n %s", got, want)
	}
	for _, name := range []string{"AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "MY_NCCL_PROTO", "nccl_proto", "VLLM_API_KEY",
		"CUDA_FOO_TOKEN", "TORCH_SECRET_X", "NCCL_PASSWORD", "SGLANG_AUTH_HEADER", "NCCL_", "GITHUB_TOKEN", "NCCL-IB",
		"CUDA_PRIVATE_Key", "PATH", "", "VLLM_REDIS_PASS", "SGLANG_DB_PWD", "TRTLLM_S3_CREDS", "TORCH_HUB_COOKIE",
		"VLLM_JWT", "PYTORCH_PRIVATE_PEM", "NCCL_SSL_CERT_FILE", "VLLM_SESSION_ID", "torch_hub_cookie_x"} {
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
// TestParseEnvironmentHostile (issue 25, items 1 and 2): credentials under allowed
// prefixes are dropped, URL credentials are stripped, and a part holding "=" is never glued
// onto the value before it, whatever its name.
func TestParseEnvironmentHostile(t *testing.T) {
	env := "NCCL_DEBUG=WARN;spring.datasource.password=s3cr3t;BASH_FUNC_deploy%%=() { curl -H 'Authorization: Bearer sk-live-1'; x=1; };" +
		"VLLM_REDIS_PASS=r3dis;SGLANG_DB_PWD=pw;TRTLLM_S3_CREDS=AKIA:xyz;TORCH_HUB_COOKIE=c00kie;VLLM_JWT=eyJhbGc;" +
		"PYTORCH_PRIVATE_PEM=-----BEGIN;VLLM_API_KEY=k;VLLM_HTTPS_PROXY=http://alice:hunter2@proxy:3128;" +
		"VLLM_NO_PROXY=https://bob@a.example/x,http://c:d@b.example:80,http://plain.example;" +
		"TORCH_ENDPOINT=s3://u:p@ss@bucket/key@1;NCCL_SOCKET_IFNAME=eth0;tail"
	got := map[string]string{}
	for _, e := range nsys.ParseEnvironment(env) {
		got[e.Name] = e.Value
	}
	want := map[string]string{
		"NCCL_DEBUG":         "WARN",
		"VLLM_HTTPS_PROXY":   "http://proxy:3128",
		"VLLM_NO_PROXY":      "https://a.example/x,http://b.example:80,http://plain.example",
		"TORCH_ENDPOINT":     "s3://bucket/key@1",
		"NCCL_SOCKET_IFNAME": "eth0;tail",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ParseEnvironment =\n %v\nwant\n %v", got, want)
	}
	for _, secret := range []string{"s3cr3t", "sk-live", "Bearer", "r3dis", "AKIA", "c00kie", "eyJ", "BEGIN", "hunter2", "alice", "bob", "u:p"} {
		for k, v := range got {
			if strings.Contains(k+"="+v, secret) {
				t.Errorf("kept %s=%s, which holds %q", k, v, secret)
			}
		}
	}
	if s := nsys.StripUserinfo("mailto:a@b; x@y; http://host/p@q"); s != "mailto:a@b; x@y; http://host/p@q" {
		t.Errorf("StripUserinfo changed a value without URL credentials: %q", s)
	}
}

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
