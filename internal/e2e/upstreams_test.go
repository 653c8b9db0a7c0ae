package e2e_test

import (
	"context"
	"net/http"
	"slices"
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

const (
	openaiKey    = "sk-proj-e2e-openai-key"
	codexAccess  = "codex-e2e-access-token"
	codexRefresh = "codex-e2e-refresh-token"
	codexAccount = "acct-e2e-codex"
	geminiKey    = "AIzaSy-e2e-gemini-key"
	cliAccess    = "ya29.e2e-gemini-cli-access"
	cliRefresh   = "1//e2e-gemini-cli-refresh"
	cliProject   = "proj-e2e-cli"
	groqKey      = "gsk_e2e-groq-key"
)

// upstreamCase is one upstream wire reached through the gateway.
type upstreamCase struct {
	name      string
	wire      wire
	model     string
	cred      vault.Credential
	stream    string                                // recorded upstream stream, under pkg/llm
	text      string                                // the stream's text
	uri       string                                // the path and query the fake must see
	header    map[string]string                     // headers the fake must see (the credential's access token aside)
	body      string                                // a fragment the upstream body must hold
	auth      func(secret string) map[string]string // the credential's headers
	status401 string                                // the wire's expired-token answer
}

// upstreamCases are the non-Anthropic wires the bundled catalog routes
// to; the OpenAI Chat Completions wire is reached through an API-key
// provider of the bundled catalog (Groq).
func upstreamCases() []upstreamCase {
	expires := time.Now().Add(time.Hour).UnixMilli() // not due: only forced refreshes
	bearer := func(secret string) map[string]string { return map[string]string{"Authorization": "Bearer " + secret} }
	return []upstreamCase{{
		name:   "OpenAIResponses",
		wire:   responsesWire,
		model:  "openai/gpt-5",
		cred:   vault.Credential{Type: vault.TypeAPIKey, Key: openaiKey},
		stream: "openai/testdata/responses_reasoning_tools.sse",
		text:   "Let me check.",
		uri:    "/v1/responses",
		body:   `"model":"gpt-5"`,
		auth:   bearer,
	}, {
		name:  "ChatGPTCodex",
		wire:  codexWire,
		model: "openai-codex/gpt-5.5",
		cred: vault.Credential{Type: vault.TypeOAuth, Access: codexAccess, Refresh: codexRefresh,
			Expires: expires, AccountID: codexAccount},
		stream:    "openai/testdata/codex_sparse.sse",
		text:      "Done.",
		uri:       "/backend-api/codex/responses",
		header:    map[string]string{"chatgpt-account-id": codexAccount, "OpenAI-Beta": "responses=experimental"},
		body:      `"store":false`,
		auth:      bearer,
		status401: `{"error":{"message":"Your authentication token has expired.","type":"invalid_request_error","code":"token_expired"}}`,
	}, {
		name:   "OpenAIChat",
		wire:   chatWire,
		model:  "groq/llama-3.3-70b-versatile",
		cred:   vault.Credential{Type: vault.TypeAPIKey, Key: groqKey},
		stream: "openai/testdata/chat_parallel_tools.sse",
		text:   "Checking both.",
		uri:    "/openai/v1/chat/completions",
		body:   `"model":"llama-3.3-70b-versatile"`,
		auth:   bearer,
	}, {
		name:   "Gemini",
		wire:   geminiWire,
		model:  "google/gemini-2.5-flash",
		cred:   vault.Credential{Type: vault.TypeAPIKey, Key: geminiKey},
		stream: "google/testdata/text_thinking.sse",
		text:   "Hello, world <3",
		uri:    "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		body:   `"contents"`,
		auth: func(secret string) map[string]string {
			return map[string]string{"x-goog-api-key": secret, "Authorization": ""}
		},
	}, {
		name:  "GeminiCLICodeAssist",
		wire:  codeAssistWire,
		model: "google-gemini-cli/gemini-2.5-flash",
		cred: vault.Credential{Type: vault.TypeOAuth, Access: cliAccess, Refresh: cliRefresh,
			Expires: expires, ProjectID: cliProject},
		stream:    "google/testdata/codeassist.sse",
		text:      "Checking.",
		uri:       "/v1internal:streamGenerateContent?alt=sse",
		body:      `"project":"` + cliProject + `"`,
		auth:      bearer,
		status401: `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`,
	}}
}

// secret is the credential the upstream must see.
func (tc upstreamCase) secret() string {
	if tc.cred.IsOAuth() {
		return tc.cred.Access
	}
	return tc.cred.Key
}

// check fails the test unless upstream request i went to the wire's path
// with its headers, body and the credential secret, and leaked nothing.
func (tc upstreamCase) check(t *testing.T, s *stack, i int, r upReq, secret string) {
	t.Helper()
	if r.uri != tc.uri {
		t.Errorf("request %d: upstream path %q, want %q", i, r.uri, tc.uri)
	}
	for _, h := range []map[string]string{tc.header, tc.auth(secret)} {
		for k, want := range h {
			if got := r.header.Get(k); got != want {
				t.Errorf("request %d: upstream header %s: %q, want %q", i, k, got, want)
			}
		}
	}
	if !strings.Contains(r.body, tc.body) {
		t.Errorf("request %d: upstream body lacks %s: %s", i, tc.body, r.body)
	}
	s.checkNoLeak(t, i, r, tc.cred.Refresh)
}

// Every upstream wire the gateway serves gets the credential held by the
// broker, in that wire's header, on that wire's path, and a client of
// either OpenAI SDK surface (Chat Completions and Responses streaming)
// gets the recorded stream's text.
func TestEveryUpstreamGetsTheBrokerCredential(t *testing.T) {
	cases := upstreamCases()
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
				tc.check(t, s, i, r, tc.secret())
			}
			if n := len(f.refreshes()); n != 0 {
				t.Errorf("token endpoint called %d times, want 0", n)
			}
		})
	}
}

