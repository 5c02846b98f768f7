package nsys

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// An EnvVar is one environment variable of the run's configuration.
type EnvVar struct {
	Name, Value string
}

// ConfigPrefixes are the name prefixes of the environment variables kept as the run's
// configuration: the performance knobs of NCCL, CUDA, PyTorch, the serving engines and
// OpenMP. Nothing else in the recorded environment is ever kept: environments hold
// credentials.
var ConfigPrefixes = []string{"NCCL_", "CUDA_", "TORCH_", "PYTORCH_", "VLLM_", "SGLANG_", "TRTLLM_", "OMP_"}

// configDenyWords are the words of names that look like credentials; a variable with one
// as a whole part of its name (split at "_", in any letter case, plurals too but TOKENS)
// is dropped even under an allowed prefix (VLLM_API_KEY, a CUDA_..._TOKEN,
// VLLM_REDIS_PASS, SGLANG_DB_PWD, TORCH_HUB_COOKIE), and so is one with a part ending in a
// joined credential word (configDenyEnds: VLLM_APITOKEN). A word inside another part is
// not one: VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE, NCCL_IB_PKEY, VLLM_KEYWORDS are kept.
var configDenyWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PWD", "KEY", "CREDENTIAL", "CRED",
	"AUTH", "COOKIE", "JWT", "PRIVATE", "CERT", "SESSION"}

// ConfigKnob reports whether an environment variable of this name is kept as run
// configuration: the name starts with one of ConfigPrefixes (letter case as written, as
// the libraries read them), is a plain identifier (letters, digits, underscores), and
// has none of the credential words as a part of its name (configDenyWords: TOKEN, SECRET,
// PASS, PWD, KEY, CRED, AUTH, COOKIE, JWT, PRIVATE, CERT, SESSION and their longer forms).
func ConfigKnob(name string) bool {
	prefixed := false
	for _, p := range ConfigPrefixes {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			prefixed = true
			break
		}
	}
	if !prefixed {
		return false
	}
	if !isIdent(name) {
		return false
	}
	for part := range strings.SplitSeq(strings.ToUpper(name), "_") {
		if slices.Contains(configDenyWords, part) || slices.Contains(configDenyWords, strings.TrimSuffix(part, "S")) && part != "TOKENS" {
			return false
		}
		for _, e := range configDenyEnds {
			if strings.HasSuffix(part, e) {
				return false
			}
		}
	}
	return true
}

// configDenyEnds are endings of a name part that make it a credential word joined to
// another (APITOKEN, ACCESSKEY, DBPASSWORD).
var configDenyEnds = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY", "CREDENTIAL", "COOKIE"}

