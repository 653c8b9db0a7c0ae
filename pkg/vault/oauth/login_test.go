package oauth

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestBuiltinProviders(t *testing.T) {
	r := NewRegistry(nil)
	wantIDs := []string{"openai-codex", "anthropic", "google-antigravity", "google-gemini-cli", "gitlab-duo", "stencil"}
	if got := r.IDs(); strings.Join(got, ",") != strings.Join(wantIDs, ",") {
		t.Fatalf("IDs = %v, want %v", got, wantIDs)
	}
	tests := []struct {
		id, name, path, redirect, clientID, tokenURL string
		port                                         int
	}{
		{"openai-codex", "ChatGPT Plus/Pro (Codex Subscription)", "/auth/callback", "http://localhost:1455/auth/callback", "app_EMoamEEZ73f0CkXaXp7hrann", "https://auth.openai.com/oauth/token", 1455},
		{"anthropic", "Anthropic (Claude Pro/Max)", "/callback", "http://localhost:54545/callback", "9d1c250a-e61b-44d9-88ed-5944d1962f5e", "https://api.anthropic.com/v1/oauth/token", 54545},
		{"google-antigravity", "Antigravity (Gemini 3, Claude, GPT-OSS)", "/oauth-callback", "http://127.0.0.1:51121/oauth-callback", "1071006060591-tmhssin2h21lcre235vtolojh4g403ep.apps.googleusercontent.com", "https://oauth2.googleapis.com/token", 51121},
		{"google-gemini-cli", "Google Cloud Code Assist (Gemini CLI)", "/oauth2callback", "http://127.0.0.1:8085/oauth2callback", "681255809395-oo8ft2oprdrnp9e3aqf6av3hmdib135j.apps.googleusercontent.com", "https://oauth2.googleapis.com/token", 8085},
		{"gitlab-duo", "GitLab Duo Non-Agentic", "/callback", "http://localhost:8080/callback", "da4edff2e6ebd2bc3208611e2768bc1c1dd7be791dc5ff26ca34ca9ee44f7d4b", "https://gitlab.com/oauth/token", 8080},
		{"stencil", "Stencil (invite only)", "/callback", "http://127.0.0.1:54547/callback", "omp", "https://auth.stencil.so/oauth/token", 54547},
	}
	for _, tt := range tests {
		p, ok := r.Get(tt.id)
		if !ok {
			t.Fatalf("Get(%q) missing", tt.id)
		}
		if p.Name != tt.name || p.CallbackPort != tt.port || p.CallbackPath != tt.path || p.RedirectURL() != tt.redirect ||
			p.Config.ClientID != tt.clientID || p.Config.Endpoint.TokenURL != tt.tokenURL {
			t.Errorf("%s = %+v", tt.id, p)
		}
	}
	if _, ok := r.Get("nope"); ok {
		t.Error("Get(nope) found a provider")
	}
}

func TestRegistryOverridesAndCopies(t *testing.T) {
	r := NewRegistry(func(p, kind string) string {
		if p == "gitlab-duo" {
			return map[string]string{KindTokenURL: "https://gl.example/oauth/token", KindAuthorizeURL: "https://gl.example/oauth/authorize", KindClientID: "mine"}[kind]
		}
		return ""
	})
	p, _ := r.Get("gitlab-duo")
	if p.Config.Endpoint.TokenURL != "https://gl.example/oauth/token" || p.Config.Endpoint.AuthURL != "https://gl.example/oauth/authorize" || p.Config.ClientID != "mine" {
		t.Fatalf("overrides not applied: %+v", p.Config)
	}
	p.Config.Scopes[0] = "changed"
	if q, _ := r.Get("gitlab-duo"); q.Config.Scopes[0] != "api" {
		t.Fatal("Get returned a shared provider")
	}
	if a, _ := r.Get("anthropic"); a.Config.Endpoint.TokenURL != "https://api.anthropic.com/v1/oauth/token" {
		t.Fatal("override leaked to another provider")
	}
}

func TestAuthCodeURL(t *testing.T) {
	p, _ := NewRegistry(nil).Get("anthropic")
	v := NewVerifier()
	if len(v) != 128 {
		t.Fatalf("verifier length %d", len(v))
	}
	u, err := url.Parse(p.AuthCodeURL("st", v, ""))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	want := map[string]string{
		"response_type": "code", "client_id": "9d1c250a-e61b-44d9-88ed-5944d1962f5e", "redirect_uri": "http://localhost:54545/callback",
		"scope":          "org:create_api_key user:profile user:inference user:sessions:claude_code user:mcp_servers user:file_upload",
		"code_challenge": Challenge(v), "code_challenge_method": "S256", "state": "st", "code": "true",
	}
	if u.Scheme+"://"+u.Host+u.Path != "https://claude.ai/oauth/authorize" {
		t.Errorf("authorize URL = %s", u)
	}
	for k, w := range want {
		if q.Get(k) != w {
			t.Errorf("%s = %q, want %q", k, q.Get(k), w)
		}
	}
	g, _ := NewRegistry(nil).Get("google-gemini-cli")
	gq, _ := url.Parse(g.AuthCodeURL("s", "", "http://127.0.0.1:9999/oauth2callback"))
	if gq.Query().Get("access_type") != "offline" || gq.Query().Get("prompt") != "consent" || gq.Query().Has("code_challenge") ||
		gq.Query().Get("redirect_uri") != "http://127.0.0.1:9999/oauth2callback" {
		t.Errorf("google authorize URL = %s", gq)
	}
	//lint:ignore SA4000 two calls must return different states
	if NewState() == NewState() || len(NewState()) != 32 {
		t.Error("NewState is not random 32-hex")
	}
}

