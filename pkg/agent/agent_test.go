package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

var testModel = llm.Model{ID: "m1", Provider: "fake", API: llm.APIAnthropic, MaxTokens: 4096, ContextWindow: 100000,
	Input: []llm.Modality{llm.ModalityText}}

func assistant(stop llm.StopReason, blocks ...llm.Content) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, API: testModel.API, Provider: "fake", Model: "m1", Content: blocks, StopReason: stop}
}

func toolCall(id, name, args string) llm.Content {
	return llm.ToolCall(id, name, json.RawMessage(args))
}

type harness struct {
	agent  *Agent
	prov   *llmtest.Provider
	dir    string
	events []string
	lines  []string
}

func newHarness(t *testing.T, script ...llm.Message) *harness {
	t.Helper()
	dir := t.TempDir()
	sf, err := session.Create(filepath.Join(dir, "sessions"), dir, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{prov: &llmtest.Provider{Messages: script, Chunk: 3}, dir: dir}
	env := &tools.Env{Cwd: dir, Environ: []string{"PATH=" + os.Getenv("PATH")}, Artifacts: &tools.Artifacts{Dir: sf.ArtifactsDir()}}
	h.agent = &Agent{
		Session: sf, Provider: h.prov, Model: testModel,
		Tools: tools.Builtin(env, tools.BashOptions{NoLogin: true}, &tools.TodoList{}, nil),
		Retry: DefaultRetry(),
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		Emit: func(e *Event) {
			h.events = append(h.events, e.Type)
			h.lines = append(h.lines, string(e.AppendJSON(nil, true)))
		},
	}
	return h
}

func (h *harness) seq(filter ...string) string {
	var out []string
	for _, e := range h.events {
		for _, f := range filter {
			if e == f {
				out = append(out, e)
			}
		}
	}
	return strings.Join(out, " ")
}

func TestToolLoopWritesRunsAndPersists(t *testing.T) {
	h := newHarness(t,
		assistant(llm.StopToolUse, llm.Text("writing"), toolCall("t1", "write", `{"path":"hello.sh","content":"#!/bin/sh\necho hi\n"}`)),
		assistant(llm.StopToolUse, toolCall("t2", "bash", `{"command":"./hello.sh"}`), toolCall("t3", "read", `{}`)),
		assistant(llm.StopEnd, llm.Text("done: hi")),
	)
	final, err := h.agent.Prompt(context.Background(), "make a script")
	if err != nil {
		t.Fatal(err)
	}
	if final.StopReason != llm.StopEnd || final.TextContent() != "done: hi" {
		t.Fatalf("final = %+v", final)
	}
	if got := h.seq(EventAgentStart, EventTurnStart, EventTurnEnd, EventAgentEnd, EventToolExecutionEnd); got !=
		"agent_start turn_start tool_execution_end turn_end turn_start tool_execution_end tool_execution_end turn_end turn_start turn_end agent_end" {
		t.Fatalf("events = %s", got)
	}
	// The third request carries both results in call order; the invalid read is a validation error.
	reqs := h.prov.Requests
	if len(reqs) != 3 {
		t.Fatalf("requests = %d", len(reqs))
	}
	last := reqs[2].Messages
	n := len(last)
	bash, read := last[n-2], last[n-1]
	if bash.ToolCallID != "t2" || bash.IsError || bash.Content[0].Text != "hi\n" {
		t.Fatalf("bash result = %+v", bash)
	}
	if read.ToolCallID != "t3" || !read.IsError || !strings.Contains(read.Content[0].Text, `Validation failed for tool "read"`) {
		t.Fatalf("read result = %+v", read)
	}
	if len(reqs[0].Tools) != 8 || reqs[0].SessionID != h.agent.Session.Header().ID || reqs[0].MaxTokens != 4096 {
		t.Fatalf("request = %+v", reqs[0])
	}
	// The session on disk replays to the same context.
	g, err := session.Open(h.agent.Session.Path())
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range g.BuildContext().Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,toolResult,assistant,toolResult,toolResult,assistant" {
		t.Fatalf("persisted roles = %s", got)
	}
	data, _ := os.ReadFile(h.agent.Session.Path())
	if !strings.Contains(string(data), `"details":{"exitCode":0}`) {
		t.Fatalf("tool details not persisted:\n%s", data)
	}
}

