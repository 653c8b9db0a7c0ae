package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// Every upstream wire the gateway serves gets the credential held by the
// broker, in that wire's header, on that wire's path, and the client gets
// the recorded stream's text. The bundled catalog has no model on the
// OpenAI Chat Completions wire and the gateway reads no models.yml, so
// that wire is not reachable through gatewayd.
func TestEveryUpstreamGetsTheBrokerCredential(t *testing.T) {
	const (
		openaiKey     = "sk-proj-e2e-openai-key"
		codexAccess   = "codex-e2e-access-token"
		codexRefresh  = "codex-e2e-refresh-token"
		codexAccount  = "acct-e2e-codex"
		geminiKey     = "AIzaSy-e2e-gemini-key"
		cliAccess     = "ya29.e2e-gemini-cli-access"
		cliRefresh    = "1//e2e-gemini-cli-refresh"
		cliProject    = "proj-e2e-cli"
		oauthLifetime = time.Hour
	)
	expires := time.Now().Add(oauthLifetime).UnixMilli() // not due: no refresh
	cases := []struct {
		name   string
		wire   wire
		model  string
		cred   vault.Credential
		stream string            // recorded upstream stream, under pkg/llm
		text   string            // the stream's text
		uri    string            // the path and query the fake must see
		header map[string]string // headers the fake must see
		body   string            // a fragment the upstream body must hold
	}{{
		name:   "OpenAIResponses",
		wire:   responsesWire,
		model:  "openai/gpt-5",
		cred:   vault.Credential{Type: vault.TypeAPIKey, Key: openaiKey},
		stream: "openai/testdata/responses_reasoning_tools.sse",
		text:   "Let me check.",
		uri:    "/v1/responses",
		header: map[string]string{"Authorization": "Bearer " + openaiKey},
		body:   `"model":"gpt-5"`,
	}, {
		name:  "ChatGPTCodex",
		wire:  codexWire,
		model: "openai-codex/gpt-5.4",
		cred: vault.Credential{Type: vault.TypeOAuth, Access: codexAccess, Refresh: codexRefresh,
			Expires: expires, AccountID: codexAccount},
		stream: "openai/testdata/codex_sparse.sse",
		text:   "Done.",
		uri:    "/backend-api/codex/responses",
		header: map[string]string{"Authorization": "Bearer " + codexAccess, "chatgpt-account-id": codexAccount,
			"OpenAI-Beta": "responses=experimental"},
		body: `"store":false`,
	}, {
		name:   "Gemini",
		wire:   geminiWire,
		model:  "google/gemini-2.5-flash",
		cred:   vault.Credential{Type: vault.TypeAPIKey, Key: geminiKey},
		stream: "google/testdata/text_thinking.sse",
		text:   "Hello, world <3",
		uri:    "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		header: map[string]string{"x-goog-api-key": geminiKey, "Authorization": ""},
		body:   `"contents"`,
	}, {
		name:  "GeminiCLICodeAssist",
		wire:  codeAssistWire,
		model: "google-gemini-cli/gemini-2.5-flash",
		cred: vault.Credential{Type: vault.TypeOAuth, Access: cliAccess, Refresh: cliRefresh,
			Expires: expires, ProjectID: cliProject},
		stream: "google/testdata/codeassist.sse",
		text:   "Checking.",
		uri:    "/v1internal:streamGenerateContent?alt=sse",
		header: map[string]string{"Authorization": "Bearer " + cliAccess},
		body:   `"project":"` + cliProject + `"`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sse := replay(t, tc.stream)
			f := newUpstream(t, tc.wire, func(w http.ResponseWriter, _ *http.Request, _ int, _ string) { writeSSE(w, sse) })
			s := startStack(t, f)
			s.upload(t, tc.wire.provider, tc.cred, 1)
			p := chatParams()
			p.Model = tc.model
			if got := chatStreamOf(t, context.Background(), openaiClient(s), p); got != tc.text {
				t.Errorf("client got %q, want %q", got, tc.text)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream saw %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.uri != tc.uri {
				t.Errorf("upstream path %q, want %q", r.uri, tc.uri)
			}
			for k, want := range tc.header {
				if got := r.header.Get(k); got != want {
					t.Errorf("upstream header %s: %q, want %q", k, got, want)
				}
			}
			if !strings.Contains(r.body, tc.body) {
				t.Errorf("upstream body lacks %s: %s", tc.body, r.body)
			}
			s.checkNoLeak(t, 0, r, tc.cred.Refresh)
			if n := len(f.refreshes()); n != 0 {
				t.Errorf("token endpoint called %d times, want 0", n)
			}
		})
	}
}