func TestExchangeAnthropicSendsJSONWithStateAndVerifier(t *testing.T) {
	ts := newTokenServer(t, jsonReply(200, `{"access_token":"a","refresh_token":"r","expires_in":3600,"account":{"uuid":"u","email_address":"e@x"}}`))
	r := testRegistry(ts, t0)
	cred, err := r.Exchange(context.Background(), "anthropic", "thecode#st", "st", "ver", "", ts.Client())
	if err != nil {
		t.Fatal(err)
	}
	if cred.Access != "a" || cred.Refresh != "r" || cred.AccountID != "u" || cred.Email != "e@x" || cred.Expires != t0.UnixMilli()+3600_000-300_000 {
		t.Errorf("credential = %+v", dump(cred))
	}
	s := ts.last.Load()
	want := `{"grant_type":"authorization_code","client_id":"9d1c250a-e61b-44d9-88ed-5944d1962f5e","code":"thecode","redirect_uri":"http://localhost:54545/callback","code_verifier":"ver","state":"st"}`
	if s.Raw != want {
		t.Errorf("body = %s\nwant %s", s.Raw, want)
	}
	if s.Header.Get("anthropic-beta") != "" {
		t.Error("refresh-only header sent on exchange")
	}
}

func TestExchangeRefusesAPastedStateFromAnotherLogin(t *testing.T) {
	ts := newTokenServer(t, jsonReply(200, `{"access_token":"a","refresh_token":"r","expires_in":3600}`))
	r := testRegistry(ts, t0)
	for _, pasted := range []string{
		"thecode#other",
		"http://localhost:54545/callback?code=thecode&state=other",
		"  https://console.anthropic.com/oauth/code/callback?code=thecode&state=other  ",
		"code=thecode&state=other",
	} {
		_, err := r.Exchange(context.Background(), "anthropic", pasted, "st", "ver", "", ts.Client())
		if !errors.Is(err, ErrStateMismatch) || !strings.Contains(err.Error(), "anthropic: OAuth state mismatch") {
			t.Errorf("Exchange(%q) = %v, want ErrStateMismatch", pasted, err)
		}
	}
	if n := ts.hits.Load(); n != 0 {
		t.Fatalf("%d token requests after a state mismatch, want none", n)
	}
	// The matching state passes, from a URL or a fragment; a bare code
	// (nothing to compare) uses the generated state.
	for _, pasted := range []string{"http://localhost:54545/callback?code=thecode&state=st", "thecode#st", "thecode"} {
		if _, err := r.Exchange(context.Background(), "anthropic", pasted, "st", "ver", "", ts.Client()); err != nil {
			t.Fatalf("Exchange(%q): %v", pasted, err)
		}
		if s := ts.last.Load(); s.Fields["code"] != "thecode" || s.Fields["state"] != "st" {
			t.Errorf("Exchange(%q) sent code=%q state=%q", pasted, s.Fields["code"], s.Fields["state"])
		}
	}
}

func TestParsePaste(t *testing.T) {
	for in, want := range map[string][2]string{
		"abc":        {"abc", ""},
		"abc#xyz":    {"abc", "xyz"},
		" abc#xyz\n": {"abc", "xyz"},
		"http://localhost:1455/auth/callback?code=abc&state=xyz":   {"abc", "xyz"},
		"http://localhost:1455/auth/callback?state=xyz&code=a%2Bb": {"a+b", "xyz"},
		"?code=abc&state=xyz": {"abc", "xyz"},
		"code=abc":            {"abc", ""},
	} {
		if c, s := ParsePaste(in); c != want[0] || s != want[1] {
			t.Errorf("ParsePaste(%q) = %q, %q; want %q, %q", in, c, s, want[0], want[1])
		}
	}
}

func TestExchangeFailureKeepsCause(t *testing.T) {
	ts := newTokenServer(t, jsonReply(400, `{"error":"invalid_grant","error_description":"bad code"}`))
	_, err := testRegistry(ts, t0).Exchange(context.Background(), "openai-codex", "c", "s", "v", "", ts.Client())
	if err == nil || err.Error() != "Token exchange failed: 400 invalid_grant: bad code" || Classify(err) != Definitive {
		t.Fatalf("err = %v", err)
	}
}
