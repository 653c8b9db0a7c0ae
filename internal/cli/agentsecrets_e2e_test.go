package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/agent/secrets"
	"github.com/ompgo/omp/pkg/llm"
)

// TestAgentE2ESecretsNeverReachTheUpstream runs the real binary with
// secrets.enabled: an environment token, a project secrets.yml plain entry
// and a regex. The model sees placeholders only — in the prompt, in the
// tool result that printed the real values, in its own replayed tool call —
// while the bash tool gets the real values and print mode shows them
// restored.
func TestAgentE2ESecretsNeverReachTheUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	agentDir := filepath.Join(e.home, ".omp", "agent")
	key := []byte("e2e-placeholder-key-32-bytes-lon")
	must(t, os.WriteFile(filepath.Join(agentDir, secrets.KeyFile), key, 0o600))
	must(t, os.WriteFile(filepath.Join(agentDir, "config.yml"), []byte("secrets:\n  enabled: true\n"), 0o600))
	must(t, os.MkdirAll(filepath.Join(e.project, ".omp"), 0o700))
	must(t, os.WriteFile(filepath.Join(e.project, ".omp", "secrets.yml"),
		[]byte("- type: plain\n  content: file-secret-value-77\n- type: regex\n  content: 'db-pass-[0-9]+'\n"), 0o600))

	const envSecret = "tok-very-secret-42"
	all := []string{envSecret, "file-secret-value-77", "db-pass-9911", "sk-fake-123", string(key)}
	// The placeholders the binary will mint with this key.
	o, _, err := secrets.New(key, secrets.Merge(secrets.FromEnviron([]string{"MY_SERVICE_TOKEN=" + envSecret}),
		[]secrets.Entry{{Type: "plain", Content: "file-secret-value-77"}, {Type: "regex", Content: "db-pass-[0-9]+"}}))
	must(t, err)
	tokCode := o.Obfuscate(envSecret)
	fileCode := o.Obfuscate("file-secret-value-77")
	if !strings.HasPrefix(tokCode, "#") || tokCode == fileCode {
		t.Fatalf("codes %q %q", tokCode, fileCode)
	}

	e.fake.push(
		asst(llm.StopToolUse, call("toolu_1", "bash", map[string]string{
			"command": "printf '%s %s\\n' '" + tokCode + "' '" + fileCode + "' > got.txt; cat got.txt; echo db-pass-9911"})),
		asst(llm.StopEnd, llm.Text("Stored "+tokCode+" for you.")),
	)
	stdout, stderr, code := e.runEnv(t, []string{"MY_SERVICE_TOKEN=" + envSecret}, "",
		"-p", "--model", "fake/fake-model", "use "+envSecret+" and file-secret-value-77 with db-pass-9911")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if stdout != "Stored "+envSecret+" for you.\n" {
		t.Fatalf("stdout %q: the display is not restored", stdout)
	}
	if got, _ := os.ReadFile(filepath.Join(e.project, "got.txt")); string(got) != envSecret+" file-secret-value-77\n" {
		t.Fatalf("the tool got %q, not the real values", got)
	}
	reqs := e.fake.requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream requests = %d", len(reqs))
	}
	for i, r := range reqs {
		raw, _ := json.Marshal(r)
		for _, s := range all {
			if strings.Contains(string(raw), s) {
				t.Fatalf("request %d carries the secret %q:\n%s", i, s, raw)
			}
		}
		if !strings.Contains(string(raw), "redacted-content") {
			t.Fatalf("request %d: no secrets notice in the system prompt", i)
		}
	}
	second, _ := json.Marshal(reqs[1]["messages"])
	if !strings.Contains(string(second), tokCode+" "+fileCode) {
		t.Fatalf("the tool output did not come back as placeholders: %s", second)
	}
	// Persisted as the model produced it: the tool call keeps placeholders.
	files := e.sessionFiles(t)
	data, _ := os.ReadFile(files[0])
	if !strings.Contains(string(data), tokCode) {
		t.Fatalf("session file lost the model's placeholders")
	}

	// With secrets off but the key present, the placeholders the continued
	// session shows the model are still restored in its tool calls (an
	// earlier session keeps working); a fresh session's guess is not.
	must(t, os.WriteFile(filepath.Join(agentDir, "config.yml"), []byte("secrets:\n  enabled: false\n"), 0o600))
	e.fake.push(
		asst(llm.StopToolUse, call("toolu_2", "bash", map[string]string{"command": "printf '%s' '" + tokCode + "' > again.txt"})),
		asst(llm.StopEnd, llm.Text("ok")),
	)
	if _, stderr, code := e.runEnv(t, []string{"MY_SERVICE_TOKEN=" + envSecret}, "", "-c", "-p", "--model", "fake/fake-model", "again"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(e.project, "again.txt")); string(got) != envSecret {
		t.Fatalf("restore with secrets off: %q", got)
	}
	e.fake.push(
		asst(llm.StopToolUse, call("toolu_3", "bash", map[string]string{"command": "printf '%s' '" + fileCode + "' > guess.txt"})),
		asst(llm.StopEnd, llm.Text("ok")),
	)
	if _, stderr, code := e.runEnv(t, nil, "", "-p", "--model", "fake/fake-model", "fresh"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(e.project, "guess.txt")); string(got) != fileCode {
		t.Fatalf("a fresh session restored a code it never showed the model: %q", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAgentE2ESystemPromptContextAndRules: the real binary sends a system
// prompt holding the project's AGENTS.md and the rulebook, and the model
// can read a rule through rule://<name>; --no-rules drops it.
func TestAgentE2ESystemPromptContextAndRules(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	must(t, os.MkdirAll(filepath.Join(e.project, ".omp", "rules"), 0o700))
	must(t, os.WriteFile(filepath.Join(e.project, "AGENTS.md"), []byte("Project rule: tabs, not spaces.\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(e.project, ".omp", "rules", "go-style.md"),
		[]byte("---\ndescription: Go code style\nglobs: \"*.go\"\n---\nAlways run gofmt.\n"), 0o600))
	e.fake.push(
		asst(llm.StopToolUse, call("toolu_1", "read", map[string]string{"path": "rule://go-style"})),
		asst(llm.StopEnd, llm.Text("ok")),
	)
	if _, stderr, code := e.run(t, "", "-p", "--model", "fake/fake-model", "hi"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	reqs := e.fake.requests()
	sys, _ := json.Marshal(reqs[0]["system"])
	for _, want := range []string{"Project rule: tabs, not spaces.", "Go code style", "rule://", "Today is "} {
		if !strings.Contains(string(sys), want) {
			t.Fatalf("system prompt lacks %q: %s", want, sys)
		}
	}
	second, _ := json.Marshal(reqs[1]["messages"])
	if !strings.Contains(string(second), "Always run gofmt.") {
		t.Fatalf("rule:// read did not return the rule: %s", second)
	}

	e.fake.push(asst(llm.StopEnd, llm.Text("ok")))
	if _, stderr, code := e.run(t, "", "-p", "--no-rules", "--model", "fake/fake-model", "hi"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	reqs = e.fake.requests()
	if sys, _ := json.Marshal(reqs[2]["system"]); strings.Contains(string(sys), "Go code style") {
		t.Fatal("--no-rules still sends the rulebook")
	}
}