func TestTransientErrorIsRetried(t *testing.T) {
	failed := assistant(llm.StopError)
	failed.ErrorMessage = "Overloaded, try later"
	h := newHarness(t, failed, assistant(llm.StopEnd, llm.Text("ok")))
	final, err := h.agent.Prompt(context.Background(), "hi")
	if err != nil || final.TextContent() != "ok" {
		t.Fatalf("final = %+v, %v", final, err)
	}
	if got := h.seq(EventAutoRetryStart, EventAutoRetryEnd); got != "auto_retry_start auto_retry_end" {
		t.Fatalf("retry events = %s", got)
	}
	if r := h.prov.Requests[1].Messages; len(r) != 1 || r[0].Role != llm.RoleUser {
		t.Fatalf("retried request still carries the failed turn: %+v", r)
	}
	var start, end string
	for _, l := range h.lines {
		if strings.Contains(l, "auto_retry_start") {
			start = l
		}
		if strings.Contains(l, "auto_retry_end") {
			end = l
		}
	}
	if !strings.Contains(start, `"attempt":1,"maxAttempts":10,"delayMs":`) || end != `{"type":"auto_retry_end","success":true,"attempt":1}` {
		t.Fatalf("retry events:\n%s\n%s", start, end)
	}
}

func TestPermanentErrorIsNotRetried(t *testing.T) {
	failed := assistant(llm.StopError)
	failed.ErrorMessage = "invalid x-api-key"
	h := newHarness(t, failed)
	final, _ := h.agent.Prompt(context.Background(), "hi")
	if final.StopReason != llm.StopError || final.ErrorMessage != "invalid x-api-key" || len(h.prov.Requests) != 1 {
		t.Fatalf("final = %+v after %d requests", final, len(h.prov.Requests))
	}
}

func TestRetriesRunOut(t *testing.T) {
	var script []llm.Message
	for range 4 {
		m := assistant(llm.StopError)
		m.ErrorMessage = "429 rate limit"
		script = append(script, m)
	}
	h := newHarness(t, script...)
	h.agent.Retry.MaxRetries = 3
	final, _ := h.agent.Prompt(context.Background(), "hi")
	if final.StopReason != llm.StopError || len(h.prov.Requests) != 4 {
		t.Fatalf("final %+v after %d requests", final, len(h.prov.Requests))
	}
	// The retry sequence closes before the run's agent_end, which ends the prompt.
	if end := h.lines[len(h.lines)-2]; end != `{"type":"auto_retry_end","success":false,"attempt":3,"finalError":"429 rate limit"}` {
		t.Fatalf("retry end = %s", end)
	}
	if last := h.lines[len(h.lines)-1]; !strings.HasSuffix(last, `,"isTerminal":true,"yielded":true}`) {
		t.Fatalf("last event = %s", last)
	}
}

func TestClassifiers(t *testing.T) {
	tests := []struct {
		msg       string
		status    int
		transient bool
		overflow  bool
	}{
		{"Overloaded", 0, true, false},
		{"boom", 529, true, false},
		{"read ECONNRESET", 0, true, false},
		{"prompt is too long: 210000 tokens", 400, false, true},
		{"too large", 413, false, true},
		{"invalid api key", 401, false, false},
	}
	for _, tt := range tests {
		m := &llm.Message{StopReason: llm.StopError, ErrorMessage: tt.msg, ErrorStatus: tt.status}
		if IsTransient(m) != tt.transient || IsOverflow(m) != tt.overflow {
			t.Errorf("%q/%d: transient %v overflow %v", tt.msg, tt.status, IsTransient(m), IsOverflow(m))
		}
	}
	r := DefaultRetry()
	for n, want := range map[int]time.Duration{1: 500 * time.Millisecond, 3: 2 * time.Second, 6: 8 * time.Second, 10: 8 * time.Second} {
		d, ok := r.delay(n, 0)
		if !ok || d > want || d < want*3/4 {
			t.Errorf("delay(%d) = %v, want within [0.75, 1] × %v", n, d, want)
		}
	}
	if d, ok := r.delay(1, 7*time.Second); !ok || d != 7*time.Second {
		t.Errorf("hint not honoured: %v", d)
	}
	if _, ok := r.delay(1, time.Hour); ok {
		t.Error("an hour-long retry-after must not be retried")
	}
}

