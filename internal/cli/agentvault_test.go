package cli

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/vault/oauth/oauthtest"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// fakeTokens is an OAuth token endpoint that rotates refresh tokens: each
// grant answers access token acc-fresh and refresh token r2, and records
// the request bodies.
type fakeTokens struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newFakeTokens(t *testing.T) *fakeTokens {
	f := &fakeTokens{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, string(b))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"acc-fresh","refresh_token":"r2","expires_in":3600,"token_type":"Bearer"}`)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeTokens) grants() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bodies)
}

// seedExpiredOAuth stores an anthropic OAuth credential (access acc-r1,
// refresh r1) whose access token expired a minute ago.
func (c *cli) seedExpiredOAuth() {
	pc := oauthCred("anthropic", "a@example.com", "r1")
	pc.cred.Expires = time.Now().Add(-time.Minute).UnixMilli()
	c.seed(pc)
}

// TestAgentLocalVaultUsesAnAPIKeyFromLogin: without a broker, an API key
// that `omp login` stored in the local vault is what `omp -p` sends
// upstream, with and without --model (after --api-key, before the
// environment variable); a provider the vault lacks names
// omp login; the agent claims the vault only to refresh, so a broker can
// start beside it.
func TestAgentLocalVaultUsesAnAPIKeyFromLogin(t *testing.T) {
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) { f.Key = "sk-deepseek-stored" })
	c := newCLI(t)
	c.env["OMP_PROVIDER_DEEPSEEK_BASE_URL"] = fake.URL
	if r := c.loginCmd(context.Background(), "sk-deepseek-stored\n", nil, "login", "deepseek"); r.code != 0 {
		t.Fatalf("login: exit %d\n%s", r.code, r.stderr)
	}

	up := newFakeAnthropic(t)
	up.wire = llm.APIOpenAIChat
	c.env["OMP_PROVIDER_DEEPSEEK_BASE_URL"] = up.srv.URL + "/v1"
	up.push(asst(llm.StopEnd, llm.Text("named model")), asst(llm.StopEnd, llm.Text("default model")))
	if r := c.run("", "-p", "--no-session", "--model", "deepseek/deepseek-v4-flash", "hi"); r.code != 0 || r.stdout != "named model\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := c.run("", "-p", "--no-session", "hi"); r.code != 0 || r.stdout != "default model\n" {
		t.Fatalf("without --model: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	// --api-key beats the vault; the vault beats the environment variable,
	// as the broker does in broker mode.
	up.push(asst(llm.StopEnd, llm.Text("flag")), asst(llm.StopEnd, llm.Text("env")))
	if r := c.run("", "-p", "--no-session", "--model", "deepseek/deepseek-v4-flash", "--api-key", "sk-from-flag", "hi"); r.code != 0 || r.stdout != "flag\n" {
		t.Fatalf("--api-key: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	c.env["DEEPSEEK_API_KEY"] = "sk-from-env"
	if r := c.run("", "-p", "--no-session", "--model", "deepseek/deepseek-v4-flash", "hi"); r.code != 0 || r.stdout != "env\n" {
		t.Fatalf("with DEEPSEEK_API_KEY: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	delete(c.env, "DEEPSEEK_API_KEY")
	if got := strings.Join(up.keys, ","); got != "sk-deepseek-stored,sk-deepseek-stored,sk-from-flag,sk-deepseek-stored" {
		t.Fatalf("upstream keys %s", got)
	}

	r := c.run("", "-p", "--no-session", "--model", "anthropic/claude-sonnet-4-5", "hi")
	want := `No API key for provider "anthropic": model anthropic/claude-sonnet-4-5 needs an anthropic credential and the local vault holds none; run omp login anthropic, or set ANTHROPIC_OAUTH_TOKEN or ANTHROPIC_API_KEY`
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("missing provider: exit %d %q\nwant %q", r.code, r.stderr, want)
	}

	hold, err := sqlite.HoldVault(c.vaultDB())
	if err != nil {
		t.Fatalf("the agent left the vault held: %v", err)
	}
	hold.Release()

	// An agent that has refreshed nothing does not keep a broker from
	// starting on the vault.
	a := &app{stdout: io.Discard, stderr: io.Discard, environ: c.environ(), cwd: c.cwd}
	env, dirs, err := a.setup()
	if err != nil {
		t.Fatal(err)
	}
	ab, err := a.openAgentVault(context.Background(), env, dirs, &config.Settings{}, io.Discard)
	if err != nil || ab == nil || !ab.has(context.Background(), "deepseek") {
		t.Fatalf("openAgentVault: %v %v", ab, err)
	}
	defer ab.stop()
	hold, err = sqlite.HoldVault(c.vaultDB())
	if err != nil {
		t.Fatalf("an agent that refreshed nothing holds the vault: %v", err)
	}
	hold.Release()
}

// TestAgentLocalVaultRefreshesAnExpiredOAuthToken: with no one serving
// the vault, the agent refreshes an expired access token at the provider's
// token endpoint before the request, uses the new one upstream, and the
// rotated refresh token is stored in the vault.
func TestAgentLocalVaultRefreshesAnExpiredOAuthToken(t *testing.T) {
	c := newCLI(t)
	c.seedExpiredOAuth()
	tokens := newFakeTokens(t)
	up := newFakeAnthropic(t)
	c.env["OMP_PROVIDER_ANTHROPIC_TOKEN_URL"] = tokens.srv.URL
	c.env["OMP_PROVIDER_ANTHROPIC_BASE_URL"] = up.srv.URL
	up.push(asst(llm.StopEnd, llm.Text("refreshed")))

	r := c.run("", "-p", "--no-session", "--model", "anthropic/claude-3-haiku-20240307", "hi")
	if r.code != 0 || r.stdout != "refreshed\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if g := tokens.grants(); len(g) != 1 || !strings.Contains(g[0], `"r1"`) && !strings.Contains(g[0], "=r1") {
		t.Fatalf("token grants %q, want one with refresh token r1", g)
	}
	if got := strings.Join(up.keys, ","); got != "acc-fresh" {
		t.Fatalf("upstream credentials %s, want acc-fresh", got)
	}
	st := c.openVault()
	defer st.Close()
	recs, err := st.List(context.Background(), "anthropic")
	if err != nil || len(recs) != 1 || recs[0].Credential.Refresh != "r2" || recs[0].Credential.Access != "acc-fresh" {
		t.Fatalf("vault after the run: %v %+v", err, recs)
	}
	assertNoSecrets(t, r, "acc-r1", "acc-fresh", "r2")
}

// TestAgentLocalVaultLeavesRefreshToTheServingBroker: while a broker
// serves the local vault, the agent never refreshes (not near expiry, not
// after a 401): it sends the stored access token and says how to use the
// broker instead.
func TestAgentLocalVaultLeavesRefreshToTheServingBroker(t *testing.T) {
	c := newCLI(t)
	c.seedExpiredOAuth()
	m := c.serveVaultURLs(t, "http://"+closedAddr(t)) // the broker's own refreshes fail
	tokens := newFakeTokens(t)
	up := newFakeAnthropic(t)
	c.env["OMP_PROVIDER_ANTHROPIC_TOKEN_URL"] = tokens.srv.URL
	c.env["OMP_PROVIDER_ANTHROPIC_BASE_URL"] = up.srv.URL
	up.push(asst(llm.StopEnd, llm.Text("stored token")),
		fakeError{401, `{"type":"error","error":{"type":"authentication_error","message":"invalid bearer token"}}`})

	hint := "Set OMP_AUTH_BROKER_URL=" + m.URL() + " to use the broker"
	r := c.run("", "-p", "--no-session", "--model", "anthropic/claude-3-haiku-20240307", "hi")
	if r.code != 0 || r.stdout != "stored token\n" || !strings.Contains(r.stderr, hint) {
		t.Fatalf("exit %d stdout %q stderr %q\nwant %q", r.code, r.stdout, r.stderr, hint)
	}
	r = c.run("", "-p", "--no-session", "--model", "anthropic/claude-3-haiku-20240307", "hi")
	if r.code != 1 {
		t.Fatalf("after a 401: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if g := tokens.grants(); len(g) != 0 {
		t.Fatalf("the agent refreshed beside the broker: %q", g)
	}
	if got := strings.Join(up.keys, ","); got != "acc-r1,acc-r1" {
		t.Fatalf("upstream credentials %s, want the stored acc-r1 twice", got)
	}
}

// serveVaultURLs is serveVault with every upstream URL of the broker at
// upstream.
func (c *cli) serveVaultURLs(t *testing.T, upstream string) *broker.Main {
	t.Helper()
	m := &broker.Main{Config: broker.Config{
		Bind: "127.0.0.1:0", DBPath: c.vaultDB(), TokenPath: c.tokenPath(), KeyPath: c.vaultKey(),
		Logger: slog.New(slog.DiscardHandler), RefreshInterval: time.Hour, PollInterval: 50 * time.Millisecond,
		URLs: func(string, string) string { return upstream },
	}}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done; m.Close() })
	return m
}
