package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// Hostile inputs, round three (issue 25): credentials in the recorded environment, one
// escaping path for all terminal text, bounded amplification and child output, --device.
// Every input is a real capture of testdata/traces changed by SQL here.

// capture decompresses the real capture testdata/traces/NAME.sqlite.gz to dst.
func capture(t *testing.T, name, dst string) {
	t.Helper()
	gunzipTo(t, filepath.Join(filepath.Dir(demoCapture), name+".sqlite.gz"), dst)
}

// execSQL runs statements on the SQLite file at path.
func execSQL(t *testing.T, path, q string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", firstN(q, 200), err)
	}
}

// appendEnv appends parts (raw bytes allowed) to the recorded environment of the export.
func appendEnv(t *testing.T, path, parts string) {
	t.Helper()
	execSQL(t, path, `UPDATE TARGET_INFO_SYSTEM_ENV SET value = value || ';' || CAST(? AS TEXT) WHERE name = 'DeviceEnvironment'`, []byte(parts))
}

// runOK runs stepstat and fails the test unless it exits 0; it returns stdout.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("stepstat %q: exit %d, stderr %q", args, code, firstN(stderr, 300))
	}
	return stdout
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunConfigCredentials (issue 25, items 1 and 2): credentials under the allowed
// prefixes, URL credentials, and parts holding "=" after a knob reach no output: text,
// JSON, HTML, diff.
func TestRunConfigCredentials(t *testing.T) {
	inTempDir(t)
	capture(t, "dense-eager", "base.sqlite")
	capture(t, "dense-eager", "in.sqlite")
	appendEnv(t, "in.sqlite", "NCCL_DEBUG=WARN;spring.datasource.password=s3cr3t;"+
		"BASH_FUNC_deploy%%=() { curl -H 'Authorization: Bearer sk-live-42' https://x; };"+
		"VLLM_REDIS_PASS=r3dispw;SGLANG_DB_PWD=dbpw99;TRTLLM_S3_CREDS=AKIAEXAMPLE;TORCH_HUB_COOKIE=c00kie;"+
		"VLLM_JWT=eyJhbGciOi;PYTORCH_PRIVATE_PEM=BEGINPEM;VLLM_API_KEY=apikey7;"+
		"VLLM_HTTPS_PROXY=http://alicexq:hunter2@proxy:3128")
	secrets := []string{"s3cr3t", "sk-live-42", "Bearer", "r3dispw", "dbpw99", "AKIAEXAMPLE", "c00kie", "eyJhbGciOi",
		"BEGINPEM", "apikey7", "hunter2", "alicexq", "BASH_FUNC", "spring."}
	outputs := map[string]string{
		"report text": runOK(t, "report", "in.sqlite"),
		"report json": runOK(t, "report", "-f", "json", "in.sqlite"),
		"diff text":   runOK(t, "diff", "base.sqlite", "in.sqlite"),
		"diff json":   runOK(t, "diff", "-f", "json", "base.sqlite", "in.sqlite"),
	}
	runOK(t, "report", "-f", "html", "-o", "r.html", "in.sqlite")
	runOK(t, "diff", "-f", "html", "-o", "d.html", "base.sqlite", "in.sqlite")
	outputs["report html"], outputs["diff html"] = readString(t, "r.html"), readString(t, "d.html")
	for what, out := range outputs {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s holds %q", what, s)
			}
		}
		if !strings.Contains(out, "http://proxy:3128") {
			t.Errorf("%s lacks VLLM_HTTPS_PROXY without its credentials (http://proxy:3128)", what)
		}
	}
	if !strings.Contains(flat(outputs["report text"]), " NCCL_DEBUG=WARN ") {
		t.Errorf("the run configuration line does not hold NCCL_DEBUG=WARN alone:\n%s", firstN(outputs["report text"], 1000))
	}
	var rep struct{ Config map[string]string }
	if err := json.Unmarshal([]byte(outputs["report json"]), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Config["NCCL_DEBUG"] != "WARN" || rep.Config["VLLM_HTTPS_PROXY"] != "http://proxy:3128" || len(rep.Config) != 8 {
		t.Errorf("json config %v, want the 6 knobs of the capture, NCCL_DEBUG=WARN and the proxy without credentials", rep.Config)
	}
	if !strings.Contains(outputs["diff text"], "NCCL_DEBUG: (unset) -> WARN\n") {
		t.Errorf("diff text lacks the NCCL_DEBUG change:\n%s", firstN(outputs["diff text"], 1500))
	}
}