func TestAbortDuringToolStopsTheRun(t *testing.T) {
	h := newHarness(t,
		assistant(llm.StopToolUse, toolCall("t1", "bash", `{"command":"sleep 30"}`), toolCall("t2", "bash", `{"command":"echo never"}`)),
		assistant(llm.StopEnd, llm.Text("unreachable")),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.agent.Subscribe(func(e *Event) {
		// An update comes while the command runs (before, the call would
		// not start at all: "Request was aborted").
		if e.Type == EventToolExecutionUpdate && e.ToolCallID == "t1" {
			cancel()
		}
	})
	final, err := h.agent.Prompt(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	if final.StopReason != llm.StopAborted || len(h.prov.Requests) != 1 {
		t.Fatalf("final = %+v, %d requests", final, len(h.prov.Requests))
	}
	g, err := session.Open(h.agent.Session.Path())
	if err != nil {
		t.Fatal(err)
	}
	msgs := g.BuildContext().Messages
	last := msgs[len(msgs)-1].LLM
	if last.Role != llm.RoleToolResult || last.ToolCallID != "t1" || last.Content[0].Text != "Command aborted" {
		t.Fatalf("last persisted = %+v", last)
	}
}

func TestJSONShapes(t *testing.T) {
	h := newHarness(t, assistant(llm.StopEnd, llm.Text("hello")))
	if _, err := h.agent.Prompt(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	var updates []string
	for _, l := range h.lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("bad JSON line %s", l)
		}
		if v["type"] == "message_update" {
			if _, has := v["message"]; has {
				t.Fatalf("reduced message_update carries the message: %s", l)
			}
			updates = append(updates, l)
		}
	}
	want := []string{
		`{"type":"message_update","assistantMessageEvent":{"type":"start"}}`,
		`{"type":"message_update","assistantMessageEvent":{"type":"text_start","contentIndex":0}}`,
		`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"hel"}}`,
		`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"lo"}}`,
		`{"type":"message_update","assistantMessageEvent":{"type":"text_end","contentIndex":0,"content":"hello"}}`,
		`{"type":"message_update","assistantMessageEvent":{"type":"done","reason":"stop"}}`,
	}
	if strings.Join(updates, "\n") != strings.Join(want, "\n") {
		t.Fatalf("updates:\n%s", strings.Join(updates, "\n"))
	}
}

func TestRestoreTodosFromTheLatestSource(t *testing.T) {
	h := newHarness(t,
		assistant(llm.StopToolUse, toolCall("t1", "todo", `{"ops":[{"op":"init","list":[{"phase":"P","items":["a","b","c"]}]},{"op":"done","task":"a"},{"op":"drop","task":"c"}]}`)),
		assistant(llm.StopToolUse, toolCall("t2", "todo", `{"ops":[{"op":"start","task":"ghost"}]}`)),
		assistant(llm.StopEnd, llm.Text("ok")),
	)
	if _, err := h.agent.Prompt(context.Background(), "plan"); err != nil {
		t.Fatal(err)
	}
	g, err := session.Open(h.agent.Session.Path())
	if err != nil {
		t.Fatal(err)
	}
	got := RestoreTodos(g)
	if len(got) != 1 || len(got[0].Tasks) != 1 || got[0].Tasks[0] != (tools.TodoItem{Content: "b", Status: tools.TodoInProgress}) {
		t.Fatalf("restored = %+v (the failed call must not count; done and dropped tasks are stripped)", got)
	}
	if _, err := g.Append(session.TypeCustom, map[string]any{"customType": "user_todo_edit",
		"data": map[string]any{"phases": []tools.TodoPhase{{Name: "Q", Tasks: []tools.TodoItem{{Content: "x", Status: "pending"}}}}}}); err != nil {
		t.Fatal(err)
	}
	if got := RestoreTodos(g); len(got) != 1 || got[0].Name != "Q" {
		t.Fatalf("user edit not the latest source: %+v", got)
	}
}

func TestFailedTodoQueuesAHiddenReminder(t *testing.T) {
	h := newHarness(t,
		assistant(llm.StopToolUse, toolCall("t1", "todo", `{"ops":[{"op":"start","task":"ghost"}]}`)),
		assistant(llm.StopEnd, llm.Text("oops")),
		assistant(llm.StopEnd, llm.Text("ok")),
	)
	for _, p := range []string{"one", "two"} {
		if _, err := h.agent.Prompt(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	msgs := h.prov.Requests[2].Messages
	reminder := msgs[len(msgs)-2]
	if reminder.Role != llm.RoleUser || reminder.TextContent() != todoReminder || msgs[len(msgs)-1].TextContent() != "two" {
		t.Fatalf("request after the failed todo = %+v", msgs)
	}
	g, _ := session.Open(h.agent.Session.Path())
	var found bool
	for _, e := range g.Entries() {
		if e.Type == session.TypeCustomMessage && strings.Contains(string(e.Raw), `"customType":"todo-error-reminder"`) &&
			strings.Contains(string(e.Raw), `"display":false`) {
			found = true
		}
	}
	if !found {
		t.Fatal("no hidden todo-error-reminder entry")
	}
}

func TestCredentialsAskedEveryTurn(t *testing.T) {
	h := newHarness(t,
		assistant(llm.StopToolUse, toolCall("t1", "read", `{"path":"nope"}`)),
		assistant(llm.StopEnd, llm.Text("ok")),
	)
	calls := 0
	h.agent.Credentials = func(context.Context) (llm.Credential, error) {
		calls++
		return llm.APIKey(fmt.Sprintf("k%d", calls)), nil
	}
	if _, err := h.agent.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("credential resolutions = %d, want one per turn", calls)
	}
	h2 := newHarness(t)
	h2.agent.Retry = Retry{}
	h2.agent.Credentials = func(context.Context) (llm.Credential, error) {
		return llm.Credential{}, errors.New("auth broker: down")
	}
	final, _ := h2.agent.Prompt(context.Background(), "go")
	if final.StopReason != llm.StopError || final.ErrorMessage != "auth broker: down" || len(h2.prov.Requests) != 0 {
		t.Fatalf("final = %+v", final)
	}
}

func TestRetryEndsWhenTheErrorStopsBeingTransient(t *testing.T) {
	first := assistant(llm.StopError)
	first.ErrorMessage = "503 service unavailable"
	second := assistant(llm.StopError)
	second.ErrorMessage = "invalid request: bad tool schema"
	h := newHarness(t, first, second)
	final, _ := h.agent.Prompt(context.Background(), "hi")
	if final.ErrorMessage != "invalid request: bad tool schema" || len(h.prov.Requests) != 2 {
		t.Fatalf("final = %+v after %d requests", final, len(h.prov.Requests))
	}
	// The retry sequence closes before the run's agent_end, which ends the prompt.
	if end := h.lines[len(h.lines)-2]; end != `{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"invalid request: bad tool schema"}` {
		t.Fatalf("retry end = %s", end)
	}
	if last := h.lines[len(h.lines)-1]; !strings.HasSuffix(last, `,"isTerminal":true,"yielded":true}`) {
		t.Fatalf("last event = %s", last)
	}
}

// limitedProvider answers 429 usage_limit_reached to the credential
// "limited" and a text turn to any other.
type limitedProvider struct{ creds []string }

func (p *limitedProvider) Stream(_ context.Context, _ *llm.Request, m *llm.Model, c llm.Credential) (*llm.Stream, error) {
	p.creds = append(p.creds, c.Secret)
	if c.Secret == "limited" {
		return nil, &llm.UpstreamError{Status: 429, Message: "usage_limit_reached: The usage limit has been reached", RetryAfter: 90 * time.Second}
	}
	return (&replayed{turns: [][]llm.Event{record(assistant(llm.StopEnd, llm.Text("ok")))}}).Stream(context.Background(), nil, m, c)
}

// TestUsageLimitSwitchesAccount: a 429 that reads as a usage limit is
// reported to OnUsageLimit with the retry hint; when another account is
// free the turn is retried at once on the credential picked next (no
// back-off wait), else the ordinary retry policy retries it.
func TestUsageLimitSwitchesAccount(t *testing.T) {
	for _, free := range []bool{true, false} {
		h := newHarness(t)
		p := &limitedProvider{}
		blocked := false
		var hint time.Duration
		h.agent.Provider = p
		h.agent.Credentials = func(context.Context) (llm.Credential, error) {
			if blocked && free {
				return llm.APIKey("other"), nil
			}
			if blocked {
				return llm.APIKey("after-wait"), nil
			}
			return llm.APIKey("limited"), nil
		}
		h.agent.OnUsageLimit = func(_ context.Context, ul UsageLimit) bool {
			if ul.Credential.Secret != "limited" {
				t.Errorf("reported credential %q, want the one that failed", ul.Credential.Secret)
			}
			blocked, hint = true, ul.RetryAfter
			return free
		}
		final, err := h.agent.Prompt(context.Background(), "hi")
		if err != nil || final.TextContent() != "ok" || !blocked || hint != 90*time.Second {
			t.Fatalf("free=%v: final %+v, %v, blocked %v hint %v", free, final, err, blocked, hint)
		}
		retried := h.seq(EventAutoRetryStart, EventAutoRetryEnd) != ""
		if retried == free {
			t.Fatalf("free=%v: retry events %q", free, h.seq(EventAutoRetryStart, EventAutoRetryEnd))
		}
		if want := map[bool]string{true: "limited,other", false: "limited,after-wait"}[free]; strings.Join(p.creds, ",") != want {
			t.Fatalf("free=%v: credentials %v, want %s", free, p.creds, want)
		}
	}
	// A plain rate limit is not a usage limit.
	plain := assistant(llm.StopError)
	plain.ErrorStatus, plain.ErrorMessage = 429, "rate limit exceeded, slow down"
	if IsUsageLimit(&plain) {
		t.Fatal("a plain 429 read as a usage limit")
	}
}
