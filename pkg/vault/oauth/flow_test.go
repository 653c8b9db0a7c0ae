package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/oauth"
	"github.com/ompgo/omp/pkg/vault/oauth/oauthtest"
)

// fakeRegistry points every endpoint of every provider at the fake.
func fakeRegistry(fake *oauthtest.Server) *oauth.Registry {
	return oauth.NewRegistry(func(_, kind string) string {
		switch kind {
		case oauth.KindAuthorizeURL:
			return fake.URL + "/authorize"
		case oauth.KindTokenURL:
			return fake.URL + "/token"
		case oauth.KindUserinfoURL:
			return fake.URL + "/userinfo"
		case oauth.KindBaseURL:
			return fake.URL
		}
		return ""
	})
}

// freeRedirect is the provider's redirect URI on a free port.
func freeRedirect(t *testing.T, reg *oauth.Registry, id string) string {
	p, ok := reg.Get(id)
	if !ok {
		t.Fatalf("no provider %s", id)
	}
	return "http://" + p.CallbackHost + ":0" + p.CallbackPath
}

func TestLoginPerProvider(t *testing.T) {
	codexAccess := oauthtest.JWT(map[string]any{
		"https://api.openai.com/auth":    map[string]any{"chatgpt_account_id": "acct-codex", "chatgpt_plan_type": "Pro"},
		"https://api.openai.com/profile": map[string]any{"email": "Codex@Example.com"},
	})
	tests := []struct {
		id        string
		reply     map[string]any
		setup     func(f *oauthtest.Server)
		json      bool // the exchange is a JSON body carrying the state
		pkce      bool
		want      func(t *testing.T, c vault.Credential)
		wantIdent string
	}{
		{id: "anthropic", json: true, pkce: true,
			reply: map[string]any{"access_token": "at-anth", "refresh_token": "rt-anth", "expires_in": 3600,
				"account":      map[string]any{"uuid": "acct-a", "email_address": "a@example.com"},
				"organization": map[string]any{"uuid": "org-1", "name": "Org One"}},
			want: func(t *testing.T, c vault.Credential) {
				if c.AccountID != "acct-a" || c.Email != "a@example.com" || string(c.Extra["orgId"]) != `"org-1"` || string(c.Extra["orgName"]) != `"Org One"` {
					t.Errorf("identity = %+v extra=%s", c, c.Extra)
				}
				if _, ok := c.Extra["authorizedAt"]; !ok {
					t.Error("authorizedAt not stamped")
				}
			}, wantIdent: "email:a@example.com|org:org-1"}, // the organisation scopes the key
		{id: "openai-codex", pkce: true,
			reply: map[string]any{"access_token": codexAccess, "refresh_token": "rt-codex", "expires_in": 3600, "id_token": "x.y.z"},
			want: func(t *testing.T, c vault.Credential) {
				if c.AccountID != "acct-codex" || c.Email != "codex@example.com" || string(c.Extra["orgId"]) != `"acct-codex"` || string(c.Extra["orgName"]) != `"pro"` {
					t.Errorf("identity = %+v extra=%s", c, c.Extra)
				}
			}, wantIdent: "email:codex@example.com|org:acct-codex"},
		{id: "google-gemini-cli",
			reply: map[string]any{"access_token": "at-gem", "refresh_token": "rt-gem", "expires_in": 3600},
			setup: func(f *oauthtest.Server) { f.Email, f.Project, f.Onboard = "g@example.com", "proj-gem", true },
			want: func(t *testing.T, c vault.Credential) {
				if c.Email != "g@example.com" || c.ProjectID != "proj-gem" {
					t.Errorf("credential = %+v", c)
				}
			}, wantIdent: "email:g@example.com"},
		{id: "google-antigravity",
			reply: map[string]any{"access_token": "at-ag", "refresh_token": "rt-ag", "expires_in": 3600},
			setup: func(f *oauthtest.Server) { f.Email, f.Project, f.Onboard = "ag@example.com", "proj-ag", true },
			want: func(t *testing.T, c vault.Credential) {
				if c.Email != "ag@example.com" || c.ProjectID != "proj-ag" {
					t.Errorf("credential = %+v", c)
				}
			}, wantIdent: "email:ag@example.com"},
		{id: "gitlab-duo", pkce: true,
			reply: map[string]any{"access_token": "at-gl", "refresh_token": "rt-gl", "expires_in": 7200, "created_at": 2000000000},
			want: func(t *testing.T, c vault.Credential) {
				if want := int64(2000000000+7200)*1000 - 5*60*1000; c.Expires != want {
					t.Errorf("expires = %d, want %d (from created_at)", c.Expires, want)
				}
				if !strings.HasPrefix(c.EnterpriseURL, "http://127.0.0.1:") {
					t.Errorf("enterpriseUrl = %q, want the self-managed instance", c.EnterpriseURL)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			fake := oauthtest.New(t)
			fake.Set(func(f *oauthtest.Server) { f.Reply = tt.reply })
			if tt.setup != nil {
				fake.Set(tt.setup)
			}
			reg := fakeRegistry(fake)
			var authURL string
			var progress []string
			cred, err := reg.Login(context.Background(), tt.id, oauth.LoginOptions{
				RedirectURL:  freeRedirect(t, reg, tt.id),
				Timeout:      10 * time.Second,
				PollInterval: time.Millisecond,
				Auth:         func(u, _ string) { authURL = u },
				Browser: func(u string) error {
					go func() {
						if st, err := oauthtest.Visit(u); err != nil || st != http.StatusOK {
							t.Errorf("callback: status %d err %v", st, err)
						}
					}()
					return nil
				},
				Progress: func(m string) { progress = append(progress, m) },
			})
			if err != nil {
				t.Fatalf("Login: %v (progress %q)", err, progress)
			}
			ex := fake.Exchanges()
			if len(ex) != 1 || ex[0].Status != http.StatusOK {
				t.Fatalf("exchanges = %+v", ex)
			}
			if ex[0].HadVerifier != tt.pkce || (tt.pkce && !ex[0].VerifierOK) {
				t.Errorf("PKCE: sent=%v ok=%v, want sent=%v", ex[0].HadVerifier, ex[0].VerifierOK, tt.pkce)
			}
			if ex[0].JSON != tt.json || (tt.json && ex[0].State == "") {
				t.Errorf("exchange JSON=%v state=%q", ex[0].JSON, ex[0].State)
			}
			if u, _ := url.Parse(authURL); u.Query().Get("state") == "" || (tt.pkce && u.Query().Get("code_challenge_method") != "S256") {
				t.Errorf("authorize URL %s", authURL)
			}
			if cred.Type != vault.TypeOAuth || cred.Access != tt.reply["access_token"] || cred.Refresh != tt.reply["refresh_token"] || cred.Expires == 0 {
				t.Errorf("credential = %+v", cred)
			}
			if tt.want != nil {
				tt.want(t, cred)
			}
			if strings.HasPrefix(tt.id, "google-") && fake.Calls("/v1internal:onboardUser") != 1 {
				t.Errorf("onboardUser called %d times, want 1", fake.Calls("/v1internal:onboardUser"))
			}
			if tt.wantIdent != "" {
				if got := vault.IdentityKey(tt.id, cred); got != tt.wantIdent {
					t.Errorf("identity key = %q, want %q", got, tt.wantIdent)
				}
			}
		})
	}
}

// TestLoginRejectsForeignState: a callback or a paste carrying another
// state never reaches the token endpoint; the login keeps waiting and a
// genuine paste still completes it.
func TestLoginRejectsForeignState(t *testing.T) {
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) {
		f.Reply = map[string]any{"access_token": "at", "refresh_token": "rt", "expires_in": 60, "account": map[string]any{"email_address": "s@x.io"}}
	})
	reg := fakeRegistry(fake)
	paste := make(chan string, 3)
	var mu sync.Mutex
	var progress []string
	var redirect string
	cred, err := reg.Login(context.Background(), "anthropic", oauth.LoginOptions{
		RedirectURL: freeRedirect(t, reg, "anthropic"),
		Timeout:     10 * time.Second,
		Paste:       paste,
		Auth: func(u, _ string) {
			q, _ := url.Parse(u)
			redirect = q.Query().Get("redirect_uri")
		},
		Browser: func(u string) error {
			// A forged callback with a foreign state is refused.
			resp, err := http.Get(redirect + "?code=forged&state=not-ours")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("forged callback answered %d", resp.StatusCode)
			}
			// The provider's real code, pasted with a foreign state, then right.
			c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err = c.Get(u)
			if err != nil {
				return err
			}
			resp.Body.Close()
			loc, _ := url.Parse(resp.Header.Get("Location"))
			code, state := loc.Query().Get("code"), loc.Query().Get("state")
			paste <- code + "#wrong-state"
			paste <- "   " + loc.String() + "  "
			_ = state
			return nil
		},
		Progress: func(m string) { mu.Lock(); progress = append(progress, m); mu.Unlock() },
	})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if cred.Email != "s@x.io" {
		t.Errorf("credential = %+v", cred)
	}
	if ex := fake.Exchanges(); len(ex) != 1 || ex[0].Code == "forged" {
		t.Fatalf("exchanges = %+v, want only the genuine code", ex)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(progress, "\n"), "State mismatch") {
		t.Errorf("the foreign paste was not reported: %q", progress)
	}
}

