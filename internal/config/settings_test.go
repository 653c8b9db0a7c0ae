package config

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func captureLog() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

func TestParseSettings(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		wantURL   string
		wantToken string
	}{
		{"nested form", "auth:\n  broker:\n    url: https://b:8765\n    token: '!pass show t'\n", "https://b:8765", "!pass show t"},
		{"flat form", "\"auth.broker.url\": https://flat\n\"auth.broker.token\": TOK\n", "https://flat", "TOK"},
		{"nested wins over flat", "auth.broker.url: https://flat\nauth:\n  broker:\n    url: https://nested\n", "https://nested", ""},
		{"non-string nested falls back to flat", "auth.broker.url: https://flat\nauth:\n  broker:\n    url: 8765\n", "https://flat", ""},
		{"non-string values ignored", "auth:\n  broker:\n    url: [a]\n    token: 12\n", "", ""},
		{"empty document is empty", "", "", ""},
		{"auth not a mapping", "auth: yes\n", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSettings([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if s.BrokerURL != tt.wantURL || s.BrokerToken != tt.wantToken {
				t.Errorf("got url=%q token=%q, want %q %q", s.BrokerURL, s.BrokerToken, tt.wantURL, tt.wantToken)
			}
		})
	}
}

func TestParseSettingsCodexResetsAndProviders(t *testing.T) {
	s, err := ParseSettings([]byte(`
codexResets:
  autoRedeem: true
  minBlockedMinutes: 30
"codexResets.keepCredits": 2
providers:
  anthropic:
    tokenUrl: https://tok.example/oauth/token
    usageUrl: https://usage.example
  llama.cpp:
    baseUrl: http://127.0.0.1:8080
  broken: 5
`))
	if err != nil {
		t.Fatal(err)
	}
	if want := (CodexResets{AutoRedeem: true, MinBlockedMinutes: 30, KeepCredits: 2}); s.CodexResets != want {
		t.Errorf("CodexResets = %+v, want %+v", s.CodexResets, want)
	}
	if got := s.Providers["anthropic"]; got.TokenURL != "https://tok.example/oauth/token" || got.UsageURL != "https://usage.example" || got.BaseURL != "" {
		t.Errorf("anthropic = %+v", got)
	}
	if got := s.Providers["llama.cpp"].BaseURL; got != "http://127.0.0.1:8080" {
		t.Errorf("llama.cpp baseUrl = %q", got)
	}
	if _, ok := s.Providers["broken"]; ok {
		t.Error("non-mapping provider entry kept")
	}

	d, _ := ParseSettings([]byte("codexResets:\n  autoRedeem: \"yes\"\n"))
	if !d.CodexResets.AutoRedeem || d.CodexResets.MinBlockedMinutes != 60 || d.CodexResets.KeepCredits != 0 {
		t.Errorf("defaults/tri-state = %+v", d.CodexResets)
	}
}

func TestLoadSettingsFiles(t *testing.T) {
	t.Run("config.yaml used when config.yml is absent", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "config.yaml"), "auth:\n  broker:\n    url: https://yaml\n")
		s, err := LoadSettings(dir, nil)
		if err != nil || s.BrokerURL != "https://yaml" || s.Path != filepath.Join(dir, "config.yaml") {
			t.Fatalf("got %+v", s)
		}
	})
	t.Run("config.yml preferred", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "config.yml"), "auth:\n  broker:\n    url: https://yml\n")
		writeFile(t, filepath.Join(dir, "config.yaml"), "auth:\n  broker:\n    url: https://yaml\n")
		if s, err := LoadSettings(dir, nil); err != nil || s.BrokerURL != "https://yml" {
			t.Fatalf("got %q", s.BrokerURL)
		}
	})
	t.Run("missing files are empty without warning", func(t *testing.T) {
		log, buf := captureLog()
		s, err := LoadSettings(t.TempDir(), log)
		if err != nil || s.BrokerURL != "" || s.Path != "" || buf.Len() != 0 {
			t.Fatalf("got %+v, log %q", s, buf)
		}
	})
	t.Run("invalid YAML is an error naming the file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "config.yml")
		writeFile(t, path, "auth: [unclosed\n")
		writeFile(t, filepath.Join(dir, "config.yaml"), "auth:\n  broker:\n    url: https://yaml\n")
		s, err := LoadSettings(dir, nil)
		if s != nil || err == nil || !strings.HasPrefix(err.Error(), path+" contains invalid YAML: yaml: ") {
			t.Fatalf("got %+v, %v", s, err)
		}
	})
	t.Run("a document that is not a mapping is an error", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "config.yml")
		writeFile(t, path, "- a\n- b\n")
		if _, err := LoadSettings(dir, nil); err == nil || err.Error() != path+" must contain a YAML object" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("an empty document is empty settings", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "config.yml"), "# nothing yet\n")
		if s, err := LoadSettings(dir, nil); err != nil || s.BrokerURL != "" {
			t.Fatalf("got %+v, %v", s, err)
		}
	})
	t.Run("unreadable file is an error naming the file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "config.yml")
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSettings(dir, nil); err == nil || !strings.HasPrefix(err.Error(), "unable to read "+path+": ") {
			t.Fatalf("err = %v", err)
		}
	})
}

func FuzzParseSettings(f *testing.F) {
	for _, s := range []string{"auth:\n  broker:\n    url: x\n", "a: &a [*a]", "providers: {x: {tokenUrl: 1}}", "- 1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSettings(data)
		if err == nil && s == nil {
			t.Fatal("nil settings without error")
		}
	})
}

func TestParseSettingsSecretsEnabled(t *testing.T) {
	for doc, want := range map[string]bool{
		"secrets:\n  enabled: true\n": true, "secrets.enabled: \"true\"\n": true, "secrets:\n  enabled: false\n": false,
		"secrets:\n  enabled: 1\n": false, "{}": false,
	} {
		s, err := ParseSettings([]byte(doc))
		if err != nil || s.SecretsEnabled != want {
			t.Errorf("%q: SecretsEnabled = %v (%v), want %v", doc, s.SecretsEnabled, err, want)
		}
	}
}
