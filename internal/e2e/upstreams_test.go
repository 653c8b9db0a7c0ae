package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	openaisdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/ompgo/omp/pkg/vault"
)

// responsesStream streams one Responses API request through the gateway
// and returns the output text, failing unless response.completed arrives.
func responsesStream(t *testing.T, ctx context.Context, c openaisdk.Client, model string) string {
	t.Helper()
	st := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model:        model,
		Instructions: openaisdk.String("Be brief."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openaisdk.String("Say hello")},
	})
	var text strings.Builder
	completed := false
	for st.Next() {
		switch ev := st.Current(); ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			completed = true
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("responses stream: %v", err)
	}
	if !completed {
		t.Error("responses stream: no response.completed")
	}
	return text.String()
}

// Every upstream wire the gateway serves gets the credential held by the
// broker, in that wire's header, on that wire's path, and a client of
// either OpenAI SDK surface (Chat Completions and Responses streaming)
// gets the recorded stream's text. The bundled catalog has no model on the
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
			c := openaiClient(s)
			p := chatParams()
			p.Model = tc.model
			if got := chatStreamOf(t, context.Background(), c, p); got != tc.text {
				t.Errorf("chat client got %q, want %q", got, tc.text)
			}
			if got := responsesStream(t, context.Background(), c, tc.model); got != tc.text {
				t.Errorf("responses client got %q, want %q", got, tc.text)
			}
			reqs := f.requests()
			if len(reqs) != 2 {
				t.Fatalf("upstream saw %d requests, want 2", len(reqs))
			}
			for i, r := range reqs {
				if r.uri != tc.uri {
					t.Errorf("request %d: upstream path %q, want %q", i, r.uri, tc.uri)
				}
				for k, want := range tc.header {
					if got := r.header.Get(k); got != want {
						t.Errorf("request %d: upstream header %s: %q, want %q", i, k, got, want)
					}
				}
				if !strings.Contains(r.body, tc.body) {
					t.Errorf("request %d: upstream body lacks %s: %s", i, tc.body, r.body)
				}
				s.checkNoLeak(t, i, r, tc.cred.Refresh)
			}
			if n := len(f.refreshes()); n != 0 {
				t.Errorf("token endpoint called %d times, want 0", n)
			}
		})
	}
}
