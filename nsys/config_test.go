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

// TestRedactValue (issue 34, item 3): knob names pass the allow-list, but values carry
// credentials: query parameters, SAS signatures, webhook paths, libpq passwords, bearer
// tokens, api keys, salts, long random strings. Their parts are redacted and said to be;
// ordinary knob values are kept as they are.
func TestRedactValue(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"VLLM_MODEL_URL", "https://hub.example/m?revision=main&token=hf_abcd1234", "https://hub.example/m?revision=main&token=[redacted]"},
		{"TORCH_BLOB", "https://acct.blob.core.windows.net/c/w.pt?sv=2022-11-02&se=2026-12-31&sig=Zm9vYmFy%2Bx", "https://acct.blob.core.windows.net/c/w.pt?sv=2022-11-02&se=2026-12-31&sig=[redacted]"},
		{"VLLM_ALERT_URL", "https://hooks.slack.com/services/T00/B00/xyzzy", "https://hooks.slack.com/[redacted]"},
		{"SGLANG_NOTIFY", "https://discord.com/api/webhooks/123/abc-def", "https://discord.com/api/webhooks/[redacted]"},
		{"VLLM_DB", "host=db.internal user=svc password=pgpw dbname=m", "host=db.internal user=svc password=[redacted] dbname=m"},
		{"VLLM_HEADERS", "Authorization: Bearer sk-live", "Authorization: Bearer [redacted]"},
		{"TRTLLM_HDR", "{'Authorization': 'Basic dXNlcjpwdw=='}", "{'Authorization': 'Basic [redacted]'}"},
		{"SGLANG_OPTS", "--api-key=k1 --port 30000", "--api-key=[redacted] --port 30000"},
		{"VLLM_OPTS", "api_key: k1, timeout: 5", "api_key: [redacted], timeout: 5"},
		{"VLLM_CACHE_SALT", "pepper", "[redacted]"},
		{"VLLM_X", "PREFIX_SALT=pepper;x", "PREFIX_SALT=[redacted];x"},
		{"NCCL_X", "AKIAIOSFODNN7EXAMPLE", "[redacted]"},
		{"TORCH_X", "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "ghp_[redacted]"},
		{"VLLM_HTTPS_PROXY", "http://alice:hunter2@proxy:3128", "http://proxy:3128"},
		// Kept: ordinary knobs.
		{"NCCL_SOCKET_IFNAME", "eth0", "eth0"},
		{"CUDA_VISIBLE_DEVICES", "GPU-5a1b2c3d-0e1f-2a3b-4c5d-6e7f8a9b0c1d,GPU-1", "GPU-5a1b2c3d-0e1f-2a3b-4c5d-6e7f8a9b0c1d,GPU-1"},
		{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True,max_split_size_mb:512", "expandable_segments:True,max_split_size_mb:512"},
		{"TORCH_CUDA_ARCH_LIST", "8.0;9.0a", "8.0;9.0a"},
		{"VLLM_ATTENTION_BACKEND", "FLASHINFER_MLA_BACKEND", "FLASHINFER_MLA_BACKEND"},
		{"TORCHINDUCTOR_CACHE_DIR", "/tmp/torchinductor_root/Llama-3.1-8B-Instruct", "/tmp/torchinductor_root/Llama-3.1-8B-Instruct"},
		{"NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1", "mlx5_0:1,mlx5_1:1"},
		{"NCCL_TOPO_FILE", "/etc/nccl/topo.xml", "/etc/nccl/topo.xml"},
		{"VLLM_HOST", "http://10.0.0.1:8000/v1?model=llama", "http://10.0.0.1:8000/v1?model=llama"},
	} {
		got, changed := nsys.RedactValue(tc.name, tc.in)
		if got != tc.want || changed != (tc.in != tc.want) {
			t.Errorf("RedactValue(%s, %q) = %q, %v; want %q, %v", tc.name, tc.in, got, changed, tc.want, tc.in != tc.want)
		}
		if again, ch := nsys.RedactValue(tc.name, got); again != got || ch && tc.name != "VLLM_CACHE_SALT" {
			t.Errorf("RedactValue of its own output %q = %q, %v", got, again, ch)
		}
	}
}

