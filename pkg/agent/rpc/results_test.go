package rpc

import (
	"encoding/json"
	"testing"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// TestRPCInProcessQueuedPromptResult: a prompt queued with
// streamingBehavior into a running run gets its prompt_result when that
// run ends, after its own response; steer and follow_up get none.
func TestRPCInProcessQueuedPromptResult(t *testing.T) {
	prov := &llmtest.Provider{Chunk: 2, Messages: []llm.Message{
		{Role: llm.RoleAssistant, StopReason: llm.StopToolUse, Content: []llm.Content{
			llm.ToolCall("t1", "bash", json.RawMessage(`{"command":"sleep 30"}`))}},
		{Role: llm.RoleAssistant, StopReason: llm.StopEnd, Content: []llm.Content{llm.Text("one")}},
		{Role: llm.RoleAssistant, StopReason: llm.StopEnd, Content: []llm.Content{llm.Text("two")}},
	}}
	p := startRPCInProcess(t, prov)
	p.next("ready")
	p.send(`{"id":"1","type":"prompt","message":"go"}`)
	p.next("1")
	p.next("tool_execution_start")
	p.send(`{"id":"2","type":"prompt","message":"steered","streamingBehavior":"steer"}`)
	p.next("2")
	p.send(`{"id":"3","type":"follow_up","message":"afterwards"}`)
	p.next("3")
	got := map[string]string{}
	for len(got) < 2 {
		r := p.next("prompt_result")
		got[r["id"].(string)] = r["status"].(string)
	}
	if got["1"] != "completed" || got["2"] != "completed" {
		t.Errorf("prompt results = %v", got)
	}
	p.next("session_settled")
	p.send(`{"id":"4","type":"get_state"}`)
	p.next("4")
	if p.skipped["prompt_result"] != 0 {
		t.Errorf("%d more prompt_result frames", p.skipped["prompt_result"])
	}
	p.finish()
}

// TestRPCInProcessCommandErrors: open_session needs a session on disk,
// set_event_filter wants null or a list of names.
func TestRPCInProcessCommandErrors(t *testing.T) {
	p := startRPCInProcessWith(t, &llmtest.Provider{}, func(a *agent.Agent) {
		sf, err := session.Create("", t.TempDir(), session.Options{})
		if err != nil {
			t.Fatal(err)
		}
		a.Session = sf
	})
	p.next("ready")
	for _, c := range []struct{ cmd, want string }{
		{`{"id":"1","type":"open_session","sessionDir":"x"}`, "open_session requires session persistence (omit --no-session)"},
		{`{"id":"1","type":"set_event_filter","events":"agent_end"}`, "events must be null or an array of non-empty event type strings"},
		{`{"id":"1","type":"set_event_filter","events":["agent_end",""]}`, "events must be null or an array of non-empty event type strings"},
		{`{"id":"1","type":"set_event_filter","events":[1]}`, "events must be null or an array of non-empty event type strings"},
	} {
		p.send(c.cmd)
		if r := p.next("1"); r["success"] != false || r["error"] != c.want {
			t.Errorf("%s: %v", c.cmd, r)
		}
	}
	p.finish()
}

// TestTreeCutsCycles: a damaged file whose parent links loop still gives
// a finite forest holding every entry once; children are oldest first and
// carry the label in effect.
func TestTreeCutsCycles(t *testing.T) {
	entry := func(id, parent, ts string) *session.Entry {
		raw, _ := json.Marshal(map[string]string{"type": "custom", "id": id, "parentId": parent, "timestamp": ts})
		return &session.Entry{Type: "custom", ID: id, ParentID: parent, Timestamp: ts, Raw: raw}
	}
	label := &session.Entry{Type: session.TypeLabel, ID: "l", ParentID: "r", Timestamp: "2026-01-01T00:00:09.000Z",
		Raw: json.RawMessage(`{"type":"label","id":"l","parentId":"r","targetId":"b","label":"keep"}`)}
	entries := []*session.Entry{
		entry("r", "", "2026-01-01T00:00:00.000Z"),
		entry("b", "r", "2026-01-01T00:00:02.000Z"),
		entry("a", "r", "2026-01-01T00:00:01.000Z"),
		entry("x", "y", "2026-01-01T00:00:03.000Z"), // x and y loop
		entry("y", "x", "2026-01-01T00:00:04.000Z"),
		label,
	}
	roots := tree(entries)
	b, err := json.Marshal(roots)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	var walk func([]*treeNode)
	walk = func(ns []*treeNode) {
		for _, n := range ns {
			count++
			walk(n.Children)
		}
	}
	walk(roots)
	if count != len(entries) {
		t.Fatalf("%d nodes for %d entries: %s", count, len(entries), b)
	}
	r := roots[0]
	if r.id != "r" || len(r.Children) != 3 || r.Children[0].id != "a" || r.Children[1].id != "b" || r.Children[1].Label != "keep" {
		t.Errorf("tree: %s", b)
	}
}

func TestWithMember(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"message_end"}`: `{"type":"message_end","messageId":"msg-1"}`,
		`{}`:                     `{"messageId":"msg-1"}`,
	} {
		if got := string(withMember([]byte(in), "messageId", "msg-1")); got != want {
			t.Errorf("withMember(%s) = %s", in, got)
		}
	}
	// The value is a JSON string, whatever it holds.
	got := withMember([]byte(`{}`), "messageId", "a\x00\u2028<b>")
	var m map[string]string
	if err := json.Unmarshal(got, &m); err != nil || m["messageId"] != "a\x00\u2028<b>" {
		t.Errorf("withMember = %s (%v)", got, err)
	}
}

// TestRPCInProcessEOFAnswersTheRun: closing stdin during a run aborts it,
// and its prompt_result (aborted) is written before stdout ends.
func TestRPCInProcessEOFAnswersTheRun(t *testing.T) {
	prov := &llmtest.Provider{Chunk: 2, Messages: []llm.Message{
		{Role: llm.RoleAssistant, StopReason: llm.StopToolUse, Content: []llm.Content{
			llm.ToolCall("t1", "bash", json.RawMessage(`{"command":"sleep 30"}`))}},
	}}
	p := startRPCInProcess(t, prov)
	p.next("ready")
	p.send(`{"id":"1","type":"prompt","message":"go"}`)
	p.next("tool_execution_start")
	p.in.Close()
	var results []string
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			break
		}
		var f map[string]any
		if json.Unmarshal(line, &f) == nil && f["type"] == "prompt_result" {
			results = append(results, f["id"].(string)+":"+f["status"].(string))
		}
	}
	if err := <-p.done; err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0] != "1:aborted" {
		t.Errorf("prompt results at EOF: %v", results)
	}
}
