package cli

import (
	"strings"
	"testing"
)

// TestAgentMissingCredentialNamesLogin: a known model whose provider has
// no credential fails naming the model, the provider and the ways to add
// one: the broker login in broker mode, the environment variable without.
func TestAgentMissingCredentialNamesLogin(t *testing.T) {
	b := startBroker(t, "")
	b.upload(t, apiKeyCred("openai", "sk-openai-only"))
	c := newCLI(t)
	c.useBroker(b)
	r := c.run("", "-p", "--no-session", "--model", "gemini-2.5-pro", "hi")
	want := `No API key for provider "google": model google/gemini-2.5-pro needs a google credential and the auth broker holds none; run omp auth-broker login google, or set GEMINI_API_KEY`
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("broker mode: exit %d %q\nwant %q", r.code, r.stderr, want)
	}

	local := newCLI(t)
	r = local.run("", "-p", "--no-session", "--model", "anthropic/claude-sonnet-4-5", "hi")
	want = `No API key for provider "anthropic": model anthropic/claude-sonnet-4-5 needs an anthropic credential; run omp login anthropic, set ANTHROPIC_OAUTH_TOKEN or ANTHROPIC_API_KEY, pass --api-key, or set apiKey in models.yml`
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("local mode: exit %d %q\nwant %q", r.code, r.stderr, want)
	}
}
