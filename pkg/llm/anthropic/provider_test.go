package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// fakeUpstream serves a fixture and records the last request.
type fakeUpstream struct {
	status  int
	header  http.Header
	body    string
	gotReq  *http.Request
	gotBody []byte
}

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.gotReq = r
	f.gotBody, _ = io.ReadAll(r.Body)
	for k, v := range f.header {
		w.Header()[k] = v
	}
	if f.status == 0 {
		w.Header().Set("Content-Type", "text/event-stream")
		f.status = 200
	}
	w.WriteHeader(f.status)
	_, _ = io.WriteString(w, f.body)
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var testModel = llm.Model{ID: "claude-sonnet-4-5", Provider: "anthropic", API: llm.APIAnthropic, MaxTokens: 64000,
	Cost: llm.Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}}

func startFake(t *testing.T, f *fakeUpstream) *Provider {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return &Provider{BaseURL: srv.URL, Client: srv.Client(), Now: func() time.Time { return time.UnixMilli(1700000000000) }}
}

func simpleRequest() *llm.Request {
	return &llm.Request{Model: "claude-sonnet-4-5", System: []llm.SystemBlock{{Text: "Be brief."}},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Content{llm.Text("Weather in Paris?")}}},
		Tools:    []llm.Tool{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}}
}

func TestProviderStreamsThinkingTextAndTools(t *testing.T) {
	f := &fakeUpstream{body: fixture(t, "upstream_thinking_tool.sse")}
	p := startFake(t, f)
	s, err := p.Stream(context.Background(), simpleRequest(), &testModel, llm.APIKey("sk-test"))
	if err != nil {
		t.Fatal(err)
	}
	events := llmtest.Record(s)
	if err := llmtest.CheckGrammar(events); err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if last.Type != llm.EventDone || last.Reason != llm.StopToolUse {
		t.Fatalf("terminal = %v %v", last.Type, last.Reason)
	}
	m := last.Partial
	if len(m.Content) != 4 {
		t.Fatalf("content = %+v", m.Content)
	}
	if c := m.Content[0]; c.Thinking != "Let me check the weather." || c.ThinkingSignature != "EqQBCgIYAhIM1gbcDa9GJwZA2b3h" {
		t.Errorf("thinking = %+v", c)
	}
	if c := m.Content[1]; c.Text != "Checking Paris <now>." {
		t.Errorf("text = %q", c.Text)
	}
	if c := m.Content[2]; c.ID != "toolu_01T1x1fJ34qAmk2tNTrN7Up6" || c.Name != "get_weather" || string(c.Arguments) != `{"city": "Paris"}` {
		t.Errorf("tool = %+v args %s", c, c.Arguments)
	}
	if c := m.Content[3]; string(c.Arguments) != `{}` || c.ArgumentsText != "" {
		t.Errorf("no-argument tool = %+v", c)
	}
	if m.ResponseID != "msg_01ABC" || m.Usage.Input != 25 || m.Usage.CacheRead != 10 || m.Usage.Output != 89 || m.Usage.Cost.Total == 0 {
		t.Errorf("metadata = id %q usage %+v", m.ResponseID, m.Usage)
	}
	if m.Timestamp != 1700000000000 {
		t.Errorf("timestamp = %d", m.Timestamp)
	}
	h := f.gotReq.Header
	if h.Get("x-api-key") != "sk-test" || h.Get("anthropic-version") != APIVersion || h.Get("Authorization") != "" {
		t.Errorf("api-key headers = %v", h)
	}
	if f.gotReq.URL.Path != "/v1/messages" {
		t.Errorf("path = %s", f.gotReq.URL.Path)
	}
}

