package config

import "testing"

func TestProviderURL(t *testing.T) {
	s, err := ParseSettings([]byte(`
providers:
  anthropic:
    tokenUrl: https://cfg-token
    usageUrl: https://cfg-usage
    authorizeUrl: https://cfg-authorize
  google-gemini-cli:
    userinfoUrl: https://cfg-userinfo
  llama.cpp:
    baseUrl: http://cfg-base
`))
	if err != nil {
		t.Fatal(err)
	}
	env := NewEnv(map[string]string{
		"OMP_PROVIDER_ANTHROPIC_TOKEN_URL":      "https://env-token",
		"OMP_PROVIDER_OPENAI_CODEX_BASE_URL":    "https://env-codex",
		"OMP_PROVIDER_LLAMA_CPP_BASE_URL":       "",
		"OMP_PROVIDER_GITLAB_DUO_AUTHORIZE_URL": "https://env-gl-authorize",
		"GITLAB_CLIENT_ID":                      "gl-ref-client",
		"GITLAB_REDIRECT_URI":                   "http://localhost:9999/cb",
		"OMP_PROVIDER_ANTHROPIC_CLIENT_ID":      "anthropic-own",
	})
	u := URLs{Env: env, Settings: s}
	var hook func(provider, kind string) string = u.URL
	tests := []struct {
		name, provider, kind, want string
	}{
		{"env wins over config", "anthropic", TokenURL, "https://env-token"},
		{"config when env unset", "anthropic", UsageURL, "https://cfg-usage"},
		{"unset everywhere", "anthropic", BaseURL, ""},
		{"dash becomes underscore", "openai-codex", BaseURL, "https://env-codex"},
		{"dot becomes underscore; empty env counts as unset", "llama.cpp", BaseURL, "http://cfg-base"},
		{"unknown kind", "anthropic", "authUrl", ""},
		{"authorize URL from config", "anthropic", AuthorizeURL, "https://cfg-authorize"},
		{"authorize URL from env", "gitlab-duo", AuthorizeURL, "https://env-gl-authorize"},
		{"userinfo URL from config", "google-gemini-cli", UserinfoURL, "https://cfg-userinfo"},
		{"client id from env", "anthropic", ClientID, "anthropic-own"},
		{"GITLAB_CLIENT_ID for gitlab-duo", "gitlab-duo", ClientID, "gl-ref-client"},
		{"GITLAB_REDIRECT_URI for gitlab-duo", "gitlab-duo", RedirectURI, "http://localhost:9999/cb"},
		{"GITLAB_CLIENT_ID is not another provider's", "openai-codex", ClientID, ""},
		{"unknown provider", "nope", TokenURL, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hook(tt.provider, tt.kind); got != tt.want {
				t.Fatalf("URL(%q, %q) = %q, want %q", tt.provider, tt.kind, got, tt.want)
			}
		})
	}
	if got := ProviderURL(nil, nil, "anthropic", TokenURL); got != "" {
		t.Fatalf("nil env/settings = %q", got)
	}
	if got := ProviderURLEnv("google-gemini-cli", UsageURL); got != "OMP_PROVIDER_GOOGLE_GEMINI_CLI_USAGE_URL" {
		t.Fatalf("env name = %q", got)
	}
	if got := ProviderURLEnv("vertex.ai-2", BaseURL); got != "OMP_PROVIDER_VERTEX_AI_2_BASE_URL" {
		t.Fatalf("env name = %q", got)
	}
}
