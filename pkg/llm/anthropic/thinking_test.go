package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// The rejections the Messages API and the proxies in front of it send for
// a replayed thinking block's signature.
const (
	invalidSignatureBody = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"messages.1.content.0: Invalid `signature` in `thinking` block\"},\"request_id\":\"req_011CThinkSig\"}"
	missingSignatureBody = `{"type":"error","error":{"type":"invalid_request_error","message":"ValidationException: The model returned the following errors: messages.1.content.0.thinking.signature: Field required"}}`
)

func TestThinkingSignatureRejected(t *testing.T) {
	tests := []struct {
		status    int
		msg       string
		rejection bool
	}{
		{400, "messages.1.content.0: Invalid `signature` in `thinking` block", true},
		{400, "Invalid signature in thinking block", true},
		{400, "ValidationException: The model returned the following errors: messages.3.content.0.thinking.signature: Field required", true},
		{400, "messages.1.content.0: Invalid `signature` in `thinking` block: the block is bound to a different conversation", false},
		{400, "messages.1.content.0: Invalid `signature` in `thinking` block (block_binding.prefix_mismatch_behavior)", false},
		{400, "tools.0.custom.strict: Extra inputs are not permitted", false},
		{400, "messages: text content blocks must be non-empty", false},
	}
	for _, tt := range tests {
		err := &llm.UpstreamError{Provider: "anthropic", Status: tt.status, Type: "invalid_request_error", Message: tt.msg}
		if got := thinkingSignatureRejected(err); got != tt.rejection {
			t.Errorf("%d %q: %v, want %v", tt.status, tt.msg, got, tt.rejection)
		}
	}
	if thinkingSignatureRejected(errors.New("Invalid `signature` in `thinking` block")) {
		t.Error("a transport error counted as a signature rejection")
	}
}

// signingUpstream answers like an upstream that cannot verify any replayed
// thinking: a request carrying a thinking or redacted thinking block gets
// reject; any other gets a streamed answer. It records whether each
// request carried thinking.
type signingUpstream struct {
	reject string // the rejection: a 400 body, or a stream when it starts with "event:"
	answer string

	mu       sync.Mutex
	attempts []bool
}

func (u *signingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	thinking := strings.Contains(string(body), `"type":"thinking"`) || strings.Contains(string(body), `"type":"redacted_thinking"`)
	u.mu.Lock()
	u.attempts = append(u.attempts, thinking)
	u.mu.Unlock()
	switch {
	case thinking && !strings.HasPrefix(u.reject, "event:"):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, u.reject)
	case thinking:
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, u.reject)
	default:
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, u.answer)
	}
}

// take returns the attempts since the last call: whether each carried
// thinking.
func (u *signingUpstream) take() []bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := u.attempts
	u.attempts = nil
	return out
}

// replayRequest continues a conversation whose earlier Anthropic turn holds
// a signed thinking block and a redacted one.
func replayRequest(session *llm.SessionState) *llm.Request {
	return &llm.Request{Model: "claude-sonnet-4-5", Session: session, Messages: []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Content{llm.Text("Weather in Paris?")}},
		{Role: llm.RoleAssistant, API: llm.APIAnthropic, Provider: "anthropic", Content: []llm.Content{
			{Type: llm.ContentThinking, Thinking: "The user wants weather.", ThinkingSignature: "Eq0BforeignSigner"},
			{Type: llm.ContentRedactedThinking, Data: "EmwKAhgBEgy3va3pzix"},
			llm.Text("Sunny."),
		}},
		{Role: llm.RoleUser, Content: []llm.Content{llm.Text("And tomorrow?")}},
	}}
}

func wantAttempts(t *testing.T, step string, got []bool, thinking ...bool) {
	t.Helper()
	if len(got) != len(thinking) {
		t.Fatalf("%s: upstream attempts (thinking?) %v, want %v", step, got, thinking)
	}
	for i := range got {
		if got[i] != thinking[i] {
			t.Fatalf("%s: upstream attempts (thinking?) %v, want %v", step, got, thinking)
		}
	}
}

