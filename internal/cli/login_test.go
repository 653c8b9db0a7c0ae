package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/syncbuf"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/oauth"
	"github.com/ompgo/omp/pkg/vault/oauth/oauthtest"
)

// useFake points provider's login endpoints at the fake authorization
// server and its callback at a free port, as a user would with
// OMP_PROVIDER_<ID>_* variables.
func (c *cli) useFake(fake *oauthtest.Server, provider string) {
	p, _ := oauth.NewRegistry(nil).Get(provider)
	for kind, v := range map[string]string{
		config.AuthorizeURL: fake.URL + "/authorize",
		config.TokenURL:     fake.URL + "/token",
		config.UserinfoURL:  fake.URL + "/userinfo",
		config.BaseURL:      fake.URL,
		config.RedirectURI:  "http://" + p.CallbackHost + ":0" + p.CallbackPath,
	} {
		c.env[config.ProviderURLEnv(provider, kind)] = v
	}
}

// login runs `omp auth-broker login <args>` in-process with a fake browser
// that opens the authorize URL and follows it to the callback.
func (c *cli) login(ctx context.Context, stdin string, browse func(u string) error, args ...string) result {
	c.t.Helper()
	return c.loginCmd(ctx, stdin, browse, append([]string{"auth-broker", "login"}, args...)...)
}

// loginCmd runs a login command line (auth-broker login or omp login) the
// way login does.
func (c *cli) loginCmd(ctx context.Context, stdin string, browse func(u string) error, args ...string) result {
	c.t.Helper()
	if browse == nil {
		browse = func(u string) error {
			go func() { _, _ = oauthtest.Visit(u) }()
			return nil
		}
	}
	var stdout, stderr bytes.Buffer
	a := &app{stdin: strings.NewReader(stdin), stdout: &stdout, stderr: &stderr, environ: c.environ(), cwd: c.cwd,
		openURL:   browse,
		loginHook: func(o *oauth.LoginOptions) { o.PollInterval = time.Millisecond; o.Timeout = 10 * time.Second }}
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	code := a.execute(ctx, args)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// localRecords returns the active rows of the local vault.
func (c *cli) localRecords() []vault.Record {
	c.t.Helper()
	st := c.openVault()
	defer st.Close()
	recs, err := st.List(context.Background(), "")
	if err != nil {
		c.t.Fatal(err)
	}
	return recs
}

// assertSealed fails when secret appears in the vault's database files.
func assertSealed(t *testing.T, dbPath string, secrets ...string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal"} {
		raw, err := os.ReadFile(dbPath + suffix)
		if err != nil {
			continue
		}
		for _, s := range secrets {
			if bytes.Contains(raw, []byte(s)) {
				t.Errorf("%s%s holds %q in the clear", filepath.Base(dbPath), suffix, s)
			}
		}
	}
}