// hostileBytes holds ESC, BEL, a newline, 8-bit CSI (0x9b) as a raw byte and encoded
// (U+009B), DEL, a right-to-left override, and bytes that are not UTF-8.
const hostileBytes = "\x1b[2J\x07\nX\x9b[31m\u009b\x7f\u202e\xff\xfe\xc3"

// checkTerminalText fails unless out is valid UTF-8 and holds no C0 control but newline,
// no DEL, no C1 control and no bidi control.
func checkTerminalText(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		i := 0
		for i < len(out) {
			r, n := utf8.DecodeRuneInString(out[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		t.Errorf("%s is not valid UTF-8 (byte %d: %q)", what, i, out[max(0, i-40):min(len(out), i+10)])
	}
	for _, r := range out {
		if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x202e {
			t.Errorf("%s holds the control %U", what, r)
			return
		}
	}
}

// TestTerminalTextEscaped (issue 25, item 3): a knob value and a kernel name holding
// escapes, C1 bytes and invalid UTF-8 reach every text output escaped, the findings'
// "knobs:" citation included (the "try:" line no longer repeats the knobs the claim
// cites, issue 31), and the HTML page is valid UTF-8.
func TestTerminalTextEscaped(t *testing.T) {
	inTempDir(t)
	capture(t, "tp2-moe-eager", "base.sqlite")
	capture(t, "tp2-moe-eager", "in.sqlite")
	appendEnv(t, "in.sqlite", "NCCL_ALGO=Ring"+hostileBytes)
	// The longest-running kernel's name (a GEMM: the suffix keeps its category).
	execSQL(t, "in.sqlite", `UPDATE StringIds SET value = value || CAST(? AS TEXT) WHERE id = (SELECT demangledName
		FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY demangledName ORDER BY sum(end - start) DESC LIMIT 1)`, []byte(hostileBytes))
	escaped := `Ring\x1b[2J\x07\x0aX\x9b[31m\x9b\x7f\u202e\xff\xfe\xc3`
	text := runOK(t, "report", "in.sqlite")
	checkTerminalText(t, "report text", text)
	// A finding's paragraphs are wrapped to the width of the output: read them unwrapped.
	flat := strings.Join(strings.Fields(text), " ")
	if strings.Count(flat, "; knobs: NCCL_ALGO="+escaped) == 0 {
		t.Errorf("the communication finding's knobs: citation does not show NCCL_ALGO escaped:\n%s", text)
	}
	if !strings.Contains(text, "  NCCL_ALGO="+escaped+"  ") {
		t.Errorf("the run configuration line does not show NCCL_ALGO escaped")
	}
	if !strings.Contains(text, "_NNT"+escaped[len("Ring"):]) && !strings.Contains(text, escaped[len("Ring"):]) {
		t.Errorf("the top kernels do not show the kernel name escaped")
	}
	checkTerminalText(t, "classify text", runOK(t, "classify", "in.sqlite"))
	checkTerminalText(t, "info text", runOK(t, "info", "in.sqlite"))
	diff := runOK(t, "diff", "base.sqlite", "in.sqlite")
	checkTerminalText(t, "diff text", diff)
	if !strings.Contains(diff, "NCCL_ALGO: (unset) -> "+escaped+"\n") {
		t.Errorf("diff text does not show the changed knob escaped:\n%s", firstN(diff, 2000))
	}
	for _, args := range [][]string{{"report", "-f", "html", "-o", "out.html", "in.sqlite"}, {"diff", "-f", "html", "-o", "out.html", "base.sqlite", "in.sqlite"}} {
		runOK(t, args...)
		if page := readString(t, "out.html"); !utf8.ValidString(page) || !strings.Contains(page, "Ring\x1b[2J") {
			t.Errorf("%s: the page is not valid UTF-8 or lacks the knob (valid %v)", args[0], utf8.ValidString(page))
		}
	}
	js := runOK(t, "report", "-f", "json", "in.sqlite")
	if !utf8.ValidString(js) {
		t.Errorf("the JSON report is not valid UTF-8")
	}
}

// TestUsageErrorEscaped (issue 25, item 3): the usage error of --sol-bytes names the GPU,
// escaped; flag values in usage errors are escaped too.
func TestUsageErrorEscaped(t *testing.T) {
	inTempDir(t)
	capture(t, "dense-eager", "in.sqlite")
	execSQL(t, "in.sqlite", `UPDATE TARGET_INFO_GPU SET name = CAST(? AS TEXT)`, []byte("Evil\x1b]0;pwned\x07\x9bGPU\xff"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--sol-bytes", "1GB", "in.sqlite"}, `(Evil\x1b]0;pwned\x07\x9bGPU\xff) is not in the datasheet table`},
		{[]string{"report", "--phase", "dec\x1bode\x9b", "in.sqlite"}, `--phase: unknown phase "dec\x1bode\x9b"`},
		{[]string{"report", "--device", "1\x9b", "in.sqlite"}, `invalid argument "1\x9b"`},
		{[]string{"re\x9bport\x1b", "in.sqlite"}, `stepstat: unknown command "re\x9bport\x1b"`},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("stepstat %q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
		checkTerminalText(t, fmt.Sprintf("stderr of %q", tc.args), stderr)
	}
}

// TestProgressNameEscaped (issue 25, item 3): the --progress line shows the file name
// escaped.
func TestProgressNameEscaped(t *testing.T) {
	var errOut bytes.Buffer
	cb := progressFor("dir/in\x1b[2J\x9b\xff.sqlite", &stdio{errOut: &errOut}, true)
	cb("CUPTI_ACTIVITY_KIND_KERNEL", 2<<20, 2<<20)
	got := errOut.String()
	// The line, then blanks over it once every table is read (TestProgressLeavesNothing).
	want := "\r" + `in\x1b[2J\x9b\xff.sqlite: 2,097,152/2,097,152 rows (100%) done`
	if !strings.HasPrefix(got, want+"\r") || strings.Trim(strings.TrimPrefix(got, want), "\r ") != "" {
		t.Errorf("progress line %q, want %q and blanks", got, want)
	}
}

// TestDeviceFlag (issue 25, item 6): --device takes -1 (every device) or a device id;
// -2 or below is a usage error, not every device.
func TestDeviceFlag(t *testing.T) {
	inTempDir(t)
	capture(t, "tp2-moe-eager", "in.sqlite")
	for _, tc := range []struct {
		args []string
		code int
		want string // in stdout for 0, in stderr's first line otherwise
	}{
		{[]string{"report", "--device", "-1", "in.sqlite"}, 0, "2 devices"},
		{[]string{"report", "--device", "1", "in.sqlite"}, 0, "1 device)"},
		{[]string{"report", "--device", "-2", "in.sqlite"}, 2, "stepstat report: --device -2: want -1 (every device) or a CUDA device id, 0 to 32767"},
		{[]string{"diff", "--device", "-7", "in.sqlite", "in.sqlite"}, 2, "stepstat diff: --device -7: want -1"},
		{[]string{"report", "--device", "5", "in.sqlite"}, 1, "stepstat: in.sqlite: no activity on device 5 (devices with activity: 0, 1)"},
	} {
		code, stdout, stderr := runCLI(tc.args...)
		out := strings.SplitN(stderr, "\n", 2)[0]
		if tc.code == 0 {
			out = stdout
		}
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("stepstat %q: exit %d, stderr %q; want %d and %q", tc.args, code, firstN(stderr, 300), tc.code, tc.want)
		}
	}
}

// growDevices adds copies of the capture's devices (0 and 1) to the export at path until
// it holds n devices: their kernels again, on devices 2, 3, ... The copies link to no
// host call, so each copy's steps are found by the sync signals of its process, as the
// originals'.
func growDevices(t *testing.T, path string, n int) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var cols string
	if err := db.QueryRow(`SELECT group_concat(name) FROM pragma_table_info('CUPTI_ACTIVITY_KIND_KERNEL')`).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	sel := strings.Replace(cols, "deviceId", "deviceId + 2 * c.i", 1)
	q := fmt.Sprintf(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d)
		INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (%s) SELECT %s FROM CUPTI_ACTIVITY_KIND_KERNEL, c WHERE deviceId < 2`, n/2-1, cols, sel)
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
}

// TestKnobAmplificationBounded (issue 25, item 4): one knob value of 1 MB cited by the
// communication finding of every device. Quoted clipped (200 bytes), kept whole once in
// JSON's config: 64 and 256 devices give under 20 MB of output in under 300 MB (before:
// 135 MB of JSON and 689 MB of RSS for text at 64 devices).
func TestKnobAmplificationBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds exports of up to 1.1 million kernels")
	}
	inTempDir(t)
	big := strings.Repeat("v", 1<<20)
	for _, devices := range []int{64, 256} {
		path := fmt.Sprintf("dev%d.sqlite", devices)
		capture(t, "tp2-moe-eager", path)
		appendEnv(t, path, "NCCL_DEBUG_SUBSYS="+big)
		growDevices(t, path, devices)
		formats := []string{"json", "text", "html"}
		if devices > 64 {
			formats = formats[:2]
		}
		for _, format := range formats {
			out := fmt.Sprintf("out%d.%s", devices, format)
			code, stderr, rss, wall := subprocess(t, "report", "-f", format, "-o", out, path)
			fi, err := os.Stat(out)
			if code != 0 || err != nil {
				t.Fatalf("%d devices, %s: exit %d, stderr %q", devices, format, code, firstN(stderr, 300))
			}
			t.Logf("%d devices, %s: %.1f MB of output, %.0f MB RSS, %v", devices, format, float64(fi.Size())/1e6, rss, wall)
			if fi.Size() > 20e6 {
				t.Errorf("%d devices, %s: %.1f MB of output, want < 20 MB", devices, format, float64(fi.Size())/1e6)
			}
			if rss > 300 {
				t.Errorf("%d devices, %s: peak RSS %.0f MB, want < 300", devices, format, rss)
			}
			if format != "json" {
				continue
			}
			s := readString(t, out)
			if n := strings.Count(s, big); n != 1 {
				t.Errorf("%d devices: the JSON holds the whole value %d times, want once (in config)", devices, n)
			}
			var rep struct {
				Config  map[string]string
				Devices []struct {
					Findings []struct {
						ID       string
						Evidence map[string]any
					}
				}
			}
			if err := json.Unmarshal([]byte(s), &rep); err != nil {
				t.Fatal(err)
			}
			cited := 0
			for _, d := range rep.Devices {
				for _, f := range d.Findings {
					if k, ok := f.Evidence["knobs"].(string); ok && strings.Contains(k, "NCCL_DEBUG_SUBSYS=vvvv") {
						cited++
						if !strings.Contains(k, "NCCL_DEBUG_SUBSYS="+strings.Repeat("v", 200)+"…") || len(k) > 1000 {
							t.Errorf("knobs evidence of %d bytes, want the value clipped to 200 bytes and …", len(k))
						}
					}
				}
			}
			if len(rep.Devices) != devices || cited < devices/2 || rep.Config["NCCL_DEBUG_SUBSYS"] != big {
				t.Errorf("%d devices in JSON, %d findings cite the knob, config value of %d bytes; want %d, >= %d, %d",
					len(rep.Devices), cited, len(rep.Config["NCCL_DEBUG_SUBSYS"]), devices, devices/2, len(big))
			}
		}
		os.Remove(path)
	}
}

// TestChildOutputBounded (issue 25, item 5): an nsys that prints 400 MB before failing
// costs under 100 MB: only the last 64 KiB of its output is kept, and its last line is
// in the error (before: 1.47 GB).
func TestChildOutputBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("pipes 400 MB")
	}
	inTempDir(t)
	bin := t.TempDir()
	script := "#!/bin/sh\nyes 'Processing [==============================]' | head -c 400000000\necho\n" +
		"echo 'Error: failed to import the report' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "nsys"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+"/usr/bin"+string(os.PathListSeparator)+"/bin")
	t.Setenv("TMPDIR", t.TempDir())
	writeFile(t, "run.nsys-rep", "QDSTRM\x00 a report\n")
	code, stderr, rss, wall := subprocess(t, "report", "run.nsys-rep")
	t.Logf("nsys printing 400 MB: exit %d, %.0f MB RSS, %v", code, rss, wall)
	if want := "stepstat: run.nsys-rep: nsys export failed (exit status 1): Error: failed to import the report\n"; code != 1 || stderr != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, firstN(stderr, 300), want)
	}
	if rss > 100 {
		t.Errorf("peak RSS %.0f MB, want < 100", rss)
	}
}

// TestTailBuffer checks that the child-output buffer keeps exactly the last bytes, for
// writes of every size.
func TestTailBuffer(t *testing.T) {
	for _, size := range []int{1, 7, 100, 4096, 5000} {
		tb := &tailBuffer{max: 4096}
		var all []byte
		for i := 0; len(all) < 50_000; i++ {
			p := bytes.Repeat([]byte{byte('a' + i%26)}, size+i%3)
			tb.Write(p)
			all = append(all, p...)
			if want := string(all[max(0, len(all)-4096):]); tb.String() != want {
				t.Fatalf("writes of %d: tail of %d bytes differs after %d bytes", size, len(tb.String()), len(all))
			}
			if cap(tb.buf) > 4*4096+2*size {
				t.Fatalf("writes of %d: buffer of %d bytes", size, cap(tb.buf))
			}
		}
	}
}
