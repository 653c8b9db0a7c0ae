package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// dumpEvent renders one canonical event as a golden line.
func dumpEvent(b *bytes.Buffer, ev *llm.Event) {
	fmt.Fprintf(b, "%s", ev.Type)
	switch {
	case ev.Type.IsDelta():
		fmt.Fprintf(b, " #%d %q", ev.ContentIndex, ev.Delta)
	case ev.Type == llm.EventTextEnd || ev.Type == llm.EventThinkingEnd:
		fmt.Fprintf(b, " #%d %q", ev.ContentIndex, ev.Content)
	case ev.Type == llm.EventToolCallStart:
		blk := ev.Block()
		fmt.Fprintf(b, " #%d id=%q name=%q", ev.ContentIndex, blk.ID, blk.Name)
	case ev.Type == llm.EventToolCallEnd:
		blk := ev.Block()
		fmt.Fprintf(b, " #%d id=%q args=%s", ev.ContentIndex, blk.ID, blk.Arguments)
	case ev.Type.IsTerminal():
		m := ev.Partial
		fmt.Fprintf(b, " reason=%s stop=%+v usage={in:%d out:%d cacheRead:%d reasoning:%d} id=%q",
			ev.Reason, m.Stop, m.Usage.Input, m.Usage.Output, m.Usage.CacheRead, m.Usage.Reasoning, m.ResponseID)
		if m.ErrorMessage != "" {
			fmt.Fprintf(b, " error=%q", m.ErrorMessage)
		}
		content, _ := json.Marshal(m.Content)
		fmt.Fprintf(b, "\n  content=%s", content)
	case ev.ContentIndex >= 0 && ev.Type != llm.EventStart:
		fmt.Fprintf(b, " #%d", ev.ContentIndex)
	}
	b.WriteByte('\n')
}

// sseServer serves the fixture file as an SSE body and records the
// request it got.
func sseServer(t *testing.T, fixture string, contentType string, got *http.Request, body *[]byte) *httptest.Server {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got != nil {
			*got = *r.Clone(context.Background())
		}
		if body != nil {
			buf := new(bytes.Buffer)
			_, _ = buf.ReadFrom(r.Body)
			*body = buf.Bytes()
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func testRequest() *llm.Request {
	return &llm.Request{
		Model:    "m",
		System:   []llm.SystemBlock{{Text: "Be brief."}},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Content{llm.Text("Weather in Paris and Rome?")}}},
		Tools:    []llm.Tool{{Name: "get_weather", Description: "Get weather.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
	}
}

func runProvider(t *testing.T, p llm.Provider, model llm.Model) []byte {
	t.Helper()
	s, err := p.Stream(context.Background(), testRequest(), &model, llm.APIKey("sk-test"))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	defer s.Close()
	var b bytes.Buffer
	n := 0
	for ev := range s.Events() {
		dumpEvent(&b, &ev)
		n++
	}
	return b.Bytes()
}

func TestUpstreamStreamsMatchGoldens(t *testing.T) {
	cases := []struct {
		fixture string
		api     string
		ctype   string
	}{
		{"chat_parallel_tools.sse", llm.APIOpenAIChat, "text/event-stream"},
		{"chat_interleaved_crlf.sse", llm.APIOpenAIChat, "text/event-stream"},
		{"chat_midstream_error.sse", llm.APIOpenAIChat, "text/event-stream"},
		{"chat_length.sse", llm.APIOpenAIChat, "text/event-stream"},
		{"chat_content_filter.sse", llm.APIOpenAIChat, "text/event-stream"},
		{"chat_truncated.sse", llm.APIOpenAIChat, "text/event-stream"},
		{"responses_reasoning_tools.sse", llm.APIOpenAIResponses, "text/event-stream"},
		{"responses_incomplete.sse", llm.APIOpenAIResponses, "text/event-stream"},
		{"responses_error.sse", llm.APIOpenAIResponses, "text/event-stream"},
		{"codex_sparse.sse", llm.APICodex, ""},
		{"responses_error_wrapped.sse", llm.APICodex, ""},
	}
	for _, tc := range cases {
		t.Run(tc.fixture, func(t *testing.T) {
			srv := sseServer(t, tc.fixture, tc.ctype, nil, nil)
			model := llm.Model{ID: "m", Provider: "p", API: tc.api, BaseURL: srv.URL, Reasoning: true}
			var p llm.Provider
			switch tc.api {
			case llm.APIOpenAIChat:
				p = &ChatProvider{}
			case llm.APIOpenAIResponses:
				p = &ResponsesProvider{}
			default:
				p = &CodexProvider{}
			}
			got := runProvider(t, p, model)
			llmtest.GoldenExact(t, strings.TrimSuffix(tc.fixture, ".sse")+".events", got)
		})
	}
}
