package config

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestEnvProvidersOrderAndKeys(t *testing.T) {
	ps := EnvProviders()
	if ps[0] != "anthropic" || ps[len(ps)-1] != "brave" {
		t.Fatalf("order: first %q last %q", ps[0], ps[len(ps)-1])
	}
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p] {
			t.Fatalf("duplicate provider %q", p)
		}
		seen[p] = true
	}
	for _, p := range []string{"google-antigravity", "google-gemini-cli", "kimi-code"} {
		if seen[p] || EnvKeys(p) != nil {
			t.Errorf("%s must have no env mapping", p)
		}
	}
	if got := EnvKeys("huggingface"); !slices.Equal(got, []string{"HUGGINGFACE_HUB_TOKEN", "HF_TOKEN"}) {
		t.Errorf("huggingface = %v", got)
	}
}

func TestEnvAPIKey(t *testing.T) {
	home := t.TempDir()
	adc := filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")
	gac := filepath.Join(t.TempDir(), "sa.json")
	writeFile(t, gac, "{}")
	tests := []struct {
		name     string
		env      map[string]string
		adcFile  bool
		provider string
		want     string
	}{
		{"single variable", map[string]string{"OPENAI_API_KEY": "sk-1"}, false, "openai", "sk-1"},
		{"first non-empty of several", map[string]string{"HUGGINGFACE_HUB_TOKEN": " ", "HF_TOKEN": "hf"}, false, "huggingface", "hf"},
		{"value trimmed", map[string]string{"GROQ_API_KEY": " g \t"}, false, "groq", "g"},
		{"unmapped provider", map[string]string{"X": "y"}, false, "google-antigravity", ""},
		{"anthropic default order", map[string]string{"ANTHROPIC_API_KEY": "api", "ANTHROPIC_OAUTH_TOKEN": "oat", "ANTHROPIC_FOUNDRY_API_KEY": "f"}, false, "anthropic", "oat"},
		{"anthropic foundry order", map[string]string{"CLAUDE_CODE_USE_FOUNDRY": " On ", "ANTHROPIC_API_KEY": "api", "ANTHROPIC_OAUTH_TOKEN": "oat", "ANTHROPIC_FOUNDRY_API_KEY": "f"}, false, "anthropic", "f"},
		{"foundry flag off", map[string]string{"CLAUDE_CODE_USE_FOUNDRY": "0", "ANTHROPIC_API_KEY": "api", "ANTHROPIC_FOUNDRY_API_KEY": "f"}, false, "anthropic", "api"},
		{"vertex explicit key", map[string]string{"GOOGLE_CLOUD_API_KEY": "gk"}, false, "google-vertex", "gk"},
		{"vertex ADC with project and location", map[string]string{"GCP_PROJECT": "p", "VERTEX_LOCATION": "us"}, true, "google-vertex", AuthenticatedSentinel},
		{"vertex GOOGLE_APPLICATION_CREDENTIALS file", map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": gac, "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us"}, false, "google-vertex", AuthenticatedSentinel},
		{"vertex ADC without location", map[string]string{"GCP_PROJECT": "p"}, true, "google-vertex", ""},
		{"vertex without ADC file", map[string]string{"GCP_PROJECT": "p", "VERTEX_LOCATION": "us"}, false, "google-vertex", ""},
		{"bedrock profile", map[string]string{"AWS_PROFILE": "dev"}, false, "amazon-bedrock", AuthenticatedSentinel},
		{"bedrock key pair", map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}, false, "amazon-bedrock", AuthenticatedSentinel},
		{"bedrock half key pair", map[string]string{"AWS_ACCESS_KEY_ID": "a"}, false, "amazon-bedrock", ""},
		{"bedrock web identity needs role", map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": "/f"}, false, "amazon-bedrock", ""},
		{"bedrock web identity", map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": "/f", "AWS_ROLE_ARN": "arn"}, false, "amazon-bedrock", AuthenticatedSentinel},
		{"bedrock container credentials", map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://x"}, false, "amazon-bedrock", AuthenticatedSentinel},
		{"bedrock bearer", map[string]string{"AWS_BEARER_TOKEN_BEDROCK": "b"}, false, "amazon-bedrock", AuthenticatedSentinel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := filepath.Join(t.TempDir(), "home")
			if tt.adcFile {
				h = home
				writeFile(t, adc, "{}")
			}
			m := map[string]string{"HOME": h}
			for k, v := range tt.env {
				m[k] = v
			}
			if got := EnvAPIKey(NewEnv(m), tt.provider); got != tt.want {
				t.Fatalf("EnvAPIKey(%s) = %q, want %q", tt.provider, got, tt.want)
			}
		})
	}
}