func TestLoginEnds(t *testing.T) {
	fake := oauthtest.New(t)
	reg := fakeRegistry(fake)
	t.Run("timeout", func(t *testing.T) {
		_, err := reg.Login(context.Background(), "gitlab-duo", oauth.LoginOptions{RedirectURL: freeRedirect(t, reg, "gitlab-duo"), Timeout: 50 * time.Millisecond})
		var te *oauth.LoginTimeoutError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		_, err := reg.Login(ctx, "gitlab-duo", oauth.LoginOptions{RedirectURL: freeRedirect(t, reg, "gitlab-duo"),
			Auth: func(string, string) { cancel() }})
		if !errors.Is(err, oauth.ErrLoginCancelled) || err.Error() != "Login cancelled" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("consent denied", func(t *testing.T) {
		var redirect string
		_, err := reg.Login(context.Background(), "gitlab-duo", oauth.LoginOptions{RedirectURL: freeRedirect(t, reg, "gitlab-duo"),
			Timeout: 10 * time.Second,
			Auth: func(u, _ string) {
				q, _ := url.Parse(u)
				redirect = q.Query().Get("redirect_uri") + "?error=access_denied&state=" + q.Query().Get("state")
			},
			Browser: func(string) error {
				go func() {
					if resp, err := http.Get(redirect); err == nil {
						resp.Body.Close()
					}
				}()
				return nil
			}})
		if err == nil || err.Error() != "Authorization failed: access_denied" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("busy port without paste", func(t *testing.T) {
		ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		_, err = reg.Login(context.Background(), "gitlab-duo", oauth.LoginOptions{RedirectURL: "http://localhost:" + portOf(ln) + "/callback", Timeout: time.Second})
		if err == nil || !strings.Contains(err.Error(), "cannot listen") {
			t.Fatalf("err = %v", err)
		}
	})
	if n := len(fake.Exchanges()); n != 0 {
		t.Fatalf("%d token requests, want none", n)
	}

	// A busy port with paste available: the user is told, and the pasted
	// redirect URL completes the login.
	t.Run("busy port with paste", func(t *testing.T) {
		fake.Set(func(f *oauthtest.Server) {
			f.Reply = map[string]any{"access_token": "at-busy", "refresh_token": "rt-busy", "expires_in": 60}
		})
		ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		paste := make(chan string, 1)
		var told string
		cred, err := reg.Login(context.Background(), "gitlab-duo", oauth.LoginOptions{
			RedirectURL: "http://localhost:" + portOf(ln) + "/callback", Timeout: 10 * time.Second, Paste: paste,
			Progress: func(m string) {
				if told == "" {
					told = m
				}
			},
			Browser: func(u string) error {
				c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				resp, err := c.Get(u)
				if err != nil {
					return err
				}
				resp.Body.Close()
				paste <- resp.Header.Get("Location")
				return nil
			}})
		if err != nil || cred.Refresh != "rt-busy" || !strings.Contains(told, "cannot listen") {
			t.Fatalf("cred %+v err %v told %q", cred, err, told)
		}
	})
}

func TestKeyLogin(t *testing.T) {
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) { f.Key = "sk-good" })
	kl, ok := fakeRegistry(fake).KeyLogin("deepseek")
	if !ok || kl.ModelsURL != fake.URL+"/models" {
		t.Fatalf("KeyLogin = %+v %v", kl, ok)
	}
	key, err := kl.Normalize("  Bearer sk-good \n")
	if err != nil || key != "sk-good" {
		t.Fatalf("Normalize = %q, %v", key, err)
	}
	if _, err := kl.Normalize("bearer "); err == nil {
		t.Fatal("bare Bearer accepted")
	}
	if _, err := kl.Normalize("  "); !errors.Is(err, oauth.ErrAPIKeyRequired) {
		t.Fatalf("empty = %v", err)
	}
	if err := kl.Validate(context.Background(), nil, "sk-good"); err != nil {
		t.Fatalf("Validate good: %v", err)
	}
	err = kl.Validate(context.Background(), nil, "sk-bad-secret")
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "sk-bad-secret") {
		t.Fatalf("Validate bad = %v", err)
	}
}

// TestKeyLoginChatCompletionProbe: flows validated by a one-token chat
// completion (Cerebras, NVIDIA's optional probe, Qianfan's tolerated
// invalid_model) against the fake's OpenAI-compatible endpoint.
func TestKeyLoginChatCompletionProbe(t *testing.T) {
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) { f.Key = "csk-good" })
	reg := fakeRegistry(fake)
	kl, ok := reg.KeyLogin("cerebras")
	if !ok || kl.ChatURL != fake.URL+"/chat/completions" || kl.ModelsURL != "" {
		t.Fatalf("KeyLogin = %+v %v", kl, ok)
	}
	if err := kl.Validate(context.Background(), nil, "csk-good"); err != nil {
		t.Fatalf("good key: %v", err)
	}
	var probe map[string]any
	if err := json.Unmarshal(fake.LastChat(), &probe); err != nil || probe["model"] != "gpt-oss-120b" ||
		probe["max_tokens"] != float64(1) || probe["temperature"] != float64(0) {
		t.Fatalf("probe body %s", fake.LastChat())
	}
	err := kl.Validate(context.Background(), nil, "csk-bad-secret")
	if err == nil || !strings.HasPrefix(err.Error(), "Cerebras API key validation failed: 401") || strings.Contains(err.Error(), "csk-bad-secret") {
		t.Fatalf("bad key = %v", err)
	}

	// NVIDIA's probe is optional: a 500 trusts the key, a 401 does not.
	nv, _ := reg.KeyLogin("nvidia")
	fake.Set(func(f *oauthtest.Server) { f.Key, f.ChatStatus, f.ChatBody = "nvapi-good", 500, `{"error":"down"}` })
	if err := nv.Validate(context.Background(), nil, "nvapi-good"); err != nil {
		t.Fatalf("optional probe on 500: %v", err)
	}
	if err := nv.Validate(context.Background(), nil, "nvapi-bad"); err == nil || !strings.Contains(err.Error(), "nvidia API key validation failed: 401") {
		t.Fatalf("optional probe on 401: %v", err)
	}
	// Cerebras is not optional: the 500 fails it.
	if err := kl.Validate(context.Background(), nil, "nvapi-good"); err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("required probe on 500: %v", err)
	}

	// Qianfan tolerates a 401 whose code is invalid_model; other 401s fail.
	qf, _ := reg.KeyLogin("qianfan")
	fake.Set(func(f *oauthtest.Server) {
		f.Key, f.ChatStatus, f.ChatBody = "bce-good", 401, `{"error":{"code":"invalid_model","message":"model not on plan"}}`
	})
	if err := qf.Validate(context.Background(), nil, "bce-good"); err != nil {
		t.Fatalf("invalid_model tolerated: %v", err)
	}
	fake.Set(func(f *oauthtest.Server) { f.ChatBody = `{"error":{"code":"invalid_api_key"}}` })
	if err := qf.Validate(context.Background(), nil, "bce-good"); err == nil {
		t.Fatal("a real 401 was tolerated")
	}

	// Empty pastes: a fallback key, or "nothing stored".
	lm, _ := reg.KeyLogin("lm-studio")
	if k, err := lm.Normalize(" "); err != nil || k != "lm-studio-local" {
		t.Fatalf("lm-studio empty = %q %v", k, err)
	}
	ol, _ := reg.KeyLogin("ollama")
	if _, err := ol.Normalize(""); !errors.Is(err, oauth.ErrNoKeyEntered) {
		t.Fatalf("ollama empty = %v", err)
	}
}