func TestLoginEachProviderIntoTheLocalVault(t *testing.T) {
	codexAccess := oauthtest.JWT(map[string]any{
		"https://api.openai.com/auth":    map[string]any{"chatgpt_account_id": "acct-cx", "chatgpt_plan_type": "plus"},
		"https://api.openai.com/profile": map[string]any{"email": "cx@example.com"},
	})
	tests := []struct {
		id, refresh string
		reply       map[string]any
		setup       func(*oauthtest.Server)
		identity    string
	}{
		{"anthropic", "rt-anthropic-secret", map[string]any{"access_token": "at-anthropic-secret", "expires_in": 3600,
			"account": map[string]any{"uuid": "u-1", "email_address": "Claude@Example.com"}}, nil, "email:claude@example.com"},
		{"openai-codex", "rt-codex-secret", map[string]any{"access_token": codexAccess, "expires_in": 3600}, nil, "email:cx@example.com|org:acct-cx"},
		{"google-gemini-cli", "rt-gemini-secret", map[string]any{"access_token": "at-gemini-secret", "expires_in": 3600},
			func(f *oauthtest.Server) { f.Email, f.Project = "gem@example.com", "proj-g" }, "email:gem@example.com"},
		{"google-antigravity", "rt-ag-secret", map[string]any{"access_token": "at-ag-secret", "expires_in": 3600},
			func(f *oauthtest.Server) { f.Email, f.Project, f.Onboard = "ag@example.com", "proj-ag", true }, "email:ag@example.com"},
		{"gitlab-duo", "rt-gitlab-secret", map[string]any{"access_token": oauthtest.JWT(map[string]any{"sub": "42"}), "expires_in": 7200,
			"created_at": time.Now().Unix()}, nil, "account:42"},
		{"stencil", "rt-stencil-secret", map[string]any{"access_token": "at-stencil-secret", "expires_in": 3600},
			func(f *oauthtest.Server) { f.Email = "st@example.com" }, "email:st@example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			fake := oauthtest.New(t)
			fake.Set(func(f *oauthtest.Server) { f.Reply = tt.reply })
			fake.Set(func(f *oauthtest.Server) { f.Reply["refresh_token"] = tt.refresh })
			if tt.setup != nil {
				fake.Set(tt.setup)
			}
			c := newCLI(t)
			c.useFake(fake, tt.id)
			r := c.login(context.Background(), "", nil, tt.id)
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "\nOpen this URL in your browser:\n"+fake.URL+"/authorize?") ||
				!strings.HasSuffix(r.stdout, "\nCredentials saved to "+c.vaultDB()+"\n") {
				t.Errorf("stdout:\n%s", r.stdout)
			}
			assertNoSecrets(t, r, tt.refresh)
			ex := fake.Exchanges()
			if len(ex) != 1 || ex[0].Status != http.StatusOK || (ex[0].HadVerifier && !ex[0].VerifierOK) {
				t.Fatalf("exchanges = %+v", ex)
			}
			recs := c.localRecords()
			if len(recs) != 1 || recs[0].Provider != tt.id || recs[0].Credential.Refresh != tt.refresh || recs[0].IdentityKey != tt.identity {
				t.Fatalf("vault = %+v", recs)
			}
			assertSealed(t, c.vaultDB(), tt.refresh)

			// A second login of the same account replaces the row in place.
			fake.Set(func(f *oauthtest.Server) { f.Reply["refresh_token"] = tt.refresh + "-2" })
			if r := c.login(context.Background(), "", nil, tt.id); r.code != 0 {
				t.Fatalf("second login: %s", r.stderr)
			}
			if recs2 := c.localRecords(); len(recs2) != 1 || recs2[0].ID != recs[0].ID || recs2[0].Credential.Refresh != tt.refresh+"-2" {
				t.Fatalf("after second login: %+v", recs2)
			}
		})
	}
}

// TestLoginUploadsToTheConfiguredBroker: off the broker host the
// credential goes to the broker (POST /v1/credential), not a local vault.
func TestLoginUploadsToTheConfiguredBroker(t *testing.T) {
	b := startBroker(t, "")
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) {
		f.Reply = map[string]any{"access_token": "at-up", "refresh_token": "rt-up-secret", "expires_in": 3600,
			"account": map[string]any{"uuid": "u-up", "email_address": "up@example.com"}}
	})
	c := newCLI(t)
	c.useBroker(b)
	c.useFake(fake, "anthropic")
	r := c.login(context.Background(), "", nil, "anthropic")
	if r.code != 0 || !strings.HasSuffix(r.stdout, "\nCredentials uploaded to "+b.url+"\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := b.state(t); !slices.Equal(got, []string{"anthropic oauth=up@example.com"}) {
		t.Fatalf("broker state = %v", got)
	}
	if _, err := os.Stat(c.vaultDB()); err == nil {
		t.Error("a local vault was written beside the upload")
	}

	// A broker that does not answer fails the login before the user signs in.
	c.env["OMP_AUTH_BROKER_URL"] = "http://" + closedAddr(t)
	visited := false
	r = c.login(context.Background(), "", func(string) error { visited = true; return nil }, "anthropic")
	if r.code != 1 || !strings.Contains(r.stderr, "is not reachable, so the login could not be stored") || visited {
		t.Fatalf("unreachable broker: exit %d visited %v stderr %q", r.code, visited, r.stderr)
	}
}