// TestRedactValueKeys: a key is a credential by its parts, not by a substring of it.
func TestRedactValueKeys(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"signal_timeout=5,encode=utf8,monkey_patch=1,passthrough:1", "signal_timeout=5,encode=utf8,monkey_patch=1,passthrough:1"},
		{"X-Amz-Signature=abc&X-Amz-Credential=AK/2026&accessToken=t", "X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted]&accessToken=[redacted]"},
		{"a=1;DB_PASSWD=x;b=2", "a=1;DB_PASSWD=[redacted];b=2"},
	} {
		if got, _ := nsys.RedactValue("VLLM_X", tc.in); got != tc.want {
			t.Errorf("RedactValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRedactValueShapes (issue 41, item 4 and the round-four leftover): keys inside
// JSON-quoted values, Hugging Face tokens of letters only, AWS secret keys holding "/",
// flags followed by their value after a space, and a URL's first query parameter are
// redacted; paths, device lists and flags of other names are kept.
func TestRedactValueShapes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"api_key": "k1abc", "timeout": 5}`, `{"api_key": "[redacted]", "timeout": 5}`},
		{`{"hf_token":"xyzzy","model":"m"}`, `{"hf_token":"[redacted]","model":"m"}`},
		{"hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "hf_[redacted]"},
		{"token hf_abcdefghijklmnopqrstuvwxyzABCD here", "token [redacted] here"},
		{"aws wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY end", "aws [redacted] end"},
		{"s3=wJalrXUtnFEMI+K7MDENGabPxRfiCYEXAMPLEKEY", "s3=[redacted]"},
		{"--password hunter2 --port 30000", "--password [redacted] --port 30000"},
		{"--hf-token 'xyzzy' --tp 2", "--hf-token '[redacted]' --tp 2"},
		{"https://hub.example/m?token=abc123def&revision=main", "https://hub.example/m?token=[redacted]&revision=main"},
		{"sk-proj-abcdefghijklmnopqrstuvwx", "sk-proj-[redacted]"},
		// Kept.
		{"--max-num-batched-tokens 8192 --port 30000", "--max-num-batched-tokens 8192 --port 30000"},
		{"/models/Meta/Llama31/Instruct/snapshots/v2/x", "/models/Meta/Llama31/Instruct/snapshots/v2/x"},
		{"expandable_segments:True,max_split_size_mb:512", "expandable_segments:True,max_split_size_mb:512"},
		{"--password --x", "--password --x"},
	} {
		got, changed := nsys.RedactValue("VLLM_X", tc.in)
		if got != tc.want || changed != (tc.in != tc.want) {
			t.Errorf("RedactValue(%q) = %q, %v; want %q", tc.in, got, changed, tc.want)
		}
		if again, _ := nsys.RedactValue("VLLM_X", got); again != got {
			t.Errorf("RedactValue of its own output %q = %q", got, again)
		}
	}
}

// TestConfigKnobWholeParts (issue 41, item 14): a credential word counts as a whole part
// of the name (or a part's joined ending: APITOKEN), not as a substring of any part.
func TestConfigKnobWholeParts(t *testing.T) {
	for _, name := range []string{"VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE", "NCCL_IB_PKEY", "VLLM_MAX_NUM_BATCHED_TOKENS",
		"SGLANG_KEYWORDS", "TORCH_COMPILE_PASSTHROUGH", "CUDA_SESSIONLESS", "NCCL_IB_SL"} {
		if !nsys.ConfigKnob(name) {
			t.Errorf("ConfigKnob(%q) = false, want true: no credential word is a part of its name", name)
		}
	}
	for _, name := range []string{"VLLM_API_KEY", "VLLM_API_KEYS", "VLLM_APITOKEN", "SGLANG_DB_PASSWORD", "NCCL_SECRETS",
		"TORCH_HUB_COOKIES", "TRTLLM_S3_CREDS", "VLLM_HF_TOKEN", "CUDA_ACCESSKEY"} {
		if nsys.ConfigKnob(name) {
			t.Errorf("ConfigKnob(%q) = true, want false", name)
		}
	}
}
