package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	openaisdk "github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/ompgo/omp/pkg/vault"
)

const (
	accessA0  = "sk-ant-oat01-e2e-uploaded-access"
	refreshA0 = "sk-ant-ort01-e2e-uploaded-refresh"
)

func oauthCred() vault.Credential {
	return vault.Credential{Type: vault.TypeOAuth, Access: accessA0, Refresh: refreshA0,
		Expires: time.Now().Add(time.Hour).UnixMilli(), Email: "alice@example.com"} // not due: only forced refreshes
}

func openaiClient(s *stack) openaisdk.Client {
	return openaisdk.NewClient(ooption.WithBaseURL(s.gwURL+"/v1"), ooption.WithAPIKey(s.token), ooption.WithMaxRetries(0))
}

func chatParams() openaisdk.ChatCompletionNewParams {
	return openaisdk.ChatCompletionNewParams{
		Model:    "anthropic/claude-sonnet-4-5",
		Messages: []openaisdk.ChatCompletionMessageParamUnion{openaisdk.SystemMessage("Be brief."), openaisdk.UserMessage("Say hello")},
	}
}

func chatStream(t *testing.T, ctx context.Context, c openaisdk.Client) string {
	t.Helper()
	return chatStreamOf(t, ctx, c, chatParams())
}

func chatStreamOf(t *testing.T, ctx context.Context, c openaisdk.Client, p openaisdk.ChatCompletionNewParams) string {
	t.Helper()
	s := c.Chat.Completions.NewStreaming(ctx, p)
	var acc openaisdk.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("chat stream: %v", err)
	}
	if len(acc.Choices) == 0 {
		t.Fatal("chat stream: no choices")
	}
	return acc.Choices[0].Message.Content
}

// An OAuth credential uploaded to the broker is what the upstream sees:
// its access token, never the gateway's token, never a refresh token.
func TestOAuthCredentialFromBroker(t *testing.T) {
	tool := replay(t, "anthropic/testdata/upstream_thinking_tool.sse")
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		if body, _ := io.ReadAll(r.Body); strings.Contains(string(body), `"tools"`) {
			writeSSE(w, tool)
			return
		}
		writeSSE(w, anthropicText)
	})
	s := startStack(t, f)
	s.upload(t, "anthropic", oauthCred(), 1)
	ctx := context.Background()
	c := openaiClient(s)

	if got := chatStream(t, ctx, c); got != "Hello world" {
		t.Errorf("chat stream content %q", got)
	}
	resp, err := c.Chat.Completions.New(ctx, chatParams())
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if resp.Choices[0].Message.Content != "Hello world" || resp.Usage.CompletionTokens != 5 {
		t.Errorf("completion %s", resp.RawJSON())
	}

	ac := anthropicsdk.NewClient(aoption.WithBaseURL(s.gwURL), aoption.WithAPIKey(s.token), aoption.WithMaxRetries(0),
		aoption.WithHeader("anthropic-beta", "interleaved-thinking-2025-05-14"))
	st := ac.Messages.NewStreaming(ctx, anthropicsdk.MessageNewParams{
		Model:     anthropicsdk.Model("claude-sonnet-4-5"),
		MaxTokens: 1024,
		Messages:  []anthropicsdk.MessageParam{anthropicsdk.NewUserMessage(anthropicsdk.NewTextBlock("Weather in Paris?"))},
		Tools: []anthropicsdk.ToolUnionParam{{OfTool: &anthropicsdk.ToolParam{Name: "get_weather",
			InputSchema: anthropicsdk.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}},
	})
	var msg anthropicsdk.Message
	for st.Next() {
		if err := msg.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("messages stream: %v", err)
	}
	if msg.StopReason != anthropicsdk.StopReasonToolUse || len(msg.Content) != 4 {
		t.Fatalf("message %s", msg.RawJSON())
	}
	var in map[string]string
	if tu := msg.Content[2]; json.Unmarshal(tu.Input, &in) != nil || tu.Name != "get_weather" || in["city"] != "Paris" {
		t.Errorf("tool_use %s", tu.RawJSON())
	}

	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("upstream saw %d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.key != accessA0 || r.header.Get("Authorization") != "Bearer "+accessA0 {
			t.Errorf("request %d: credential %q, want the uploaded access token as Bearer", i, r.key)
		}
		s.checkNoLeak(t, i, r, refreshA0)
	}
	if n := len(f.refreshes()); n != 0 {
		t.Errorf("token endpoint called %d times, want 0", n)
	}
}

