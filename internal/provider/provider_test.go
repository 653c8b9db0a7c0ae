package provider

import (
	"slices"
	"testing"
)

func TestClientIDs(t *testing.T) {
	for got, want := range map[string]string{
		AnthropicClientID:       "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
		GeminiCLIClientID:       "681255809395-oo8ft2oprdrnp9e3aqf6av3hmdib135j.apps.googleusercontent.com",
		AntigravityClientID:     "1071006060591-tmhssin2h21lcre235vtolojh4g403ep.apps.googleusercontent.com",
		GeminiCLIClientSecret:   "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",
		AntigravityClientSecret: "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",
	} {
		if got != want {
			t.Errorf("decoded %q, want %q", got, want)
		}
	}
}

func TestScopesAreFreshSlices(t *testing.T) {
	a := GoogleScopes()
	a[0] = "x"
	if GoogleScopes()[0] == "x" || len(AntigravityScopes()) != len(GoogleScopes())+2 {
		t.Fatal("scopes shared")
	}
	if !slices.Contains(AnthropicScopes(), "user:inference") || CodexScopes()[0] != "openid" || GitLabScopes()[0] != "api" {
		t.Fatal("scopes")
	}
	if AntigravityUserAgentVersion(AntigravityVersion) != AntigravityUserAgent {
		t.Fatal("antigravity user agent")
	}
}