func portOf(ln net.Listener) string { return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) }

// loginVia runs a login whose fake browser follows the authorize URL.
func loginVia(t *testing.T, reg *oauth.Registry, id string, o oauth.LoginOptions) (vault.Credential, error) {
	t.Helper()
	o.RedirectURL = freeRedirect(t, reg, id)
	o.Timeout = 10 * time.Second
	o.Browser = func(u string) error {
		go func() { _, _ = oauthtest.Visit(u) }()
		return nil
	}
	return reg.Login(context.Background(), id, o)
}

// TestAnthropicBootstrapFallback: a token reply without identity is
// completed from the Claude Code bootstrap endpoint; a failing bootstrap
// is ignored (the login still succeeds, without identity).
func TestAnthropicBootstrapFallback(t *testing.T) {
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) {
		f.Reply = map[string]any{"access_token": "at-b", "refresh_token": "rt-b", "expires_in": 3600}
		f.Bootstrap = map[string]any{"account_uuid": "u-b", "account_email": "boot@example.com", "organization_uuid": "org-b", "organization_name": "Boot Org"}
	})
	reg := fakeRegistry(fake)
	cred, err := loginVia(t, reg, "anthropic", oauth.LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cred.AccountID != "u-b" || cred.Email != "boot@example.com" || string(cred.Extra["orgId"]) != `"org-b"` || string(cred.Extra["orgName"]) != `"Boot Org"` {
		t.Fatalf("credential = %+v extra %s", cred, cred.Extra)
	}
	fake.Set(func(f *oauthtest.Server) { f.Bootstrap = nil })
	cred, err = loginVia(t, reg, "anthropic", oauth.LoginOptions{})
	if err != nil || cred.Email != "" || cred.Refresh != "rt-b" {
		t.Fatalf("bootstrap 404: %+v, %v", cred, err)
	}
	if n := fake.Calls("/api/claude_cli/bootstrap"); n != 2 {
		t.Fatalf("bootstrap called %d times", n)
	}
}

