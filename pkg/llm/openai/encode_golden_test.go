package openai

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

func TestEncodersMatchGoldens(t *testing.T) {
	overloaded := &llm.UpstreamError{Provider: "anthropic", Status: 529, Type: "overloaded_error", Message: "Overloaded"}
	cases := []struct {
		name string
		s    script
	}{
		{"agent", agentScript},
		{"length", script{text: []string{"Long"}, reason: llm.StopLength, usage: llm.Usage{Input: 3, Output: 9}}},
		{"refusal", script{text: []string{"I can't"}, safety: true}},
		{"midstream_error", script{text: []string{"Part"}, fail: overloaded}},
		{"aborted", script{text: []string{"Part"}, fail: context.Canceled}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			chat := NewChatStream(ChatOptions{ID: "chatcmpl-1", Model: "gpt-test", Created: 1700000000, IncludeUsage: true})
			resp := NewResponsesStream(ResponsesOptions{ID: "resp_abc", Model: "gpt-test", Created: 1700000000})
			var c, r []byte
			final := tc.s.play(llm.APIAnthropic, func(ev *llm.Event) {
				c = chat.Append(c, ev)
				r = resp.Append(r, ev)
			})
			llmtest.GoldenExact(t, "encode_"+tc.name+".chat.sse", c)
			llmtest.GoldenExact(t, "encode_"+tc.name+".responses.sse", r)
			if final.StopReason.IsTerminalSuccess() || final.Stop.Safety {
				o := ChatOptions{ID: "chatcmpl-1", Model: "gpt-test", Created: 1700000000}
				llmtest.GoldenExact(t, "encode_"+tc.name+".chat.json", append(AppendChatCompletion(nil, final, o), '\n'))
				ro := ResponsesOptions{ID: "resp_abc", Model: "gpt-test", Created: 1700000000}
				llmtest.GoldenExact(t, "encode_"+tc.name+".responses.json", append(AppendResponse(nil, final, ro), '\n'))
			}
		})
	}
}

// TestEncodedFramesEndWithBlankLine checks that every frame ends with a
// blank line and that no normal chat chunk has a top-level error key.
func TestEncodedFramesEndWithBlankLine(t *testing.T) {
	chat := NewChatStream(ChatOptions{ID: "x", Model: "m", IncludeUsage: true})
	resp := NewResponsesStream(ResponsesOptions{ID: "resp_x", Model: "m"})
	var c, r []byte
	agentScript.play(llm.APIOpenAIChat, func(ev *llm.Event) {
		c = chat.Append(c, ev)
		r = resp.Append(r, ev)
	})
	for name, out := range map[string][]byte{"chat": c, "responses": r} {
		if !bytes.HasSuffix(out, []byte("\n\n")) {
			t.Errorf("%s stream does not end with a blank line", name)
		}
		for _, frame := range bytes.Split(bytes.TrimSuffix(out, []byte("\n\n")), []byte("\n\n")) {
			if len(frame) == 0 || bytes.Contains(frame, []byte("\n\n")) {
				t.Errorf("%s: malformed frame %q", name, frame)
			}
			if name == "chat" && bytes.Contains(frame, []byte(`"error"`)) {
				t.Errorf("chat chunk has an error key: %s", frame)
			}
		}
	}
}

func TestChatStreamSendsNothingAfterTerminal(t *testing.T) {
	s := NewChatStream(ChatOptions{ID: "x"})
	var out []byte
	out = s.Append(out, &llm.Event{Type: llm.EventDone, Reason: llm.StopEnd, Partial: &llm.Message{}})
	n := len(out)
	out = s.Append(out, &llm.Event{Type: llm.EventTextDelta, Delta: "late"})
	if len(out) != n {
		t.Fatalf("frame written after the terminal event: %q", out[n:])
	}
	_ = errors.New
	_ = time.Now
}
