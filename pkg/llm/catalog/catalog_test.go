package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

const sample = `
providers:
  ollama:
    baseUrl: http://127.0.0.1:11434/v1
    apiKey: OLLAMA_KEY
    api: openai-completions
    headers: {X-Team: platform}
    models:
      - id: qwen3:8b
        input: [text]
        contextWindow: 32768
        maxTokens: 8192
        cost: {input: 0, output: 0}
        compat: {supportsDeveloperRole: false}
      - id: llava
        input: [text, image]
  anthropic:
    baseUrl: https://gateway.example/v1
    modelOverrides:
      claude-3-5-sonnet-20241022: {maxTokens: 4096}
`

func TestParseAndApply(t *testing.T) {
	f, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	c := f.Apply(llm.Builtin())
	m, ok := c.Lookup("ollama", "qwen3:8b")
	if !ok || m.API != llm.APIOpenAIChat || m.BaseURL != "http://127.0.0.1:11434/v1" || m.ContextWindow != 32768 ||
		m.Headers["X-Team"] != "platform" || string(m.Compat) != `{"supportsDeveloperRole":false}` {
		t.Fatalf("qwen = %+v (%v)", m, ok)
	}
	if l, _ := c.Lookup("ollama", "llava"); !l.AcceptsImages() {
		t.Fatalf("llava = %+v", l)
	}
	a, _ := c.Lookup("anthropic", "claude-3-5-sonnet-20241022")
	if a.MaxTokens != 4096 || a.BaseURL != "https://gateway.example/v1" || a.Cost.Output != 15 {
		t.Fatalf("override = %+v", a)
	}
	other, _ := c.Lookup("anthropic", "claude-3-5-sonnet-20240620")
	if other.BaseURL != "https://gateway.example/v1" {
		t.Fatalf("provider baseUrl not applied to other models: %+v", other)
	}
}

func TestParseRejectsInvalid(t *testing.T) {
	tests := map[string]string{
		"models without baseUrl":  "providers: {p: {apiKey: K, api: openai-completions, models: [{id: m}]}}",
		"models without apiKey":   "providers: {p: {baseUrl: http://x, api: openai-completions, models: [{id: m}]}}",
		"model without api":       "providers: {p: {baseUrl: http://x, apiKey: K, models: [{id: m}]}}",
		"unknown api":             "providers: {p: {baseUrl: http://x, apiKey: K, api: grpc, models: [{id: m}]}}",
		"negative context window": "providers: {p: {baseUrl: http://x, apiKey: K, api: openai-completions, models: [{id: m, contextWindow: -1}]}}",
		"empty override provider": "providers: {p: {apiKey: K}}",
		"discovery without api":   "providers: {p: {baseUrl: http://x, discovery: {type: ollama}}}",
		"not yaml":                "providers: [",
		"wrong type for models":   "providers: {p: {baseUrl: http://x, apiKey: K, api: openai-completions, models: 3}}",
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(doc)); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestParseAcceptsKeylessProvider(t *testing.T) {
	if _, err := Parse([]byte("providers: {local: {baseUrl: http://x, auth: none, api: openai-completions, models: [{id: m}]}}")); err != nil {
		t.Fatal(err)
	}
}

func TestLoadFallsBackToJSON(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "models.json"), []byte(`{"providers":{"p":{"baseUrl":"http://x","apiKey":"K","api":"openai-responses","models":[{"id":"m"}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(filepath.Join(dir, "models.yml"))
	if err != nil || len(f.Providers["p"].Models) != 1 {
		t.Fatalf("Load = %+v, %v", f, err)
	}
	empty, err := Load(filepath.Join(t.TempDir(), "models.yml"))
	if err != nil || len(empty.Providers) != 0 {
		t.Fatalf("missing files: %+v, %v", empty, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("providers: {p: {baseUrl: x}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if file, err := Parse(b); err == nil {
			file.Apply(llm.Builtin())
		}
	})
}

func TestAuthOAuthNeedsNoAPIKey(t *testing.T) {
	ok := "providers:\n  p:\n    baseUrl: http://x\n    auth: oauth\n    api: anthropic-messages\n    models:\n      - id: m\n"
	if _, err := Parse([]byte(ok)); err != nil {
		t.Fatalf("auth: oauth rejected: %v", err)
	}
	bad := "providers:\n  p:\n    baseUrl: http://x\n    auth: token\n    api: anthropic-messages\n    models:\n      - id: m\n"
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "auth must be apiKey, none or oauth") {
		t.Fatalf("err = %v", err)
	}
}