// TestGeminiProjectNeedsEnvForWorkspace: a free-tier account gets the
// project onboarding provisioned; an account that has a tier but no
// project (Workspace) fails with the reference's GOOGLE_CLOUD_PROJECT hint
// unless the variable names one.
func TestGeminiProjectNeedsEnvForWorkspace(t *testing.T) {
	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) {
		f.Reply = map[string]any{"access_token": "at-w", "refresh_token": "rt-w", "expires_in": 3600}
		f.Email, f.Onboard = "w@example.com", true
	})
	reg := fakeRegistry(fake)
	// The fake's default tier is free: no env needed, the onboarded project wins.
	fake.Set(func(f *oauthtest.Server) { f.Project = "proj-free" })
	cred, err := loginVia(t, reg, "google-gemini-cli", oauth.LoginOptions{PollInterval: time.Millisecond, GoogleProject: "proj-env"})
	if err != nil || cred.ProjectID != "proj-free" {
		t.Fatalf("free tier: %+v, %v", cred, err)
	}
	// An account with a tier but no project needs the env variable.
	fake.Set(func(f *oauthtest.Server) { f.Project = "" })
	_, err = loginVia(t, reg, "google-gemini-cli", oauth.LoginOptions{PollInterval: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "GOOGLE_CLOUD_PROJECT") {
		t.Fatalf("no project: err = %v", err)
	}
	cred, err = loginVia(t, reg, "google-gemini-cli", oauth.LoginOptions{PollInterval: time.Millisecond, GoogleProject: "proj-env"})
	if err != nil || cred.ProjectID != "proj-env" {
		t.Fatalf("env project: %+v, %v", cred, err)
	}
}
