package openai

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/llm"
)

func TestChatFinishReasonMapsToCanonical(t *testing.T) {
	cases := []struct {
		raw    string
		want   llm.StopReason
		safety bool
	}{
		{"stop", llm.StopEnd, false},
		{"", llm.StopEnd, false},
		{"length", llm.StopLength, false},
		{"tool_calls", llm.StopToolUse, false},
		{"function_call", llm.StopToolUse, false},
		{"content_filter", llm.StopError, true},
	}
	for _, tc := range cases {
		var m llm.Message
		if got := chatStopReason(&m, tc.raw); got != tc.want || m.Stop.Safety != tc.safety || m.Stop.Raw != tc.raw {
			t.Errorf("%q → %v (safety %v), want %v (%v)", tc.raw, got, m.Stop.Safety, tc.want, tc.safety)
		}
	}
}

func TestCanonicalStopMapsToChatFinishReason(t *testing.T) {
	withCall := &llm.Message{Content: []llm.Content{llm.ToolCall("c", "f", []byte(`{}`))}}
	cases := []struct {
		name   string
		m      *llm.Message
		reason llm.StopReason
		want   string
	}{
		{"stop", &llm.Message{}, llm.StopEnd, "stop"},
		{"length", &llm.Message{}, llm.StopLength, "length"},
		{"tool use", &llm.Message{}, llm.StopToolUse, "tool_calls"},
		{"plain stop with tool call", withCall, llm.StopEnd, "tool_calls"},
		{"anthropic refusal", &llm.Message{Stop: llm.StopDetail{Raw: "refusal", Safety: true}}, llm.StopError, "content_filter"},
		{"gemini safety", &llm.Message{Stop: llm.StopDetail{Raw: "SAFETY", Safety: true}}, llm.StopError, "content_filter"},
	}
	for _, tc := range cases {
		if got := chatFinishReason(tc.m, tc.reason); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestResponsesTerminalMapsToCanonical(t *testing.T) {
	cases := []struct {
		name, event string
		want        llm.EventType
		reason      llm.StopReason
		safety      bool
	}{
		{"completed", `{"type":"response.completed","response":{"status":"completed"}}`, llm.EventDone, llm.StopEnd, false},
		{"max tokens", `{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`, llm.EventDone, llm.StopLength, false},
		{"content filter", `{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}}`, llm.EventError, llm.StopError, true},
		{"failed", `{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"x"}}}`, llm.EventError, llm.StopError, false},
		{"cancelled", `{"type":"response.completed","response":{"status":"cancelled"}}`, llm.EventError, llm.StopError, false},
		{"flat error", `{"type":"error","code":"c","message":"m"}`, llm.EventError, llm.StopError, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var last llm.Event
			b := llm.NewBuilder(llm.APIOpenAIResponses, "p", "m", func(ev llm.Event) bool { last = ev; return true })
			p := newRespParser(b, llm.APIOpenAIResponses)
			p.handle([]byte(`{"type":"response.created","response":{"id":"r"}}`))
			p.handle([]byte(tc.event))
			if last.Type != tc.want || last.Reason != tc.reason || last.Partial.Stop.Safety != tc.safety {
				t.Fatalf("got %v %v safety=%v, want %v %v %v", last.Type, last.Reason, last.Partial.Stop.Safety, tc.want, tc.reason, tc.safety)
			}
		})
	}
}

func TestErrorEnvelopeFollowsStatusTable(t *testing.T) {
	cases := []struct {
		status     int
		usageLimit bool
		wantStatus int
		want       string
	}{
		{400, false, 400, `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":null}}`},
		{401, false, 401, `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
		{403, false, 403, `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":null}}`},
		{404, false, 404, `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"model_not_found"}}`},
		{429, false, 429, `{"error":{"message":"m","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		{429, true, 429, `{"error":{"message":"m","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`},
		{499, false, 499, `{"error":{"message":"m","type":"request_aborted","param":null,"code":null}}`},
		{502, false, 502, `{"error":{"message":"m","type":"server_error","param":null,"code":null}}`},
		{529, false, 503, `{"error":{"message":"m","type":"server_error","param":null,"code":null}}`},
	}
	for _, tc := range cases {
		st := ErrorStatus(tc.status)
		if got := string(AppendErrorBody(nil, st, "m", tc.usageLimit)); st != tc.wantStatus || got != tc.want {
			t.Errorf("%d: status %d body %s, want %d %s", tc.status, st, got, tc.wantStatus, tc.want)
		}
	}
}

func TestUpstreamHTTPErrorsKeepStatusAndRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		want    llm.UpstreamError
		class   llm.ErrorClass
		isUsage bool
	}{
		{"openai rate limit", 429, map[string]string{"Retry-After": "7", "x-request-id": "req_1"},
			`{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			llm.UpstreamError{Status: 429, Type: "requests", Code: "rate_limit_exceeded", Message: "Rate limit reached", RetryAfter: 7 * time.Second, RequestID: "req_1"}, llm.ClassRateLimit, false},
		{"quota", 429, nil, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`,
			llm.UpstreamError{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota", Message: "You exceeded your current quota"}, llm.ClassRateLimit, true},
		{"bad key", 401, nil, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`,
			llm.UpstreamError{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key", Message: "Incorrect API key provided"}, llm.ClassAuth, false},
		{"codex detail", 400, nil, `{"detail":"Unsupported parameter: temperature"}`,
			llm.UpstreamError{Status: 400, Message: "Unsupported parameter: temperature"}, llm.ClassInvalidRequest, false},
		{"codex usage limit", 429, nil, `{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","resets_in_seconds":9480}}`,
			llm.UpstreamError{Status: 429, Type: "usage_limit_reached", Message: "The usage limit has been reached", RetryAfter: 9480 * time.Second}, llm.ClassRateLimit, true},
		{"plain text", 503, map[string]string{"Retry-After-Ms": "1500"}, "upstream connect error",
			llm.UpstreamError{Status: 503, Message: "upstream connect error", RetryAfter: 1500 * time.Millisecond}, llm.ClassUpstream, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			p := &ChatProvider{ProviderID: "openai", BaseURL: srv.URL, Now: func() time.Time { return now }}
			_, err := p.Stream(context.Background(), testRequest(), &llm.Model{ID: "m"}, llm.APIKey("sk-secret-value"))
			var ue *llm.UpstreamError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v", err)
			}
			want := tc.want
			want.Provider = "openai"
			if *ue != want {
				t.Errorf("got %+v\nwant %+v", *ue, want)
			}
			if c := llm.Classify(err); c.Class != tc.class || c.UsageLimit != tc.isUsage {
				t.Errorf("classified %+v", c)
			}
			if strings.Contains(err.Error(), "sk-secret-value") {
				t.Error("secret leaked into the error")
			}
		})
	}
}

func TestCodexProviderSendsBackendHeaders(t *testing.T) {
	var got http.Request
	var body []byte
	srv := sseServer(t, "codex_sparse.sse", "", &got, &body)
	// A JWT whose payload carries the ChatGPT account claim.
	token := "e30." + "eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjdC0xIn19" + ".sig"
	req := testRequest()
	req.SessionID = "sess-9"
	req.Headers = map[string]string{"originator": "codex_exec"}
	p := &CodexProvider{BaseURL: srv.URL}
	s, err := p.Stream(context.Background(), req, &llm.Model{ID: "gpt-5", Reasoning: true}, llm.OAuthToken(token))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := llm.Collect(s)
	if err != nil || len(msg.Content) != 3 {
		t.Fatalf("collect: %v %+v", err, msg)
	}
	if got.URL.Path != "/codex/responses" {
		t.Errorf("path = %s", got.URL.Path)
	}
	for k, want := range map[string]string{
		"Authorization": "Bearer " + token, "Chatgpt-Account-Id": "acct-1", "Openai-Beta": "responses=experimental",
		"Originator": "codex_exec", "Session_id": "sess-9", "Conversation_id": "sess-9", "Version": DefaultCodexClientVersion,
		"Accept": "text/event-stream",
	} {
		if v := got.Header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	if !strings.Contains(string(body), `"store":false`) || !strings.Contains(string(body), `"stream":true`) {
		t.Errorf("body = %s", body)
	}
}

// TestStreamCancellationClosesUpstream checks that cancelling the context
// ends the stream with an aborted error and releases the upstream
// connection.
func TestStreamCancellationClosesUpstream(t *testing.T) {
	released := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(released)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := (&ChatProvider{BaseURL: srv.URL}).Stream(ctx, testRequest(), &llm.Model{ID: "m"}, llm.Credential{})
	if err != nil {
		t.Fatal(err)
	}
	var last llm.Event
	for ev := range s.Events() {
		if ev.Type == llm.EventTextDelta {
			cancel()
		}
		last = ev
	}
	_ = s.Close()
	if last.Type != llm.EventError || last.Reason != llm.StopAborted {
		t.Fatalf("last event = %v %v", last.Type, last.Reason)
	}
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream request still open after cancellation")
	}
}