// urlUserinfo matches the user:password@ part of a URL (http://alice:hunter2@proxy:3128):
// a scheme, "://", then everything up to the last "@" before the host's end.
var urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s@]*(?:@[^/?#\s@]*)*@`)

// StripUserinfo removes the user:password@ (or user@) part of every URL in a value, so
// that a proxy or endpoint setting under an allowed prefix does not carry its credentials
// into the report: "http://alice:hunter2@proxy:3128" becomes "http://proxy:3128".
func StripUserinfo(v string) string {
	if !strings.Contains(v, "://") || !strings.Contains(v, "@") {
		return v
	}
	return urlUserinfo.ReplaceAllString(v, "$1")
}

// Redacted stands in a knob value for a part that looks like a credential (RedactValue).
const Redacted = "[redacted]"

// secretKeys are the words that mark the value after a key as a credential, where the
// key is one of them or one of its parts (split at '_', '.', '-'), in any letter case:
// libpq's password=, a query's token= or SAS's sig=, api-key=, X-Amz-Signature=, a
// MY_SALT= inside a value. secretEnds are words a key part may also end with
// (accesstoken, awssecretkey, dbpasswd).
var (
	secretKeys = map[string]bool{"token": true, "secret": true, "password": true, "passwd": true, "pass": true, "pwd": true,
		"key": true, "apikey": true, "credential": true, "credentials": true, "cred": true, "creds": true, "auth": true,
		"authorization": true, "cookie": true, "jwt": true, "private": true, "session": true, "sig": true, "signature": true,
		"salt": true, "code": true, "sas": true}
	secretEnds = []string{"token", "apikey", "accesskey", "secretkey", "privatekey", "secret", "password", "passwd", "pwd", "signature", "salt"}
)

// secretKey reports whether key names a credential (secretKeys, secretEnds).
func secretKey(key string) bool {
	for part := range strings.FieldsFuncSeq(strings.ToLower(key), func(r rune) bool { return r == '_' || r == '.' || r == '-' }) {
		if secretKeys[part] {
			return true
		}
		for _, e := range secretEnds {
			if strings.HasSuffix(part, e) {
				return true
			}
		}
	}
	return false
}

// Patterns of RedactValue, each keeping its first group and redacting the rest.
var (
	// key=value or key: value where the key holds a secret word: libpq's password=,
	// api-key=, a query's token= or sig=, a MY_SALT=... inside a value. The value ends
	// at a separator: space, ';', ',', '&', a quote.
	// A key may be quoted and its value too (JSON: {"api_key": "k1"}). A pair that is not
	// a secret does not hide one inside its value: the scan goes on after its key
	// (https://host/x?token=... : the key "https" is not a secret, "token" is).
	secretPair = regexp.MustCompile(`((?:^|[\s;,&?'"{(])(-*[A-Za-z][A-Za-z0-9_.-]*)['"]?\s*[=:]\s*['"]?)([^\s;,&'"})]+)`)
	// A command-line flag and its value after a space: --password VALUE, --hf-token VALUE
	// (the value does not start with "-": that is the next flag).
	secretFlag = regexp.MustCompile(`((?:^|\s)--?([A-Za-z][A-Za-z0-9_.-]*)\s+['"]?)([^\s;,&'"\-][^\s;,&'"]*)`)
	// Tokens with a known prefix whatever their letters: Hugging Face's hf_ (letters
	// only, often), GitHub's, GitLab's, Slack's, OpenAI's sk-.
	prefixedToken = regexp.MustCompile(`\b((?:hf|api_org|ghp|gho|ghu|ghs|ghr|github_pat)_|glpat-|xox[abprs]-|sk-(?:proj-|live-|test-)?)([A-Za-z0-9_-]{16,})`)
	// An AWS secret access key: 40 characters of base64 ([A-Za-z0-9/+]) mixing lower case,
	// upper case and digits, holding a "/" or "+" (else randomRun has it), not a path (it
	// neither starts nor ends with "/").
	base64Key = regexp.MustCompile(`(^|[^A-Za-z0-9/+])([A-Za-z0-9+][A-Za-z0-9/+]{38}[A-Za-z0-9+])($|[^A-Za-z0-9/+=])`)
	// An authorization scheme and its credential: Bearer sk-..., Basic dXNlcjpw..., Token ...
	authScheme = regexp.MustCompile(`(?i)(\b(?:bearer|basic|token|digest)\s+)([A-Za-z0-9._~+/=-]+)`)
	// A webhook URL's path is its credential (hooks.slack.com/services/T../B../XXXX,
	// discord.com/api/webhooks/ID/TOKEN, a Teams or Zapier hook).
	webhook = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://(?:[^/\s]*hook[^/\s]*/|[^/\s]+/(?:[^\s?#]*/)?[^/\s]*hooks?/))([^\s;,'"]+)`)
	// A run of 20 or more letters and digits mixing at least two of lower case, upper case
	// and digits, digits included: an access key, a token, a hash (a model snapshot's git
	// hash goes too). Words, paths and device lists are shorter runs or one letter case.
	randomRun = regexp.MustCompile(`[A-Za-z0-9]{20,}`)
)

// authWords are the authorization schemes authScheme redacts after.
var authWords = map[string]bool{"bearer": true, "basic": true, "token": true, "digest": true}

// RedactValue returns the value of the knob name with its credential-shaped parts
// replaced by Redacted, and whether it replaced any: the whole value of a knob whose name
// holds a salt (VLLM_..._SALT); URL user:password@ parts (removed, StripUserinfo);
// webhook URL paths; the values of key=value pairs and query parameters whose key holds a
// credential word (password=, token=, sig=, api-key=, ..._SALT=); the credential after an
// authorization scheme (Bearer, Basic, Token); and runs of 20 or more letters and digits
// that mix letter cases or letters and digits. The second result is true when anything
// was changed, userinfo included.
func RedactValue(name, v string) (string, bool) {
	if strings.Contains(strings.ToUpper(name), "SALT") {
		return Redacted, v != ""
	}
	orig := v
	v = StripUserinfo(v)
	v = webhook.ReplaceAllString(v, "${1}"+Redacted)
	v = authScheme.ReplaceAllStringFunc(v, func(m string) string {
		sm := authScheme.FindStringSubmatch(m)
		if strings.HasPrefix(sm[2], Redacted) || strings.HasPrefix(Redacted[1:], sm[2]) {
			return m
		}
		return sm[1] + Redacted
	})
	v = redactPairs(secretPair, v)
	v = redactPairs(secretFlag, v)
	v = prefixedToken.ReplaceAllStringFunc(v, func(m string) string {
		sm := prefixedToken.FindStringSubmatch(m)
		if strings.HasPrefix(sm[2], Redacted[1:]) {
			return m
		}
		return sm[1] + Redacted
	})
	v = base64Key.ReplaceAllStringFunc(v, func(m string) string {
		sm := base64Key.FindStringSubmatch(m)
		k := sm[2]
		if !strings.ContainsAny(k, "/+") || strings.Contains(k, "//") || !mixed(k, true) {
			return m
		}
		return sm[1] + Redacted + sm[3]
	})
	v = randomRun.ReplaceAllStringFunc(v, func(m string) string {
		if mixed(m, false) {
			return Redacted
		}
		return m
	})
	return v, v != orig
}

// mixed reports whether s holds digits and letters, and with all3 also lower and upper
// case letters both.
func mixed(s string, all3 bool) bool {
	var lower, upper, digit bool
	for _, c := range s {
		lower = lower || c >= 'a' && c <= 'z'
		upper = upper || c >= 'A' && c <= 'Z'
		digit = digit || c >= '0' && c <= '9'
	}
	if all3 {
		return lower && upper && digit
	}
	return digit && (lower || upper)
}

// redactPairs replaces the value of each match of re (groups: the key with what leads to
// the value, the key, the value) whose key is a credential (secretKey). A match whose key
// is not one is kept, and the scan goes on after its key, so that a value holding a
// secret pair of its own (a URL's ?token=) is seen.
func redactPairs(re *regexp.Regexp, v string) string {
	var b strings.Builder
	pos := 0
	for pos < len(v) {
		loc := re.FindStringSubmatchIndex(v[pos:])
		if loc == nil {
			break
		}
		key, val := v[pos+loc[4]:pos+loc[5]], v[pos+loc[6]:pos+loc[7]]
		if !secretKey(key) || val == Redacted || strings.HasPrefix(val, Redacted) || authWords[strings.ToLower(val)] {
			b.WriteString(v[pos : pos+loc[5]])
			pos += loc[5]
			continue
		}
		b.WriteString(v[pos : pos+loc[6]])
		b.WriteString(Redacted)
		pos += loc[7]
	}
	b.WriteString(v[pos:])
	return b.String()
}

// MaxValueText is the longest run-configuration name or value quoted whole; a longer one
// is clipped (ClipValue) wherever it is quoted. Trace.Config keeps every value whole.
const MaxValueText = 200

// ClipValue clips s to at most MaxValueText bytes, at a rune boundary, with "…" after it
// when something was cut: a knob value of a megabyte, quoted in every device's findings,
// would otherwise multiply the output by the device count.
func ClipValue(s string) string {
	if len(s) <= MaxValueText {
		return s
	}
	n := MaxValueText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ParseEnvironment returns the run-configuration knobs (ConfigKnob) of an environment as
// nsys records it, KEY=VALUE;KEY=VALUE;..., sorted by name. Every part holding "=" is a
// variable of its own, dropped when its name is not a plain identifier (so
// "spring.datasource.password=..." or "BASH_FUNC_f%%=() {...}" never joins the value
// before it); a part without "=" continues the value of the variable before it (a value
// holding ";"), or is dropped with it. Empty parts are skipped. URL credentials are
// stripped from the values and their other credential-shaped parts redacted
// (RedactValue). The first of repeated names wins.
func ParseEnvironment(env string) []EnvVar {
	out := parseRaw(env)
	for i := range out {
		out[i].Value, _ = RedactValue(out[i].Name, out[i].Value)
	}
	slices.SortFunc(out, func(a, b EnvVar) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// parseRaw is ParseEnvironment without the redaction and the sort.
func parseRaw(env string) []EnvVar {
	var out []EnvVar
	seen := map[string]bool{}
	last := -1 // index in out of the variable the next part may continue; -1: none
	for part := range strings.SplitSeq(env, ";") {
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			if last >= 0 {
				out[last].Value += ";" + part
			}
			continue
		}
		last = -1
		if !ConfigKnob(name) || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, EnvVar{name, value})
		last = len(out) - 1
	}
	return out
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

const envTable = "TARGET_INFO_SYSTEM_ENV"

// readConfig reads the environment nsys recorded for the launched process
// (TARGET_INFO_SYSTEM_ENV, name 'DeviceEnvironment') and keeps its knobs in Trace.Config.
// Exports without the table or the row have no configuration; that is not an error.
func (r *reader) readConfig() error {
	if !r.has(envTable) || !r.hasCol(envTable, "name") || !r.hasCol(envTable, "value") {
		return nil
	}
	rows, err := r.db.QueryContext(r.ctx, `SELECT COALESCE(value, '') FROM `+envTable+
		` WHERE name = 'DeviceEnvironment' ORDER BY rowid`)
	if err != nil {
		r.warnf("reading %s: %v; no run configuration", envTable, err)
		return nil
	}
	defer rows.Close()
	seen := map[string]bool{}
	var redacted []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return fmt.Errorf("reading %s: %w", envTable, err)
		}
		for _, e := range ParseEnvironment(v) {
			if !seen[e.Name] {
				seen[e.Name] = true
				r.t.Config = append(r.t.Config, e)
			}
		}
		redacted = append(redacted, RedactedKnobs(v)...)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", envTable, err)
	}
	slices.SortFunc(r.t.Config, func(a, b EnvVar) int { return strings.Compare(a.Name, b.Name) })
	if len(redacted) > 0 {
		slices.Sort(redacted)
		redacted = slices.Compact(redacted)
		names := strings.Join(redacted, ", ")
		r.warnf("run configuration: credential-shaped parts of %d %s redacted, shown as %s (%s)", len(redacted),
			map[bool]string{true: "value", false: "values"}[len(redacted) == 1], Redacted, ClipValue(names))
	}
	return nil
}

// RedactedKnobs returns the names of the knobs of env (ParseEnvironment) whose values
// RedactValue changed, in the order of the environment.
func RedactedKnobs(env string) []string {
	var out []string
	for _, e := range parseRaw(env) {
		if _, changed := RedactValue(e.Name, e.Value); changed {
			out = append(out, e.Name)
		}
	}
	return out
}
