package demo

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

func run(t *testing.T, req *llm.Request) (*llm.Message, int) {
	t.Helper()
	m := llm.DemoModel()
	st, err := (&Provider{}).Stream(context.Background(), req, &m, llm.Credential{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var final *llm.Message
	deltas := 0
	for ev := range st.Events() {
		if ev.Type == llm.EventTextDelta {
			deltas++
		}
		if ev.Type.IsTerminal() {
			if ev.Type != llm.EventDone {
				t.Fatalf("terminal %v: %v", ev.Type, ev.Err)
			}
			final = ev.Partial
		}
	}
	if final == nil {
		t.Fatal("no done event")
	}
	return final, deltas
}

func user(s string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(s)}}
}

func TestDemoEchoesThePromptInSeveralDeltas(t *testing.T) {
	msg, deltas := run(t, &llm.Request{Messages: []llm.Message{user("hello there")}})
	if got, want := msg.TextContent(), `demo: you said "hello there"`; got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
	if deltas < 3 {
		t.Fatalf("%d text deltas, want several", deltas)
	}
	if msg.StopReason != llm.StopEnd || msg.Usage.Input < 1 || msg.Usage.Output < 1 || msg.Provider != llm.ProviderDemo {
		t.Fatalf("message %+v", msg)
	}
}

func TestDemoCallsTheFirstToolWhenAsked(t *testing.T) {
	tools := []llm.Tool{{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}, {Name: "other"}}
	msg, _ := run(t, &llm.Request{Messages: []llm.Message{user("please use a Tool")}, Tools: tools})
	if msg.StopReason != llm.StopToolUse || !msg.HasToolCall() {
		t.Fatalf("no tool call: %+v", msg)
	}
	c := msg.Content[len(msg.Content)-1]
	if c.Name != "get_time" || string(c.Arguments) != "{}" || c.ID == "" {
		t.Fatalf("call %+v", c)
	}

	// Without tools, or without the word, it answers in text.
	if msg, _ := run(t, &llm.Request{Messages: []llm.Message{user("hello")}, Tools: tools}); msg.HasToolCall() {
		t.Fatal("called a tool unasked")
	}
	if msg, _ := run(t, &llm.Request{Messages: []llm.Message{user("use a tool")}}); msg.HasToolCall() {
		t.Fatal("called a tool none was offered")
	}

	// After the result it quotes it.
	result := llm.Message{Role: llm.RoleToolResult, ToolCallID: c.ID, ToolName: "get_time", Content: []llm.Content{llm.Text("12:00")}}
	msg, _ = run(t, &llm.Request{Messages: []llm.Message{user("please use a tool"), *msg, result}, Tools: tools})
	if got, want := msg.TextContent(), `demo: the tool get_time returned "12:00"`; got != want || msg.HasToolCall() {
		t.Fatalf("text %q, want %q", got, want)
	}
}

func TestDemoIsDeterministic(t *testing.T) {
	a, _ := run(t, &llm.Request{Messages: []llm.Message{user("same")}})
	b, _ := run(t, &llm.Request{Messages: []llm.Message{user("same")}})
	if a.ResponseID != b.ResponseID || a.TextContent() != b.TextContent() || a.Usage != b.Usage {
		t.Fatalf("%+v\n%+v", a, b)
	}
}
