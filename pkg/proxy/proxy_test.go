package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/syncbuf"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	openaisdk "github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/proxy"
	"github.com/ompgo/omp/pkg/vault"
)

func openaiClient(gw string) openaisdk.Client {
	return openaisdk.NewClient(ooption.WithBaseURL(gw+"/v1"), ooption.WithAPIKey(gatewayToken), ooption.WithMaxRetries(0))
}

func chatParams(model string) openaisdk.ChatCompletionNewParams {
	return openaisdk.ChatCompletionNewParams{
		Model:    model,
		Messages: []openaisdk.ChatCompletionMessageParamUnion{openaisdk.SystemMessage("Be brief."), openaisdk.UserMessage("Say hello")},
	}
}

func anthropicOK(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		if r.URL.Path != "/v1/messages" {
			t.Errorf("upstream path %q", r.URL.Path)
		}
		writeSSE(w, anthropicText)
	})
}

func TestChatToAnthropic(t *testing.T) {
	up := anthropicOK(t)
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant-vault")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	c := openaiClient(gw.URL)
	ctx := context.Background()

	t.Run("streaming", func(t *testing.T) {
		s := c.Chat.Completions.NewStreaming(ctx, chatParams("anthropic/claude-sonnet-4-5"))
		var acc openaisdk.ChatCompletionAccumulator
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.Content; got != "Hello world" {
			t.Errorf("content %q", got)
		}
		if got := acc.Choices[0].FinishReason; got != "stop" {
			t.Errorf("finish_reason %q", got)
		}
	})
	t.Run("non-streaming, bare id", func(t *testing.T) {
		resp, err := c.Chat.Completions.New(ctx, chatParams("claude-sonnet-4-5"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Choices[0].Message.Content != "Hello world" || resp.Model != "claude-sonnet-4-5" || resp.Usage.CompletionTokens != 5 {
			t.Errorf("completion %s", resp.RawJSON())
		}
	})
	for _, k := range up.seen() {
		if k != "sk-ant-vault" {
			t.Errorf("upstream saw credential %q, want the vault key (never the gateway token)", k)
		}
	}
}

func TestChatToOpenAIChatUpstream(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		if r.URL.Path != "/v1/chat/completions" {
			t.Errorf("upstream path %q", r.URL.Path)
		}
		writeSSE(w, chatText)
	})
	cat := llm.Builtin().With(llm.Model{ID: "gpt-4o-mini", Name: "GPT-4o mini", Provider: "openai", API: llm.APIOpenAIChat,
		Input: []llm.Modality{llm.ModalityText, llm.ModalityImage}, ContextWindow: 128000, MaxTokens: 16384})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openai", "sk-openai-vault")}}
	gw := gateway(t, src, map[string]string{"openai": up.srv.URL + "/v1"}, cat)
	c := openaiClient(gw.URL)
	ctx := context.Background()

	s := c.Chat.Completions.NewStreaming(ctx, chatParams("openai/gpt-4o-mini"))
	var acc openaisdk.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "Hi there" {
		t.Errorf("stream content %q", got)
	}
	resp, err := c.Chat.Completions.New(ctx, chatParams("gpt-4o-mini"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "Hi there" || resp.Usage.TotalTokens != 7 {
		t.Errorf("completion %s", resp.RawJSON())
	}
	if k := up.seen(); len(k) != 2 || k[0] != "sk-openai-vault" {
		t.Errorf("upstream credentials %q", k)
	}

	// /v1/models lists each resolvable model once, provider-qualified.
	page, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range page.Data {
		if seen[m.ID] || !strings.HasPrefix(m.ID, "openai/") {
			t.Errorf("model row %q duplicated or not an openai model", m.ID)
		}
		seen[m.ID] = true
	}
	if !seen["openai/gpt-4o-mini"] {
		t.Errorf("openai/gpt-4o-mini not listed")
	}
}

func TestMessagesStreamingToolCall(t *testing.T) {
	replay, err := os.ReadFile("../llm/anthropic/testdata/upstream_thinking_tool.sse")
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		if r.Header.Get("anthropic-beta") == "" {
			t.Errorf("anthropic-beta was not passed through")
		}
		writeSSE(w, string(replay))
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant-vault")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	// The SDK sends the gateway token as x-api-key (accepted beside the
	// bearer), and Claude Code appends ?beta=true.
	c := anthropicsdk.NewClient(aoption.WithBaseURL(gw.URL), aoption.WithAPIKey(gatewayToken), aoption.WithMaxRetries(0),
		aoption.WithQuery("beta", "true"), aoption.WithHeader("anthropic-beta", "interleaved-thinking-2025-05-14"))
	s := c.Messages.NewStreaming(context.Background(), anthropicsdk.MessageNewParams{
		Model:     anthropicsdk.Model("claude-sonnet-4-5"),
		MaxTokens: 1024,
		Messages:  []anthropicsdk.MessageParam{anthropicsdk.NewUserMessage(anthropicsdk.NewTextBlock("Weather in Paris?"))},
		Tools: []anthropicsdk.ToolUnionParam{{OfTool: &anthropicsdk.ToolParam{Name: "get_weather",
			InputSchema: anthropicsdk.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}},
	})
	var msg anthropicsdk.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropicsdk.StopReasonToolUse || len(msg.Content) != 4 {
		t.Fatalf("message %s", msg.RawJSON())
	}
	tool := msg.Content[2]
	var in map[string]string
	if err := json.Unmarshal(tool.Input, &in); err != nil || tool.Name != "get_weather" || in["city"] != "Paris" {
		t.Errorf("tool_use %s", tool.RawJSON())
	}
	if msg.Content[0].Type != "thinking" || msg.Content[0].Thinking != "Let me check the weather." {
		t.Errorf("thinking block %s", msg.Content[0].RawJSON())
	}
	if !strings.HasPrefix(msg.ID, "msg_") {
		t.Errorf("message id %q", msg.ID)
	}
}

func TestAuthFailureRefreshesThroughSource(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, key string) {
		if key == "tok-a" {
			writeJSON(w, 401, nil, `{"type":"error","error":{"type":"authentication_error","message":"OAuth token has expired"}}`)
			return
		}
		writeSSE(w, anthropicText)
	})
	src := &memSource{entries: []vault.Entry{oauthEntry(7, "anthropic", "tok-a")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	c := openaiClient(gw.URL)
	resp, err := c.Chat.Completions.New(context.Background(), chatParams("anthropic/claude-sonnet-4-5"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "Hello world" {
		t.Errorf("completion %s", resp.RawJSON())
	}
	if got := up.seen(); !slices.Equal(got, []string{"tok-a", "tok-a~r1"}) {
		t.Errorf("upstream credentials %q, want the old token then the re-minted one", got)
	}
	if got := src.refreshed(); !slices.Equal(got, []int64{7}) {
		t.Errorf("refreshes %v, want [7]", got)
	}
}

const usageLimit429 = `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your usage limit for this account"}}`

func TestUsageLimitFailsOverToSibling(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {
		if n == 0 {
			writeJSON(w, 429, map[string]string{"retry-after": "120"}, usageLimit429)
			return
		}
		writeSSE(w, anthropicText)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-one"), apiKeyEntry(2, "anthropic", "sk-two")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	c := openaiClient(gw.URL)
	for range 2 {
		resp, err := c.Chat.Completions.New(context.Background(), chatParams("anthropic/claude-sonnet-4-5"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Choices[0].Message.Content != "Hello world" {
			t.Errorf("completion %s", resp.RawJSON())
		}
	}
	// The limited key is blocked: the second request goes straight to the
	// sibling.
	got := up.seen()
	if len(got) != 3 || got[0] == got[1] || got[1] != got[2] {
		t.Errorf("upstream credentials %q, want limited, sibling, sibling", got)
	}
}

func TestUsageLimitSingleCredential(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		writeJSON(w, 429, map[string]string{"retry-after": "30"}, usageLimit429)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-one")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	for _, tc := range []struct{ path, body, wantType string }{
		{"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"type":"rate_limit_error"`},
		{"/v1/chat/completions", `{"model":"claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"type":"insufficient_quota"`},
	} {
		resp := post(t, gw.URL+tc.path, gatewayToken, tc.body)
		body := readAll(t, resp)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "30" || !strings.Contains(body, tc.wantType) || !strings.Contains(body, "usage limit") {
			t.Errorf("%s: %d Retry-After=%q %s", tc.path, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		if resp.Header.Get("x-request-id") == "" {
			t.Errorf("%s: no x-request-id on the error envelope", tc.path)
		}
	}
	if n := len(up.seen()); n != 2 {
		t.Errorf("upstream called %d times, want once per request", n)
	}
}

func TestClientAbortCancelsUpstream(t *testing.T) {
	cancelled := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		_, _ = w.Write([]byte(strings.SplitAfter(anthropicText, "\n\n")[0]))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(cancelled)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-one")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/v1/messages",
		strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+gatewayToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "event: message_start\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request was not cancelled after the client went away")
	}
}

func TestErrorEnvelopes(t *testing.T) {
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-one")}}
	gw := gateway(t, src, nil, nil)
	chat := `{"model":"%s","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name, path, token, body string
		status                  int
		want                    string
	}{
		{"unknown model chat", "/v1/chat/completions", gatewayToken, strings.Replace(chat, "%s", "nope", 1), 404,
			`{"error":{"message":"Unknown model: nope","type":"invalid_request_error","param":null,"code":"model_not_found"}}`},
		{"unknown model messages", "/v1/messages", gatewayToken, `{"model":"nope","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, 404,
			`{"type":"error","error":{"type":"not_found_error","message":"Unknown model: nope"}}`},
		{"provider without credentials", "/v1/chat/completions", gatewayToken, strings.Replace(chat, "%s", "openai/gpt-5", 1), 404,
			`{"error":{"message":"Unknown model: openai/gpt-5 (it needs an openai credential and the broker holds none; run omp auth-broker login openai)","type":"invalid_request_error","param":null,"code":"model_not_found"}}`},
		{"bare model without credentials", "/v1/messages", gatewayToken, `{"model":"gemini-2.5-pro","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, 404,
			`{"type":"error","error":{"type":"not_found_error","message":"Unknown model: gemini-2.5-pro (it needs a google credential and the broker holds none; run omp auth-broker login google)"}}`},
		{"unknown qualified model", "/v1/chat/completions", gatewayToken, strings.Replace(chat, "%s", "openai/nope", 1), 404,
			`{"error":{"message":"Unknown model: openai/nope","type":"invalid_request_error","param":null,"code":"model_not_found"}}`},
		{"missing model", "/v1/responses", gatewayToken, `{"input":"hi"}`, 400,
			"{\"error\":{\"message\":\"Missing top-level `model` field\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}"},
		{"pi unknown model", "/v1/pi/stream", gatewayToken, `{"modelId":"nope","context":{"messages":[]}}`, 404,
			`{"error":{"type":"invalid_request_error","message":"Unknown model: nope"}}`},
		{"wrong token", "/v1/chat/completions", "wrong", strings.Replace(chat, "%s", "claude-sonnet-4-5", 1), 401, `{"error":"unauthorized"}`},
		{"no token", "/v1/messages", "", `{}`, 401, `{"error":"unauthorized"}`},
		{"unknown route", "/v1/messages/count_tokens", gatewayToken, `{}`, 404, `{"error":"No route: POST /v1/messages/count_tokens"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, gw.URL+tc.path, tc.token, tc.body)
			if body := readAll(t, resp); resp.StatusCode != tc.status || body != tc.want {
				t.Errorf("%d %s\nwant %d %s", resp.StatusCode, body, tc.status, tc.want)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("no CORS headers")
			}
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-one")}}
	gw := gateway(t, src, nil, nil)
	big := `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("a", 33<<20) + `"}]}`
	resp := post(t, gw.URL+"/v1/messages", gatewayToken, big)
	if body := readAll(t, resp); resp.StatusCode != 413 || !strings.Contains(body, `"type":"error"`) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}

func TestUnauthenticatedRoutes(t *testing.T) {
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-one")}}
	gw := gateway(t, src, nil, nil)
	resp, err := http.Get(gw.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || body != `{"ok":true,"version":"test"}` {
		t.Errorf("healthz %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodGet, gw.URL+"/v1/chat/completions", nil)
	req.Header.Set("Authorization", "Bearer "+gatewayToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 404 || body != `{"error":"No route: GET /v1/chat/completions"}` {
		t.Errorf("GET on a POST route: %d %s", resp.StatusCode, body)
	}
	req, _ = http.NewRequest(http.MethodOptions, gw.URL+"/v1/chat/completions", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Methods") != "GET, POST, OPTIONS" {
		t.Errorf("preflight %d %v", resp.StatusCode, resp.Header)
	}
}

func TestNew(t *testing.T) {
	src := &memSource{}
	if _, err := proxy.New(proxy.Options{Tokens: []string{"t"}}); err == nil {
		t.Error("New without a Source succeeded")
	}
	if _, err := proxy.New(proxy.Options{Source: src}); err == nil {
		t.Error("New without tokens and without NoAuth succeeded")
	}
	s, err := proxy.New(proxy.Options{Source: src, NoAuth: true, Version: "v1", Status: func() any { return map[string]any{"generation": 3} }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); body != `{"ok":true,"version":"v1","broker":{"generation":3}}` || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("healthz %s %v", body, resp.Header)
	}
	// NoAuth: no token needed; an empty Source has no models.
	resp, err = http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || body != `{"object":"list","data":[]}` {
		t.Errorf("models %d %s", resp.StatusCode, body)
	}
	resp = post(t, srv.URL+"/v1/chat/completions", "", `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`)
	if body := readAll(t, resp); resp.StatusCode != 404 ||
		!strings.Contains(body, "Unknown model: claude-sonnet-4-5 (it needs an anthropic credential and the broker holds none; run omp auth-broker login anthropic)") {
		t.Errorf("chat without credentials %d %s", resp.StatusCode, body)
	}
}

// The request log line, with the request id the client got,
// and neither the gateway token nor the credential.
func TestRequestLogLine(t *testing.T) {
	up := anthropicOK(t)
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant-vault")}}
	var logs syncbuf.Buffer
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil, func(s *proxy.Server) {
		proxy.SetLogger(s, slog.New(slog.NewTextHandler(&logs, nil)))
	})
	resp := post(t, gw.URL+"/v1/chat/completions", gatewayToken, `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var line string
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, `msg="auth-gateway request"`) {
			line = l
		}
	}
	want := ` level=INFO msg="auth-gateway request" format=openai-chat model=claude-sonnet-4-5 resolvedProvider=anthropic resolvedModel=claude-sonnet-4-5 stream=false peer=127.0.0.1 requestId=` + resp.Header.Get("x-request-id")
	if !strings.HasSuffix(line, want) || !strings.HasPrefix(line, "time=") {
		t.Fatalf("request line:\n%s\nwant it to end with\n%s", line, want)
	}
	if strings.Contains(logs.String(), gatewayToken) || strings.Contains(logs.String(), "sk-ant-vault") {
		t.Fatalf("a secret in the log:\n%s", logs.String())
	}
}