// An upstream 401 on an OAuth wire other than Anthropic's makes the
// gateway refresh through the broker: the token endpoint sees the
// uploaded refresh token once, the retry carries the minted access token
// on the same wire (the Codex account id and the Code Assist project
// survive the refresh), and the client never sees the 401.
func TestOAuthUpstream401RefreshesThroughBroker(t *testing.T) {
	for _, tc := range upstreamCases() {
		if !tc.cred.IsOAuth() {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			sse := replay(t, tc.stream)
			f := newUpstream(t, tc.wire, func(w http.ResponseWriter, _ *http.Request, _ int, key string) {
				if key == tc.cred.Access {
					writeJSON(w, http.StatusUnauthorized, nil, tc.status401)
					return
				}
				writeSSE(w, sse)
			})
			s := startStack(t, f)
			s.upload(t, tc.wire.provider, tc.cred, 1)
			c := openaiClient(s)
			p := chatParams()
			p.Model = tc.model
			for range 2 {
				if got := chatStreamOf(t, context.Background(), c, p); got != tc.text {
					t.Errorf("chat client got %q, want %q", got, tc.text)
				}
			}
			if got := f.refreshes(); !slices.Equal(got, []string{tc.cred.Refresh}) {
				t.Errorf("token endpoint saw %q, want exactly one refresh with the uploaded refresh token", got)
			}
			const minted = "sk-ant-oat01-e2e-minted-1" // the fake token endpoint's first access token
			if got := f.keys(); !slices.Equal(got, []string{tc.cred.Access, minted, minted}) {
				t.Fatalf("upstream credentials %q, want the uploaded, then the minted access token twice", got)
			}
			for i, r := range f.requests() {
				secret := minted
				if i == 0 {
					secret = tc.cred.Access
				}
				tc.check(t, s, i, r, secret)
			}
		})
	}
}
