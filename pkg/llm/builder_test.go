package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

type rec struct {
	types []EventType
	last  Event
	ends  []Event
}

func (r *rec) yield(ev Event) bool {
	r.types = append(r.types, ev.Type)
	r.last = ev
	if ev.Type == EventTextEnd || ev.Type == EventThinkingEnd || ev.Type == EventToolCallEnd {
		r.ends = append(r.ends, ev)
	}
	return true
}

func TestBuilderProducesValidGrammar(t *testing.T) {
	var r rec
	b := NewBuilder(APIAnthropic, "anthropic", "m", r.yield)
	b.Thinking("hmm")
	b.AddThinkingSignature("sig")
	b.Text("Hel")
	b.Text("lo")
	b.StartToolCall("toolu_1", "get")
	b.ToolArgs(`{"city":`)
	b.ToolArgs(`"Paris"}`)
	b.Done(StopEnd)

	want := []EventType{EventStart, EventThinkingStart, EventThinkingDelta, EventThinkingEnd,
		EventTextStart, EventTextDelta, EventTextDelta, EventTextEnd,
		EventToolCallStart, EventToolCallDelta, EventToolCallDelta, EventToolCallEnd, EventDone}
	if fmt.Sprint(r.types) != fmt.Sprint(want) {
		t.Fatalf("events = %v, want %v", r.types, want)
	}
	m := r.last.Partial
	if r.last.Reason != StopToolUse || m.StopReason != StopToolUse {
		t.Fatalf("reason = %s/%s, want toolUse (invariant 7)", r.last.Reason, m.StopReason)
	}
	if m.Content[0].ThinkingSignature != "sig" || m.Content[1].Text != "Hello" || r.ends[1].Content != "Hello" {
		t.Fatalf("content = %+v", m.Content)
	}
	if got := string(m.Content[2].Arguments); got != `{"city":"Paris"}` {
		t.Fatalf("arguments = %s", got)
	}
	for i, ev := range r.ends {
		if ev.ContentIndex != i {
			t.Fatalf("end %d has index %d", i, ev.ContentIndex)
		}
	}
}

func TestBuilderStopsAfterTerminal(t *testing.T) {
	var r rec
	b := NewBuilder(APIAnthropic, "anthropic", "m", r.yield)
	b.Text("x")
	b.Fail(fmt.Errorf("read body: %w", context.Canceled))
	if b.Text("more") || b.Done(StopEnd) {
		t.Fatal("builder accepted events after the terminal one")
	}
	if r.last.Type != EventError || r.last.Reason != StopAborted {
		t.Fatalf("last = %v %v, want error aborted", r.last.Type, r.last.Reason)
	}
}

func TestBuilderSafetyStopIsError(t *testing.T) {
	var r rec
	b := NewBuilder(APIAnthropic, "anthropic", "m", r.yield)
	b.Message().Stop = StopDetail{Raw: "refusal", API: APIAnthropic, Safety: true}
	b.Done(StopError)
	if r.last.Type != EventError || r.last.Partial.ErrorMessage == "" || !r.last.Partial.Stop.Safety {
		t.Fatalf("last = %+v", r.last)
	}
}

func TestBuilderStopsWhenConsumerStops(t *testing.T) {
	n := 0
	b := NewBuilder(APIAnthropic, "anthropic", "m", func(Event) bool { n++; return n < 2 })
	b.Text("a")
	if b.Text("b") {
		t.Fatal("Text returned true after the consumer stopped")
	}
	if n != 2 {
		t.Fatalf("yield called %d times, want 2", n)
	}
}

func TestContentJSONRoundTrip(t *testing.T) {
	in := []Content{Text(""), {Type: ContentThinking, Thinking: "t", ThinkingSignature: "s"},
		{Type: ContentRedactedThinking, Data: "d"}, Image("image/png", "AAAA"),
		ToolCall("c1", "f", json.RawMessage(`{"a":1}`))}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":""},{"type":"thinking","thinking":"t","thinkingSignature":"s"},{"type":"redactedThinking","data":"d"},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"toolCall","id":"c1","name":"f","arguments":{"a":1}}]`
	if string(b) != want {
		t.Fatalf("marshal = %s\nwant      %s", b, want)
	}
	var out []Content
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(out) != fmt.Sprint(in) {
		t.Fatalf("round trip = %+v\nwant %+v", out, in)
	}
	if err := json.Unmarshal([]byte(`{"type":"bogus"}`), &out[0]); err == nil {
		t.Fatal("unknown content type accepted")
	}
}

func TestBuiltinCatalog(t *testing.T) {
	c := Builtin()
	for _, p := range []string{"anthropic", "openai", "openai-codex", "google", "google-gemini-cli", "google-antigravity"} {
		found := false
		for _, m := range c.Models() {
			if m.Provider == p {
				found = true
				if m.API == "" || m.ModelKind() == KindChat && (m.ContextWindow <= 0 || m.MaxTokens <= 0) {
					t.Errorf("%s: incomplete entry %+v", m.Key(), m)
				}
			}
		}
		if !found {
			t.Errorf("no model for provider %s", p)
		}
	}
	m, ok := c.Lookup("anthropic", "claude-3-5-sonnet-20241022")
	if !ok || m.API != APIAnthropic || m.Cost.Output != 15 || !m.AcceptsImages() {
		t.Fatalf("Lookup = %+v, %v", m, ok)
	}
	over := c.With(Model{ID: m.ID, Provider: "anthropic", API: APIAnthropic, MaxTokens: 1})
	if got, _ := over.Lookup("anthropic", m.ID); got.MaxTokens != 1 || len(over.Models()) != len(c.Models()) {
		t.Fatalf("With did not override in place: %+v", got)
	}
}

func TestUsageCost(t *testing.T) {
	u := Usage{Input: 1_000_000, Output: 500_000, CacheRead: 2_000_000}.WithCost(Price{Input: 3, Output: 15, CacheRead: 0.3})
	if u.Cost.Total != 3+7.5+0.6 || u.Total() != 3_500_000 {
		t.Fatalf("usage = %+v", u)
	}
}