// A thinking-replay fallback is kept per session: the upstream rejects the
// replayed signatures, the request is sent again without replayed thinking,
// and later requests of that session go without it at once; another
// session replays its thinking again. The caller's history keeps its
// thinking blocks, and the stream it gets is the retry's alone.
func TestThinkingReplayFallbackIsPerSession(t *testing.T) {
	for _, reject := range []string{invalidSignatureBody, missingSignatureBody,
		"event: error\ndata: " + invalidSignatureBody + "\n\n"} {
		up := &signingUpstream{reject: reject, answer: fixture(t, "upstream_thinking_tool.sse")}
		srv := httptest.NewServer(up)
		t.Cleanup(srv.Close)
		p := &Provider{BaseURL: srv.URL, Client: srv.Client()}
		send := func(session *llm.SessionState) *llm.Request {
			t.Helper()
			req := replayRequest(session)
			s, err := p.Stream(context.Background(), req, &testModel, llm.APIKey("sk-test"))
			if err != nil {
				t.Fatalf("%s: %v", reject, err)
			}
			events := llmtest.Record(s)
			if err := llmtest.CheckGrammar(events); err != nil {
				t.Fatal(err)
			}
			if last := events[len(events)-1]; last.Type != llm.EventDone {
				t.Fatalf("terminal = %+v", last)
			}
			return req
		}
		a, b := &llm.SessionState{}, &llm.SessionState{}
		req := send(a)
		wantAttempts(t, "first request of A", up.take(), true, false)
		if c := req.Messages[1].Content; len(c) != 3 || c[0].Type != llm.ContentThinking || c[1].Type != llm.ContentRedactedThinking {
			t.Fatalf("the caller's history changed: %+v", c)
		}
		send(a)
		wantAttempts(t, "second request of A", up.take(), false)
		send(b)
		wantAttempts(t, "first request of B", up.take(), true, false)
		send(nil)
		wantAttempts(t, "a request without a session", up.take(), true, false)
		send(nil)
		wantAttempts(t, "another request without a session", up.take(), true, false)
	}
}

// A request without replayed thinking is not retried on a signature
// rejection, and a rejection that arrives after the answer began streaming
// ends that stream: nothing is sent twice.
func TestThinkingReplayFallbackOnlyBeforeStreaming(t *testing.T) {
	up := &signingUpstream{reject: invalidSignatureBody}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	p := &Provider{BaseURL: srv.URL, Client: srv.Client()}

	// Nothing to drop: the same rejection reaches the caller.
	up.answer = "event: error\ndata: " + invalidSignatureBody + "\n\n"
	_, err := p.Stream(context.Background(), simpleRequest(), &testModel, llm.APIKey("sk-test"))
	if !thinkingSignatureRejected(err) {
		t.Fatalf("err = %v, want the signature rejection", err)
	}
	wantAttempts(t, "request without thinking", up.take(), false)

	// Rejected after message_start: the stream ends in that error.
	up.reject = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
		"event: error\ndata: " + invalidSignatureBody + "\n\n"
	session := &llm.SessionState{}
	s, err := p.Stream(context.Background(), replayRequest(session), &testModel, llm.APIKey("sk-test"))
	if err != nil {
		t.Fatal(err)
	}
	events := llmtest.Record(s)
	if last := events[len(events)-1]; last.Type != llm.EventError {
		t.Fatalf("terminal = %+v, want the stream's error", last)
	}
	wantAttempts(t, "rejected mid-stream", up.take(), true)
	if session.ThinkingReplayDisabled(llm.UpstreamScope("anthropic", srv.URL+"/v1/messages", testModel.ID)) {
		t.Fatal("a mid-stream rejection was remembered")
	}
}

// Both fallbacks in one request: strict tools rejected first, then the
// replayed signatures; each is retried once and both are remembered.
func TestStrictAndThinkingFallbacksTogether(t *testing.T) {
	var (
		mu       sync.Mutex
		attempts []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body := string(b)
		var what string
		switch {
		case strings.Contains(body, `"strict":true`):
			what = "strict"
		case strings.Contains(body, `"type":"thinking"`):
			what = "thinking"
		default:
			what = "plain"
		}
		mu.Lock()
		attempts = append(attempts, what)
		mu.Unlock()
		switch what {
		case "strict":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"tools.0.custom.strict: Extra inputs are not permitted"}}`)
		case "thinking":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, invalidSignatureBody)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, fixture(t, "upstream_thinking_tool.sse"))
		}
	}))
	t.Cleanup(srv.Close)
	p := &Provider{BaseURL: srv.URL, Client: srv.Client()}
	session := &llm.SessionState{}
	strict := true
	send := func(want string) {
		t.Helper()
		req := replayRequest(session)
		req.Tools = []llm.Tool{{Name: "get_weather", Parameters: []byte(`{"type":"object"}`), Strict: &strict}}
		s, err := p.Stream(context.Background(), req, &testModel, llm.APIKey("sk-test"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := llm.Collect(s); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := strings.Join(attempts, " ")
		attempts = nil
		mu.Unlock()
		if got != want {
			t.Fatalf("upstream attempts %q, want %q", got, want)
		}
	}
	send("strict thinking plain")
	send("plain")
}
