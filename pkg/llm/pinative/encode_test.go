package pinative

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// script drives a Builder through a turn with thinking, text and two tool
// calls, the way an upstream adapter does.
func script(fail bool) *llm.Stream {
	seq := func(yield func(llm.Event) bool) {
		b := llm.NewBuilder(llm.APIGoogle, "google", "gemini-2.5-flash", yield)
		m := b.Message()
		m.Timestamp, m.ResponseID = 1700000000000, "resp-1"
		if !b.Start() || !b.Thinking("Let me ") || !b.Thinking("check.") {
			return
		}
		m.Content[0].ThinkingSignature = "c2ln"
		_ = b.Text("Checking \"both\" <cities>\n")
		_ = b.StartToolCall("call_1", "get_weather") && b.ToolArgs(`{"city":`) && b.ToolArgs(`"Paris"}`) && b.EndBlock()
		_ = b.StartToolCall("call_2", "get_time") && b.EndBlock()
		m.Usage = llm.Usage{Input: 21, Output: 212, CacheRead: 8, Reasoning: 202}.WithCost(llm.Price{Input: 1, Output: 2, CacheRead: 0.5})
		if fail {
			b.Fail(&llm.UpstreamError{Provider: "google", Status: 429, Type: "RESOURCE_EXHAUSTED", Message: "quota"})
			return
		}
		b.Done(llm.StopEnd)
	}
	return llm.NewStream(seq, nil)
}

func TestWriteStreamGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		fail bool
	}{{"stream_toolcalls", false}, {"stream_error", true}} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			flushes := 0
			if err := WriteStream(context.Background(), &buf, func() error { flushes++; return nil }, script(tt.fail)); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			frames := strings.Split(strings.TrimSuffix(got, "\n\n"), "\n\n")
			if frames[len(frames)-1] != "data: [DONE]" {
				t.Fatalf("stream does not end with [DONE]: %q", frames[len(frames)-1])
			}
			for _, f := range frames[:len(frames)-1] {
				if !strings.HasPrefix(f, "data: {") || strings.Contains(f, "\n") || !json.Valid([]byte(f[6:])) {
					t.Fatalf("bad frame %q", f)
				}
			}
			if flushes != len(frames)-1 {
				t.Errorf("%d flushes for %d events", flushes, len(frames)-1)
			}
			golden := "testdata/" + tt.name + ".golden"
			llmtest.GoldenExact(t, golden, buf.Bytes())
		})
	}
}

func TestWriteStreamWithoutTerminalSendsFailureFrame(t *testing.T) {
	s := llm.NewStream(func(yield func(llm.Event) bool) {
		b := llm.NewBuilder(llm.APIGoogle, "google", "m", yield)
		_ = b.Text("cut")
	}, nil)
	var buf bytes.Buffer
	if err := WriteStream(context.Background(), &buf, nil, s); err != nil {
		t.Fatal(err)
	}
	want := "data: {\"type\":\"error\",\"reason\":\"error\",\"errorMessage\":\"stream ended without a terminal event\"}\n\ndata: [DONE]\n\n"
	if !strings.HasSuffix(buf.String(), want) {
		t.Errorf("got %q", buf.String())
	}
}

func TestWriteStreamStopsWhenClientGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var buf bytes.Buffer
	err := WriteStream(ctx, &buf, nil, script(false))
	if !errors.Is(err, context.Canceled) || strings.Contains(buf.String(), "[DONE]") {
		t.Fatalf("err %v, wrote %q", err, buf.String())
	}
}

// TestAppendContentMatchesDomainJSON checks the hand-written encoder
// against llm.Content.MarshalJSON for every block kind.
func TestAppendContentMatchesDomainJSON(t *testing.T) {
	blocks := []llm.Content{
		llm.Text("a \"q\" \u2028 é"), {Type: llm.ContentText, Text: "", Extra: &llm.ContentExtra{TextSignature: "ts"}},
		{Type: llm.ContentThinking, Thinking: "t", ThinkingSignature: "s", Extra: &llm.ContentExtra{ItemID: "rs_1"}},
		{Type: llm.ContentRedactedThinking, Data: "enc"},
		llm.Image("image/png", "AAAA"), {Type: llm.ContentImage, Extra: &llm.ContentExtra{URL: "https://x", Detail: "low"}},
		llm.ToolCall("c1", "f", json.RawMessage(`{"a": [1, 2]}`)),
		{Type: llm.ContentToolCall, ID: "c2", Name: "g", ArgumentsText: `{"a":"par`, Extra: &llm.ContentExtra{ThoughtSignature: "sig", CustomWireName: "w"}},
		llm.Native(llm.APIAnthropic, json.RawMessage(`{"type":"server_tool_use"}`)),
	}
	for _, c := range blocks {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendContent(nil, &c)
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("invalid %s: %v", got, err)
		}
		_ = json.Unmarshal(want, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s block\n got %s\nwant %s", c.Type, got, want)
		}
	}
}

func TestErrorEnvelope(t *testing.T) {
	tests := []struct {
		status int
		want   string
	}{
		{400, "invalid_request_error"}, {401, "authentication_error"}, {403, "authentication_error"},
		{404, "invalid_request_error"}, {413, "invalid_request_error"}, {429, "rate_limit_error"},
		{499, "request_aborted"}, {500, "upstream_error"}, {502, "upstream_error"}, {503, "upstream_error"},
		{529, "upstream_error"}, {0, "upstream_error"},
	}
	for _, tt := range tests {
		if got := ErrorType(tt.status); got != tt.want {
			t.Errorf("ErrorType(%d) = %s, want %s", tt.status, got, tt.want)
		}
	}
	got := string(AppendError(nil, "rate_limit_error", `slow "down"`))
	if got != `{"error":{"type":"rate_limit_error","message":"slow \"down\""}}` {
		t.Errorf("envelope %s", got)
	}
}

func TestAppendResponse(t *testing.T) {
	m := &llm.Message{Role: llm.RoleAssistant, API: "a", Provider: "p", Model: "m", StopReason: llm.StopEnd,
		Content: []llm.Content{llm.Text("hi")}, Usage: llm.Usage{Input: 1, Output: 2, Cost: llm.Cost{Total: 1e-7}}}
	got := string(AppendResponse(nil, m))
	want := `{"message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"a","provider":"p","model":"m",` +
		`"usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":1e-7}},` +
		`"stopReason":"stop","timestamp":0}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