// TestLoginOnTheBrokerHostIsSeenByTheRunningBroker: the local vault write
// reaches a broker serving that same vault without a restart.
func TestLoginOnTheBrokerHostIsSeenByTheRunningBroker(t *testing.T) {
	c := newCLI(t)
	m := &broker.Main{Config: broker.Config{
		Bind: "127.0.0.1:0", DBPath: c.vaultDB(), TokenPath: c.tokenPath(), KeyPath: c.vaultKey(),
		Logger: slog.New(slog.DiscardHandler), URLs: func(string, string) string { return "http://" + closedAddr(t) },
		RefreshInterval: time.Hour, PollInterval: 50 * time.Millisecond,
	}}
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; m.Close() })
	tok, _ := os.ReadFile(c.tokenPath())
	b := &testBroker{url: m.URL(), token: strings.TrimSpace(string(tok))}
	b.client = brokerclient.New(b.url, b.token, nil)

	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) {
		f.Reply = map[string]any{"access_token": "at-h", "refresh_token": "rt-h-secret", "expires_in": 3600,
			"account": map[string]any{"uuid": "u-h", "email_address": "host@example.com"}}
	})
	c.useFake(fake, "anthropic")
	if r := c.login(context.Background(), "", nil, "anthropic"); r.code != 0 {
		t.Fatalf("login: %s%s", r.stdout, r.stderr)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Equal(b.state(t), []string{"anthropic oauth=host@example.com"}) {
		if time.Now().After(deadline) {
			t.Fatalf("the running broker never saw the login: %v", b.state(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLoggedInCredentialsRefreshOnTheBroker: what each login stores is
// what the broker's refresher needs (client, Google project, identity):
// a broker serving the vault refreshes it at the same authorization server.
func TestLoggedInCredentialsRefreshOnTheBroker(t *testing.T) {
	fake := oauthtest.New(t)
	c := newCLI(t)
	providers := []string{"anthropic", "openai-codex", "google-gemini-cli", "google-antigravity", "gitlab-duo"}
	for _, id := range providers {
		c.useFake(fake, id)
	}
	for _, id := range providers {
		access := "at-" + id
		if id == "openai-codex" {
			access = oauthtest.JWT(map[string]any{"https://api.openai.com/auth": map[string]any{"chatgpt_account_id": "acct-r"}})
		}
		fake.Set(func(f *oauthtest.Server) {
			f.Reply = map[string]any{"access_token": access, "refresh_token": "rt-" + id, "expires_in": 3600,
				"account": map[string]any{"uuid": "u-" + id, "email_address": id + "@example.com"}}
			f.Email, f.Project = id+"@example.com", "proj-"+id
		})
		if r := c.login(context.Background(), "", nil, id); r.code != 0 {
			t.Fatalf("%s login: %s%s", id, r.stdout, r.stderr)
		}
		m := &broker.Main{Config: broker.Config{
			Bind: "127.0.0.1:0", DBPath: c.vaultDB(), TokenPath: c.tokenPath(), KeyPath: c.vaultKey(),
			Logger: slog.New(slog.DiscardHandler), RefreshInterval: time.Hour,
			URLs: func(p, kind string) string {
				if kind == config.TokenURL {
					return fake.URL + "/token"
				}
				return ""
			},
		}}
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		if err := m.Open(ctx); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		tok, _ := os.ReadFile(c.tokenPath())
		client := brokerclient.New(m.URL(), strings.TrimSpace(string(tok)), nil)
		res, err := client.Snapshot(ctx, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var id64 int64
		for _, e := range res.Snapshot.Credentials {
			if e.Provider == id {
				id64 = e.ID
			}
		}
		before := fake.Refreshes()
		e, err := client.Refresh(ctx, id64)
		cancel()
		<-done
		m.Close()
		if err != nil {
			t.Fatalf("%s: broker refresh of the logged-in credential: %v", id, err)
		}
		if fake.Refreshes() != before+1 || !strings.HasPrefix(e.Credential.Access, "at-refreshed-") {
			t.Fatalf("%s: refreshed entry %+v (refreshes %d)", id, e.Credential.Redacted(), fake.Refreshes()-before)
		}
	}
}

func TestLoginStateMismatchIsRejectedBeforeExchange(t *testing.T) {
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) {
		f.Reply = map[string]any{"access_token": "at", "refresh_token": "rt-mm", "expires_in": 60,
			"account": map[string]any{"email_address": "mm@example.com"}}
	})
	c := newCLI(t)
	c.useFake(fake, "anthropic")
	forged := 0
	browse := func(u string) error {
		q, _ := url.Parse(u)
		resp, err := http.Get(q.Query().Get("redirect_uri") + "?code=forged&state=evil")
		if err != nil {
			return err
		}
		resp.Body.Close()
		forged = resp.StatusCode
		go func() { _, _ = oauthtest.Visit(u) }()
		return nil
	}
	r := c.login(context.Background(), "", browse, "anthropic")
	if r.code != 0 || forged != http.StatusBadRequest {
		t.Fatalf("exit %d forged=%d\n%s%s", r.code, forged, r.stdout, r.stderr)
	}
	if ex := fake.Exchanges(); len(ex) != 1 || ex[0].Code == "forged" {
		t.Fatalf("exchanges = %+v", ex)
	}
}

// TestLoginPastedRedirect: headless, no browser: the user pastes the
// redirect URL from the browser's address bar.
func TestLoginPastedRedirect(t *testing.T) {
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) {
		f.Reply = map[string]any{"access_token": "at", "refresh_token": "rt-paste", "expires_in": 60,
			"account": map[string]any{"email_address": "paste@example.com"}}
	})
	c := newCLI(t)
	c.useFake(fake, "anthropic")
	pr, pw := io.Pipe()
	var stdout, stderr syncbuf.Buffer
	a := &app{stdin: pr, stdout: &stdout, stderr: &stderr, environ: c.environ(), cwd: c.cwd,
		openURL: func(u string) error {
			// The "browser" is on another machine: it cannot reach the
			// callback, the user copies where it landed.
			cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := cl.Get(u)
			if err != nil {
				return err
			}
			resp.Body.Close()
			go func() { _, _ = pw.Write([]byte("\n" + resp.Header.Get("Location") + "\n")) }()
			return nil
		}}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	code := a.execute(ctx, []string{"auth-broker", "login", "anthropic"})
	pw.Close()
	if code != 0 || !strings.Contains(stdout.String(), pastePrompt+" ") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if recs := c.localRecords(); len(recs) != 1 || recs[0].Credential.Email != "paste@example.com" {
		t.Fatalf("vault = %+v", recs)
	}
}

// TestLoginCancelWritesNothing: Ctrl-C while waiting for the browser
// ends the login with the reference's text and no vault row.
func TestLoginCancelWritesNothing(t *testing.T) {
	fake := oauthtest.New(t)
	c := newCLI(t)
	c.useFake(fake, "gitlab-duo")
	ctx, cancel := context.WithCancel(context.Background())
	r := c.login(ctx, "", func(string) error { cancel(); return nil }, "gitlab-duo")
	if r.code != 1 || r.stderr != "error: Login cancelled\n" {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	if recs := c.localRecords(); len(recs) != 0 || len(fake.Exchanges()) != 0 {
		t.Fatalf("vault = %+v, exchanges %d", recs, len(fake.Exchanges()))
	}
}

func TestLoginPickerAndErrors(t *testing.T) {
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) {
		f.Reply = map[string]any{"access_token": "at", "refresh_token": "rt-pick", "expires_in": 60,
			"account": map[string]any{"email_address": "pick@example.com"}}
	})
	c := newCLI(t)
	c.useFake(fake, "anthropic")
	r := c.login(context.Background(), "2\n", nil)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantStart := "Select a provider:\n\n  1. ChatGPT Plus/Pro (Codex Subscription)\n  2. Anthropic (Claude Pro/Max)\n"
	if !strings.HasPrefix(r.stdout, wantStart) || !strings.Contains(r.stdout, "\n\nEnter number (1-") {
		t.Fatalf("picker:\n%s", r.stdout)
	}
	if recs := c.localRecords(); len(recs) != 1 || recs[0].Provider != "anthropic" {
		t.Fatalf("vault = %+v", recs)
	}

	for _, tt := range []struct {
		stdin  string
		args   []string
		stderr string
	}{
		{"99\n", nil, "error: Invalid selection: 99\n"},
		{"", nil, "error: Login cancelled\n"},
		{"", []string{"nope"}, "error: Unknown OAuth provider 'nope'. Known: anthropic, cerebras, deepseek, firepass, fireworks, gitlab-duo, google-antigravity, google-gemini-cli, huggingface, kagi, litellm, lm-studio, minimax-code, minimax-code-cn, moonshot, nanogpt, nvidia, ollama, ollama-cloud, openai-codex, opencode-go, opencode-zen, parallel, qianfan, qwen-portal, singularityapi-dev, singularityapi-tech, stencil, stepfun, synthetic, tavily, together, typesafe, venice, vercel-ai-gateway, vllm, wafer-serverless, xiaomi-token-plan-ams, xiaomi-token-plan-cn, xiaomi-token-plan-sgp, zai, zenmux, zhipu-coding-plan\n"},
		{"", []string{"--via=me@host"}, "error: " + viaUsage + "\n"},
		{"", []string{"deepseek", "--via=me@host"}, "error: No known OAuth callback port for 'deepseek'. Use device-code flow on the broker host directly.\n"},
	} {
		r := c.login(context.Background(), tt.stdin, nil, tt.args...)
		if r.code != 1 || r.stderr != tt.stderr {
			t.Errorf("login %v <%q: exit %d stderr %q, want %q", tt.args, tt.stdin, r.code, r.stderr, tt.stderr)
		}
	}
}

func TestLoginAPIKey(t *testing.T) {
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) { f.Key = "sk-deepseek-good" })
	c := newCLI(t)
	c.env["OMP_PROVIDER_DEEPSEEK_BASE_URL"] = fake.URL
	c.seed(apiKeyCred("deepseek", "sk-old"))

	r := c.login(context.Background(), "sk-wrong-secret\n", nil, "deepseek")
	if r.code != 1 || !strings.Contains(r.stderr, "DeepSeek API key validation failed: 401") {
		t.Fatalf("bad key: exit %d stderr %q", r.code, r.stderr)
	}
	assertNoSecrets(t, r, "sk-wrong-secret")

	r = c.login(context.Background(), "Bearer sk-deepseek-good\n", nil, "deepseek")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantLines(t, r.stdout, "", "Open this URL in your browser:", "https://platform.deepseek.com/api_keys",
		"Create or copy your API key from the DeepSeek dashboard", "", "Paste your DeepSeek API key (sk-...): ",
		"Validating API key...", "", "Credentials saved to "+c.vaultDB())
	// Replace-all: the new key is the only one left (an active API key
	// purges the provider's replaced keys, as 18.1.21 does).
	if got := c.localState(); !slices.Equal(got, []string{"deepseek key=sk-deepseek-good []"}) {
		t.Fatalf("vault = %v", got)
	}
	if recs := c.localRecords(); len(recs) != 1 || recs[0].Credential.Source != vault.SourceLogin {
		t.Fatalf("a login key is stored with source %q, want %q (18.1.21)", recs[0].Credential.Source, vault.SourceLogin)
	}

	// A flow without a validation endpoint stores what was pasted; an
	// empty paste stores nothing.
	if r := c.login(context.Background(), "\n", nil, "tavily"); r.code != 1 || r.stderr != "error: API key is required\n" {
		t.Fatalf("empty key: exit %d stderr %q", r.code, r.stderr)
	}
	r = c.login(context.Background(), "tvly-123\n", nil, "tavily")
	if r.code != 0 || strings.Contains(r.stdout, "Validating") {
		t.Fatalf("tavily: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := c.localState(); !slices.Contains(got, "tavily key=tvly-123 []") || len(got) != 2 {
		t.Fatalf("vault = %v", got)
	}

	// A chat-completion probe (Cerebras) through the CLI.
	fake.Set(func(f *oauthtest.Server) { f.Key = "csk-good" })
	c.env["OMP_PROVIDER_CEREBRAS_BASE_URL"] = fake.URL
	if r := c.login(context.Background(), "csk-wrong-secret\n", nil, "cerebras"); r.code != 1 || !strings.Contains(r.stderr, "Cerebras API key validation failed: 401") {
		t.Fatalf("cerebras bad key: exit %d stderr %q", r.code, r.stderr)
	}
	if r := c.login(context.Background(), "csk-good\n", nil, "cerebras"); r.code != 0 || !strings.Contains(r.stdout, "Validating API key...") {
		t.Fatalf("cerebras: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Ollama: an empty paste is local no-auth mode — nothing stored, exit 0.
	before := c.localState()
	if r := c.login(context.Background(), "\n", nil, "ollama"); r.code != 0 || !strings.Contains(r.stdout, "No API key entered; nothing stored.") {
		t.Fatalf("ollama empty: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := c.localState(); !slices.Contains(got, "cerebras key=csk-good []") || len(got) != len(before) {
		t.Fatalf("vault = %v (before %v)", got, before)
	}
}

// TestLoginWithClosedStdinFailsAtOnce: with no browser here the code must
// be pasted; stdin at its end fails the login at once, naming the fix,
// instead of waiting out the login timeout.
func TestLoginWithClosedStdinFailsAtOnce(t *testing.T) {
	fake := oauthtest.New(t)
	c := newCLI(t)
	c.useFake(fake, "anthropic")
	start := time.Now()
	r := c.run("", "auth-broker", "login", "anthropic")
	want := "error: login anthropic needs a terminal: stdin ended before an authorization code was pasted and no browser here can reach the callback; " +
		"run `omp auth-broker login anthropic` in a terminal and paste the redirect URL or code, or run it from your workstation with --via=user@host\n"
	if r.code != 1 || r.stderr != want || !strings.HasSuffix(r.stdout, pastePrompt+" \n") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant   %q", r.code, r.stdout, r.stderr, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("login took %v with stdin closed", d)
	}
	if recs := c.localRecords(); len(recs) != 0 || len(fake.Exchanges()) != 0 {
		t.Fatalf("vault = %+v, exchanges %d", recs, len(fake.Exchanges()))
	}
}