func TestProviderOAuthHeadersAndToolPrefix(t *testing.T) {
	body := strings.ReplaceAll(fixture(t, "upstream_thinking_tool.sse"), `"name":"get_weather"`, `"name":"_get_weather"`)
	f := &fakeUpstream{body: body}
	p := startFake(t, f)
	req := simpleRequest()
	req.OriginAPI = llm.APIAnthropic
	req.Headers = map[string]string{"anthropic-beta": "context-management-2025-06-27,oauth-2025-04-20"}
	s, err := p.Stream(context.Background(), req, &testModel, llm.OAuthToken("oat-secret"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := llm.Collect(s)
	if err != nil {
		t.Fatal(err)
	}
	if m.Content[2].Name != "get_weather" {
		t.Errorf("tool name prefix not stripped: %q", m.Content[2].Name)
	}
	h := f.gotReq.Header
	if h.Get("Authorization") != "Bearer oat-secret" || h.Get("x-api-key") != "" || h.Get("x-app") != "cli" ||
		h.Get("User-Agent") != provider.ClaudeCodeUserAgent() || h.Get("anthropic-dangerous-direct-browser-access") != "true" {
		t.Errorf("oauth headers = %v", h)
	}
	if got := h.Get("anthropic-beta"); got != oauthBetas+",context-management-2025-06-27" {
		t.Errorf("anthropic-beta = %q", got)
	}
	var sent struct {
		System []struct{ Text string } `json:"system"`
		Tools  []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(f.gotBody, &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.System) != 2 || sent.System[0].Text != ClaudeCodeInstruction || sent.System[1].Text != "Be brief." {
		t.Errorf("system = %+v", sent.System)
	}
	if sent.Tools[0].Name != "_get_weather" {
		t.Errorf("tool name = %q", sent.Tools[0].Name)
	}
}

func TestProviderErrors(t *testing.T) {
	tests := []struct {
		name       string
		up         fakeUpstream
		status     int
		typ        string
		retryAfter time.Duration
		class      llm.ErrorClass
	}{
		{"429 with retry-after", fakeUpstream{status: 429, header: http.Header{"Retry-After": {"12"}, "Request-Id": {"req_1"}},
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"},"request_id":"req_1"}`},
			429, "rate_limit_error", 12 * time.Second, llm.ClassRateLimit},
		{"401 oauth expired", fakeUpstream{status: 401, body: `{"type":"error","error":{"type":"authentication_error","message":"OAuth token has expired"}}`},
			401, "authentication_error", 0, llm.ClassAuth},
		{"529 overloaded", fakeUpstream{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
			529, "overloaded_error", 0, llm.ClassUpstream},
		{"plain text 502", fakeUpstream{status: 502, body: "Bad Gateway"}, 502, "", 0, llm.ClassUpstream},
		{"error before message_start", fakeUpstream{body: "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"},
			529, "overloaded_error", 0, llm.ClassUpstream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := tt.up
			p := startFake(t, &up)
			_, err := p.Stream(context.Background(), simpleRequest(), &testModel, llm.APIKey("sk-secret"))
			var ue *llm.UpstreamError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v, want *llm.UpstreamError", err)
			}
			if ue.Status != tt.status || ue.Type != tt.typ || ue.RetryAfter != tt.retryAfter || llm.Classify(err).Class != tt.class {
				t.Fatalf("err = %+v", ue)
			}
			if strings.Contains(err.Error(), "sk-secret") {
				t.Fatal("secret in error")
			}
		})
	}
}

func TestProviderStreamFailures(t *testing.T) {
	tests := []struct {
		fixture string
		reason  llm.StopReason
		typ     string
		safety  bool
	}{
		{"upstream_midstream_error.sse", llm.StopError, "overloaded_error", false},
		{"upstream_truncated.sse", llm.StopError, "", false},
		{"upstream_refusal.sse", llm.StopError, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			p := startFake(t, &fakeUpstream{body: fixture(t, tt.fixture)})
			s, err := p.Stream(context.Background(), simpleRequest(), &testModel, llm.APIKey("k"))
			if err != nil {
				t.Fatal(err)
			}
			events := llmtest.Record(s)
			if err := llmtest.CheckGrammar(events); err != nil {
				t.Fatal(err)
			}
			last := events[len(events)-1]
			if last.Type != llm.EventError || last.Reason != tt.reason || last.Partial.ErrorMessage == "" || last.Partial.Stop.Safety != tt.safety {
				t.Fatalf("terminal = %+v, message %+v", last, last.Partial)
			}
			var ue *llm.UpstreamError
			if tt.typ != "" && (!errors.As(last.Err, &ue) || ue.Type != tt.typ) {
				t.Fatalf("err = %v", last.Err)
			}
		})
	}
}

func TestProviderRefusalKeepsNativeBlocks(t *testing.T) {
	p := startFake(t, &fakeUpstream{body: fixture(t, "upstream_refusal.sse")})
	s, _ := p.Stream(context.Background(), simpleRequest(), &testModel, llm.APIKey("k"))
	m, err := llm.Collect(s)
	if err == nil {
		t.Fatal("refusal collected as success")
	}
	if len(m.Content) != 2 || m.Content[0].Type != llm.ContentRedactedThinking || m.Content[1].Type != llm.ContentNative ||
		!strings.Contains(string(m.Content[1].Raw()), `"input":{"query":"x"}`) {
		t.Fatalf("content = %+v", m.Content)
	}
}

func TestProviderCancellationAborts(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{}}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &Provider{BaseURL: srv.URL, Client: srv.Client()}
	s, err := p.Stream(ctx, simpleRequest(), &testModel, llm.APIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	var last llm.Event
	for ev := range s.Events() {
		if ev.Type == llm.EventStart {
			cancel()
		}
		last = ev
	}
	s.Close()
	if last.Type != llm.EventError || last.Reason != llm.StopAborted {
		t.Fatalf("last = %v %v", last.Type, last.Reason)
	}
}