// An upstream 401 makes the gateway refresh through the broker (the token
// endpoint sees exactly one refresh, with the uploaded refresh token), and
// the retry carries the new access token.
func TestUpstream401RefreshesThroughBroker(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int, key string) {
		if key == accessA0 {
			writeJSON(w, 401, nil, expired401)
			return
		}
		writeSSE(w, anthropicText)
	})
	s := startStack(t, f)
	s.upload(t, "anthropic", oauthCred(), 1)
	c := openaiClient(s)
	resp, err := c.Chat.Completions.New(context.Background(), chatParams())
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if resp.Choices[0].Message.Content != "Hello world" {
		t.Errorf("completion %s", resp.RawJSON())
	}
	if got := f.refreshes(); !slices.Equal(got, []string{refreshA0}) {
		t.Errorf("token endpoint saw %q, want exactly one refresh with the uploaded refresh token", got)
	}
	if got := f.keys(); !slices.Equal(got, []string{accessA0, "sk-ant-oat01-e2e-minted-1"}) {
		t.Errorf("upstream credentials %q, want the uploaded then the minted access token", got)
	}
	// The next request uses the minted token directly.
	if got := chatStream(t, context.Background(), c); got != "Hello world" {
		t.Errorf("stream %q", got)
	}
	if got := f.keys(); len(got) != 3 || got[2] != "sk-ant-oat01-e2e-minted-1" {
		t.Errorf("upstream credentials %q", got)
	}
	if n := len(f.refreshes()); n != 1 {
		t.Errorf("token endpoint called %d times, want 1", n)
	}
}

// A usage-limit 429 on one of two credentials fails over to the other,
// and the limited one is not tried again.
func TestUsageLimitFailsOver(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {
		if n == 0 {
			writeJSON(w, 429, map[string]string{"retry-after": "120"}, usageLimit429)
			return
		}
		writeSSE(w, anthropicText)
	})
	s := startStack(t, f)
	s.upload(t, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ant-api03-e2e-one"}, 1)
	s.upload(t, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ant-api03-e2e-two"}, 2)
	c := openaiClient(s)
	for range 2 {
		resp, err := c.Chat.Completions.New(context.Background(), chatParams())
		if err != nil {
			t.Fatalf("chat: %v", err)
		}
		if resp.Choices[0].Message.Content != "Hello world" {
			t.Errorf("completion %s", resp.RawJSON())
		}
	}
	got := f.keys()
	if len(got) != 3 || got[0] == got[1] || got[1] != got[2] {
		t.Errorf("upstream credentials %q, want limited, sibling, sibling", got)
	}
}

// A client that goes away mid-stream cancels the upstream request.
func TestClientAbortReachesUpstream(t *testing.T) {
	cancelled := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		events := strings.SplitAfter(anthropicText, "\n\n")
		_, _ = w.Write([]byte(events[0] + events[1] + events[3]))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(cancelled)
	})
	s := startStack(t, f)
	s.upload(t, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ant-api03-e2e-one"}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := openaiClient(s)
	st := c.Chat.Completions.NewStreaming(ctx, chatParams())
	got := ""
	for st.Next() {
		if ch := st.Current(); len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			got = ch.Choices[0].Delta.Content
			break
		}
	}
	if got != "Hello " {
		t.Fatalf("first delta %q (%v)", got, st.Err())
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(waitLong):
		t.Fatal("the upstream request was not cancelled after the client went away")
	}
	st.Close()
}

// A credential added at the broker is usable through the gateway within a
// second, and one disabled there is gone within a second.
func TestAddDisableVisibleWithinASecond(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) { writeSSE(w, anthropicText) })
	s := startStack(t, f)
	ctx := context.Background()
	send := func() int {
		req, _ := http.NewRequest(http.MethodPost, s.gwURL+"/v1/messages",
			strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = bufio.NewReader(resp.Body).WriteTo(devNull{})
		return resp.StatusCode
	}
	if code := send(); code != http.StatusNotFound {
		t.Fatalf("before any credential: %d, want 404", code)
	}
	until := func(what string, want int, from time.Time) time.Duration {
		for {
			if send() == want {
				return time.Since(from)
			}
			if time.Since(from) > waitLong { // the time is logged; this is a hang guard
				t.Fatalf("%s: not visible through the gateway within %v", what, waitLong)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	start := time.Now()
	es, err := s.broker.Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ant-api03-e2e-new"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("added: usable after %v", until("add", http.StatusOK, start))
	if k := f.keys(); len(k) == 0 || k[len(k)-1] != "sk-ant-api03-e2e-new" {
		t.Errorf("upstream credentials %q", k)
	}
	start = time.Now()
	if err := s.broker.Disable(ctx, es[0].ID, "e2e"); err != nil {
		t.Fatal(err)
	}
	t.Logf("disabled: gone after %v", until("disable", http.StatusNotFound, start))
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }
