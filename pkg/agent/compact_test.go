package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/agent/compaction"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
)

// newClockHarness is newHarness with one ticking clock (1 s a reading)
// shared by the agent and the session, so "newer than the compaction"
// never depends on the speed of the machine.
func newClockHarness(t *testing.T, script ...llm.Message) *harness {
	t.Helper()
	h := newHarness(t, script...)
	var ms atomic.Int64
	ms.Store(1_700_000_000_000)
	clock := func() time.Time { return time.UnixMilli(ms.Add(1000)) }
	sf, err := session.Create(filepath.Join(h.dir, "sessions2"), h.dir, session.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	h.agent.Session, h.agent.Now = sf, clock
	h.agent.Compaction = compaction.Defaults()
	h.agent.Compactor = h.agent.BuiltinCompactor()
	return h
}

func withUsage(m llm.Message, ctx int64) llm.Message {
	m.Usage = llm.Usage{Input: ctx}
	return m
}

func long(n int) string { return strings.Repeat("abcd", n) }

func (h *harness) line(typ string) string {
	for _, l := range h.lines {
		if strings.Contains(l, `"type":"`+typ+`"`) {
			return l
		}
	}
	return ""
}

func TestManualCompactPersistsAndReloads(t *testing.T) {
	h := newClockHarness(t,
		assistant(llm.StopEnd, llm.Text(long(3000))),
		assistant(llm.StopEnd, llm.Text(long(3000))),
		assistant(llm.StopEnd, llm.Text("## Current outcome\nsummarised")),
		assistant(llm.StopEnd, llm.Text("after")),
	)
	h.agent.Compaction.KeepRecentTokens = 3050
	ctx := context.Background()
	for _, p := range []string{"first " + long(100), "second " + long(100)} {
		if _, err := h.agent.Prompt(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	res, err := h.agent.Compact(ctx, "keep the tests")
	if err != nil {
		t.Fatal(err)
	}
	req := h.prov.Requests[2]
	if len(req.Tools) != 0 || req.System[0].Text != compaction.SystemPrompt() || len(req.Messages) != 1 ||
		!strings.Contains(req.Messages[0].Content[0].Text, "[User]: first") ||
		!strings.HasSuffix(req.Messages[0].Content[0].Text, "Additional focus requested by the user:\nkeep the tests") {
		t.Fatalf("summary request = %+v", req)
	}
	if res.Summary != "## Current outcome\nsummarised" || res.TokensBefore < 6000 {
		t.Fatalf("result = %+v", res)
	}
	// The kept part starts at the second prompt (a turn start).
	kept, _ := h.agent.Session.Entry(res.FirstKeptEntryID)
	if m := h.agent.Session.EntryMessages([]*session.Entry{kept})[0]; m.Role != "user" || !strings.HasPrefix(m.LLM.Content[0].Text, "second") {
		t.Fatalf("first kept = %s", kept.Raw)
	}
	if got := h.agent.Messages(); got[0].Role != session.RoleCompactionSummary || len(got) != 3 {
		t.Fatalf("context after compaction: %d messages, first %s", len(got), got[0].Role)
	}
	// Reloaded from disk, the next turn sends the summary first.
	g, err := session.Open(h.agent.Session.Path())
	if err != nil {
		t.Fatal(err)
	}
	h.agent.Session, h.agent.loaded = g, false
	if _, err := h.agent.Prompt(ctx, "third"); err != nil {
		t.Fatal(err)
	}
	msgs := h.prov.Requests[3].Messages
	if len(msgs) != 4 || !strings.Contains(msgs[0].Content[0].Text, "<summary>\n## Current outcome\nsummarised\n</summary>") ||
		!strings.HasPrefix(msgs[1].Content[0].Text, "second") {
		t.Fatalf("request after reload: %d messages: %+v", len(msgs), msgs[0])
	}
	// Nothing left to summarise right after a compaction of a short tail.
	h2 := newClockHarness(t, assistant(llm.StopEnd, llm.Text("hi")))
	_, _ = h2.agent.Prompt(ctx, "hello")
	if _, err := h2.agent.Compact(ctx, ""); !errors.Is(err, compaction.ErrNothing) || err.Error() != "Nothing to compact" {
		t.Fatalf("err = %v", err)
	}
}

func TestThresholdCompactionAfterARun(t *testing.T) {
	h := newClockHarness(t,
		withUsage(assistant(llm.StopEnd, llm.Text(long(4000))), 4000),
		withUsage(assistant(llm.StopEnd, llm.Text(long(4000))), 9000), // above the threshold
		assistant(llm.StopEnd, llm.Text("SUMMARY")),
	)
	h.agent.Model.ContextWindow = 10000 // threshold 8500
	// The measured-to-estimated ratio is 9000/8502: the keep budget of 4245 ends at "two".
	h.agent.Compaction.KeepRecentTokens = 4500
	ctx := context.Background()
	if _, err := h.agent.Prompt(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if h.seq(EventAutoCompactionStart) != "" {
		t.Fatal("compacted below the threshold")
	}
	final, err := h.agent.Prompt(ctx, "two "+long(500))
	if err != nil || final.TextContent() != long(4000) {
		t.Fatalf("final = %v, %v", final, err)
	}
	if got := h.line(EventAutoCompactionStart); got != `{"type":"auto_compaction_start","reason":"threshold"}` {
		t.Fatalf("start = %s", got)
	}
	end := h.line(EventAutoCompactionEnd)
	if !strings.Contains(end, `"result":{"summary":"SUMMARY","firstKeptEntryId":"`) || !strings.Contains(end, `"tokensBefore":9000`) ||
		!strings.HasSuffix(end, `"aborted":false,"willRetry":false}`) {
		t.Fatalf("end = %s", end)
	}
	// A final answer (stop) is not auto-continued: three requests.
	if len(h.prov.Requests) != 3 {
		t.Fatalf("%d requests", len(h.prov.Requests))
	}
	// Disabled: no compaction.
	h2 := newClockHarness(t, withUsage(assistant(llm.StopEnd, llm.Text("x")), 9000))
	h2.agent.Model.ContextWindow = 10000
	h2.agent.Compaction.Enabled = false
	_, _ = h2.agent.Prompt(ctx, "one")
	if h2.seq(EventAutoCompactionStart) != "" {
		t.Fatal("compacted while disabled")
	}
}

func TestOverflowRecoveryWithBuiltinCompactor(t *testing.T) {
	overflow := assistant(llm.StopError)
	overflow.ErrorMessage = "prompt is too long: 210000 tokens > 200000 maximum"
	h := newClockHarness(t,
		assistant(llm.StopToolUse, toolCall("t1", "bash", `{"command":"printf '%0.s-' $(seq 1 8000)"}`)),
		assistant(llm.StopToolUse, toolCall("t2", "bash", `{"command":"echo two"}`)),
		overflow,
		assistant(llm.StopEnd, llm.Text("SUMMARY")),
		assistant(llm.StopEnd, llm.Text("done")),
	)
	h.agent.Compaction.KeepRecentTokens = 100
	final, err := h.agent.Prompt(context.Background(), "go")
	if err != nil || final.TextContent() != "done" {
		t.Fatalf("final = %+v, %v", final, err)
	}
	if got := h.seq(EventAgentStart, EventAgentEnd, EventAutoCompactionStart, EventAutoCompactionEnd, EventAutoRetryStart); got !=
		"agent_start auto_compaction_start auto_compaction_end agent_end agent_start agent_end" {
		t.Fatalf("events = %s", got)
	}
	if got := h.line(EventAutoCompactionStart); got != `{"type":"auto_compaction_start","reason":"overflow"}` {
		t.Fatalf("start = %s", got)
	}
	if !strings.HasSuffix(h.line(EventAutoCompactionEnd), `"aborted":false,"willRetry":true}`) {
		t.Fatalf("end = %s", h.line(EventAutoCompactionEnd))
	}
	// The cut splits the only turn: the summary is the empty-history summary
	// plus the turn prefix. The continued request starts with it and keeps
	// the last tool exchange; the failing turn is not in it.
	if n := len(h.prov.Requests); n != 5 {
		t.Fatalf("%d requests", n)
	}
	msgs := h.prov.Requests[4].Messages
	if !strings.Contains(msgs[0].Content[0].Text, "<summary>\nNo prior history.\n\n---\n\n**Turn Context (split turn):**\n\nSUMMARY") ||
		msgs[len(msgs)-1].Content[0].Text != "two\n" {
		t.Fatalf("continued request: %+v", msgs[0])
	}
	for _, m := range msgs {
		if m.StopReason == llm.StopError {
			t.Fatal("the overflow turn was sent again")
		}
	}
	// The overflow message is still in the file.
	if g, _ := session.Open(h.agent.Session.Path()); g == nil || !strings.Contains(string(g.Entries()[len(g.Entries())-3].Raw), "prompt is too long") {
		t.Fatal("overflow entry not persisted before the compaction")
	}
}

func TestOverflowWithCompactionOffAndFailingSummary(t *testing.T) {
	overflow := assistant(llm.StopError)
	overflow.ErrorMessage = "context_length_exceeded"
	h := newClockHarness(t, overflow)
	h.agent.Compaction.Strategy = "off"
	final, _ := h.agent.Prompt(context.Background(), "go")
	if final.StopReason != llm.StopError || !strings.Contains(h.line(EventAutoCompactionEnd), `"errorMessage":"Context overflow recovery failed: compaction is off"`) {
		t.Fatalf("final %+v, end %s", final, h.line(EventAutoCompactionEnd))
	}
	// The summariser is tried 3 times on transient errors, then the
	// recovery fails with its message.
	busy := assistant(llm.StopError)
	busy.ErrorMessage = "overloaded"
	h = newClockHarness(t, assistant(llm.StopEnd, llm.Text(long(100))), overflow, busy, busy, busy)
	h.agent.Compaction.KeepRecentTokens = 10
	_, _ = h.agent.Prompt(context.Background(), "one")
	final, _ = h.agent.Prompt(context.Background(), "two")
	if final.StopReason != llm.StopError || len(h.prov.Requests) != 5 ||
		!strings.Contains(h.line(EventAutoCompactionEnd), `"errorMessage":"Context overflow recovery failed: overloaded"`) {
		t.Fatalf("final %+v after %d requests, end %s", final, len(h.prov.Requests), h.line(EventAutoCompactionEnd))
	}
}

func TestNavigateTreeWithBranchSummary(t *testing.T) {
	h := newClockHarness(t,
		assistant(llm.StopEnd, llm.Text("hello")),
		assistant(llm.StopToolUse, toolCall("t1", "write", `{"path":"a.txt","content":"x"}`)),
		assistant(llm.StopEnd, llm.Text("wrote it")),
		assistant(llm.StopEnd, llm.Text("## Goal\nwrite a.txt")),
	)
	ctx := context.Background()
	_, _ = h.agent.Prompt(ctx, "hi")
	_, _ = h.agent.Prompt(ctx, "write a file")
	path := h.agent.Session.ActivePath()
	var second *session.Entry
	for _, e := range path {
		if strings.Contains(string(e.Raw), `"write a file"`) {
			second = e
		}
	}
	leaf := h.agent.Session.Leaf()
	if nav, err := h.agent.NavigateTree(ctx, leaf, NavigateOptions{}); err != nil || !nav.Noop {
		t.Fatalf("noop = %+v %v", nav, err)
	}
	// branchSummary.enabled is off: a plain move, no entry.
	h.agent.Compaction.BranchSummaryEnabled = true
	nav, err := h.agent.NavigateTree(ctx, second.ID, NavigateOptions{Summarize: true})
	if err != nil {
		t.Fatal(err)
	}
	if nav.Leaf != second.ParentID || nav.Prefill != "write a file" || nav.SummaryEntryID == "" {
		t.Fatalf("nav = %+v", nav)
	}
	e, _ := h.agent.Session.Entry(nav.SummaryEntryID)
	var bs session.BranchSummary
	if err := e.Decode(&bs); err != nil || e.ParentID != second.ParentID || bs.FromID != second.ParentID ||
		!strings.HasPrefix(bs.Summary, compaction.BranchPreamble+"\n\n## Goal\nwrite a.txt\n\n<files>\na.txt (Write)") ||
		string(bs.Details) != `{"readFiles":[],"modifiedFiles":["a.txt"]}` {
		t.Fatalf("branch_summary = %s", e.Raw)
	}
	msgs := h.agent.Messages()
	if last := msgs[len(msgs)-1]; last.Role != session.RoleBranchSummary || len(msgs) != 3 {
		t.Fatalf("context = %d messages, last %s", len(msgs), last.Role)
	}
	// A failing summary leaves the tree as it was.
	h.prov.Err = errors.New("down")
	before := h.agent.Session.Leaf()
	if _, err := h.agent.NavigateTree(ctx, path[0].ID, NavigateOptions{Summarize: true}); err == nil || h.agent.Session.Leaf() != before {
		t.Fatalf("err %v, leaf moved", err)
	}
	// Without a summary: the leaf moves to an assistant target itself,
	// and a first user message resets the leaf.
	nav, err = h.agent.NavigateTree(ctx, path[1].ID, NavigateOptions{})
	if err != nil || nav.Leaf != path[1].ID || nav.SummaryEntryID != "" || nav.Prefill != "" {
		t.Fatalf("plain move = %+v %v", nav, err)
	}
	nav, err = h.agent.NavigateTree(ctx, path[0].ID, NavigateOptions{})
	if err != nil || nav.Leaf != "" || h.agent.Session.Leaf() != "" || nav.Prefill != "hi" || len(h.agent.Messages()) != 0 {
		t.Fatalf("plain move = %+v %v", nav, err)
	}
	if _, err := h.agent.NavigateTree(ctx, "nope", NavigateOptions{}); err == nil {
		t.Fatal("unknown entry accepted")
	}
}

func TestThresholdMaintenancePrunesOldToolOutputs(t *testing.T) {
	var script []llm.Message
	for i := range 8 {
		script = append(script, assistant(llm.StopToolUse, toolCall(fmt.Sprintf("t%d", i), "bash", `{"command":"head -c 40000 /dev/zero | tr '\\0' y"}`)))
	}
	script = append(script, withUsage(assistant(llm.StopEnd, llm.Text("done")), 90000))
	h := newClockHarness(t, script...)
	h.agent.Model.ContextWindow = 1_000_000
	if _, err := h.agent.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	// 8 × 10,000 tokens: the newest four are protected, the older four
	// (40,000 ≥ 20,000) are pruned — in the file and in memory.
	data, _ := os.ReadFile(h.agent.Session.Path())
	if n := strings.Count(string(data), "[Output truncated - 10000 tokens]"); n != 4 {
		t.Fatalf("%d pruned results in the file", n)
	}
	pruned := 0
	for _, m := range h.agent.Messages() {
		if m.LLM != nil && m.LLM.Role == llm.RoleToolResult && m.LLM.Content[0].Text == "[Output truncated - 10000 tokens]" {
			pruned++
		}
	}
	if pruned != 4 || h.seq(EventAutoCompactionStart) != "" {
		t.Fatalf("%d pruned in memory; events %s", pruned, h.seq(EventAutoCompactionStart))
	}
	// The saving counts against the measured usage.
	if got := h.agent.pruneSavings(); got != 40000 {
		t.Fatalf("savings = %d", got)
	}
}

func TestNavigateTreeResyncsTodos(t *testing.T) {
	h := newClockHarness(t)
	h.agent.Todos = &tools.TodoList{}
	base, err := h.agent.Session.AppendMessage(session.NewMessage(&llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("plan")}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	details := json.RawMessage(`{"phases":[{"name":"P","tasks":[{"content":"write tests","status":"pending"}]}],"storage":"session"}`)
	_, _ = h.agent.Session.AppendMessage(session.NewMessage(&llm.Message{Role: llm.RoleToolResult, ToolCallID: "t", ToolName: "todo",
		Content: []llm.Content{llm.Text("ok")}}, details))
	h.agent.Todos.Set(RestoreTodos(h.agent.Session))
	if len(h.agent.Todos.Phases()) != 1 {
		t.Fatal("setup: no todos")
	}
	if _, err := h.agent.NavigateTree(context.Background(), base.ID, NavigateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := h.agent.Todos.Phases(); len(p) != 0 {
		t.Fatalf("todos after moving before the todo call: %+v", p)
	}
}
