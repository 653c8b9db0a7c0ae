package cli

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault/oauth/oauthtest"
)

// TestAgentLoginUploadsToTheConfiguredBroker: `omp login` with a broker
// configured stores the OAuth credential on the broker, like `omp
// auth-broker login`, and says whom it logged in and where it went.
func TestAgentLoginUploadsToTheConfiguredBroker(t *testing.T) {
	b := startBroker(t, "")
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) {
		f.Reply = map[string]any{"access_token": "at-agent", "refresh_token": "rt-agent-secret", "expires_in": 3600,
			"account":      map[string]any{"uuid": "u-agent", "email_address": "agent@example.com"},
			"organization": map[string]any{"uuid": "org-a", "name": "Team A"}}
	})
	c := newCLI(t)
	c.useBroker(b)
	c.useFake(fake, "anthropic")
	r := c.loginCmd(context.Background(), "", nil, "login", "anthropic")
	if r.code != 0 || !strings.HasSuffix(r.stdout, "\nLogged in to Anthropic (Claude Pro/Max) as agent@example.com (Team A)\n"+
		"Credentials saved to auth broker "+b.url+"\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := b.state(t); !slices.Equal(got, []string{"anthropic oauth=agent@example.com"}) {
		t.Fatalf("broker state = %v", got)
	}
	if _, err := os.Stat(c.vaultDB()); err == nil {
		t.Error("a local vault was written beside the upload")
	}
	assertNoSecrets(t, r, "rt-agent-secret")
}

// TestAgentLoginWithoutABrokerUsesTheLocalVault: without a broker the
// credential goes to the local vault; an empty optional key stores nothing;
// an unknown provider or a refused key is "Login failed: …".
func TestAgentLoginWithoutABrokerUsesTheLocalVault(t *testing.T) {
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) { f.Key = "sk-agent-good" })
	c := newCLI(t)
	c.env["OMP_PROVIDER_DEEPSEEK_BASE_URL"] = fake.URL

	r := c.loginCmd(context.Background(), "sk-agent-good\n", nil, "login", "deepseek")
	if r.code != 0 || !strings.HasSuffix(r.stdout, "\nLogged in to DeepSeek\nCredentials saved to "+c.vaultDB()+"\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := c.localState(); !slices.Equal(got, []string{"deepseek key=sk-agent-good []"}) {
		t.Fatalf("vault = %v", got)
	}

	r = c.loginCmd(context.Background(), "sk-agent-bad\n", nil, "login", "deepseek")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "Login failed: DeepSeek API key validation failed: 401") {
		t.Fatalf("bad key: exit %d stderr %q", r.code, r.stderr)
	}
	assertNoSecrets(t, r, "sk-agent-bad")

	if r := c.loginCmd(context.Background(), "\n", nil, "login", "ollama"); r.code != 0 ||
		!strings.HasSuffix(r.stdout, "No credentials were stored for Ollama (Local OpenAI-compatible).\n") {
		t.Fatalf("empty key: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := c.loginCmd(context.Background(), "", nil, "login", "nope"); r.code != 1 || r.stdout != "" ||
		r.stderr != "Login failed: Unknown OAuth provider 'nope'. Run `omp login` to pick one.\n" {
		t.Fatalf("unknown provider: exit %d stderr %q", r.code, r.stderr)
	}
	// The picker lists the same providers as auth-broker login.
	if r := c.loginCmd(context.Background(), "", nil, "login"); r.code != 1 || !strings.Contains(r.stdout, "Select a provider:") ||
		r.stderr != "Login failed: Login cancelled\n" {
		t.Fatalf("picker: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}
