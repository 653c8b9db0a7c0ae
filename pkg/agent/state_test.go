package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/llm"
)

// userTexts returns the texts of the user messages of request i.
func userTexts(h *harness, i int) []string {
	var out []string
	for _, m := range h.prov.Requests[i].Messages {
		if m.Role == llm.RoleUser {
			out = append(out, m.TextContent())
		}
	}
	return out
}

func TestSteerInterruptsTheToolBatch(t *testing.T) {
	h := newHarness(t,
		assistant(llm.StopToolUse, toolCall("t1", "bash", `{"command":"sleep 30"}`), toolCall("t2", "bash", `{"command":"echo never > never.txt"}`)),
		assistant(llm.StopEnd, llm.Text("steered")),
	)
	var once sync.Once
	h.agent.Subscribe(func(e *Event) {
		// Steer while the command runs (an update comes from the running tool).
		if e.Type == EventToolExecutionUpdate && e.ToolCallID == "t1" {
			once.Do(func() { go h.agent.Steer([]llm.Content{llm.Text("stop that")}) })
		}
	})
	final, err := h.agent.Prompt(context.Background(), "go")
	if err != nil || final.TextContent() != "steered" {
		t.Fatalf("final = %+v, %v", final, err)
	}
	// The second turn sees both tool results (t1 cut short, not run to its
	// end; t2 skipped) and the steering message.
	var cut, skipped bool
	for _, m := range h.prov.Requests[1].Messages {
		if m.Role == llm.RoleToolResult && m.ToolCallID == "t1" && m.IsError && m.TextContent() == "Command aborted" {
			cut = true
		}
		if m.Role == llm.RoleToolResult && m.ToolCallID == "t2" && m.IsError && m.TextContent() == skippedText {
			skipped = true
		}
	}
	if !cut {
		t.Fatalf("steering did not cut the running tool: %+v", h.prov.Requests[1].Messages)
	}
	if !skipped {
		t.Fatalf("t2 not skipped: %+v", h.prov.Requests[1].Messages)
	}
	if got := userTexts(h, 1); len(got) != 2 || got[1] != "stop that" {
		t.Fatalf("user messages of turn 2 = %q", got)
	}
	if s, f := h.agent.QueuedCounts(); s != 0 || f != 0 {
		t.Fatalf("queues not drained: %d %d", s, f)
	}
}

func TestFollowUpRunsWhenTheRunWouldEnd(t *testing.T) {
	for _, mode := range []string{ModeOneAtATime, ModeAll} {
		t.Run(mode, func(t *testing.T) {
			script := []llm.Message{assistant(llm.StopEnd, llm.Text("first")), assistant(llm.StopEnd, llm.Text("second"))}
			if mode == ModeOneAtATime {
				script = append(script, assistant(llm.StopEnd, llm.Text("third")))
			}
			h := newHarness(t, script...)
			if err := h.agent.SetFollowUpMode(mode); err != nil {
				t.Fatal(err)
			}
			h.agent.FollowUp([]llm.Content{llm.Text("a")})
			h.agent.FollowUp([]llm.Content{llm.Text("b")})
			final, err := h.agent.Prompt(context.Background(), "go")
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{ModeOneAtATime: "third", ModeAll: "second"}[mode]
			if final.TextContent() != want || len(h.prov.Requests) != len(script) {
				t.Fatalf("final %q after %d requests", final.TextContent(), len(h.prov.Requests))
			}
			last := userTexts(h, len(script)-1)
			if strings.Join(last, ",") != "go,a,b" {
				t.Fatalf("user messages = %q", last)
			}
			if got := h.seq(EventAgentStart, EventAgentEnd); got != "agent_start agent_end" {
				t.Fatalf("one run expected: %s", got)
			}
		})
	}
	if err := (&Agent{}).SetFollowUpMode("some"); err == nil || err.Error() != "Invalid follow-up mode: some" {
		t.Fatalf("bad mode: %v", err)
	}
}

func TestBusyAbortAndState(t *testing.T) {
	h := newHarness(t, assistant(llm.StopToolUse, toolCall("t1", "bash", `{"command":"sleep 30"}`)))
	started := make(chan struct{})
	var once sync.Once
	unsub := h.agent.Subscribe(func(e *Event) {
		if e.Type == EventToolExecutionStart {
			once.Do(func() { close(started) })
		}
	})
	defer unsub()
	done := make(chan *llm.Message, 1)
	if err := h.agent.Start(context.Background(), []llm.Content{llm.Text("go")}, func(m *llm.Message, _ error) { done <- m }); err != nil {
		t.Fatal(err)
	}
	<-started
	if !h.agent.IsStreaming() {
		t.Fatal("not streaming")
	}
	if _, err := h.agent.Prompt(context.Background(), "again"); !errors.Is(err, ErrBusy) {
		t.Fatalf("second prompt: %v", err)
	}
	h.agent.FollowUp([]llm.Content{llm.Text("later")})
	if s, f := h.agent.QueuedCounts(); s != 0 || f != 1 {
		t.Fatalf("queued = %d %d", s, f)
	}
	if st, fu := h.agent.ClearQueues(); len(st) != 0 || len(fu) != 1 {
		t.Fatalf("cleared = %v %v", st, fu)
	}
	select {
	case <-h.agent.Abort():
	case <-time.After(5 * time.Second):
		t.Fatal("abort did not settle")
	}
	if h.agent.IsStreaming() {
		t.Fatal("still streaming after abort")
	}
	if m := <-done; m.StopReason != llm.StopAborted {
		t.Fatalf("final = %+v", m)
	}
	<-h.agent.Abort() // idle: returns at once
	if n := h.agent.MessageCount(); n != 3 {
		t.Fatalf("messages = %d", n)
	}
}

func TestOverflowRecoveryCompactsAndContinues(t *testing.T) {
	over := assistant(llm.StopError)
	over.ErrorMessage, over.ErrorStatus = "prompt is too long: 300000 tokens > 200000 maximum", 400
	h := newHarness(t, over, assistant(llm.StopEnd, llm.Text("after compaction")))
	var reasons []string
	h.agent.Compactor = func(ctx context.Context, reason, _ string) (json.RawMessage, error) {
		reasons = append(reasons, reason)
		h.agent.ReloadContext()
		return json.RawMessage(`{"summary":"s","firstKeptEntryId":"x","tokensBefore":1}`), nil
	}
	final, err := h.agent.Prompt(context.Background(), "hi")
	if err != nil || final.TextContent() != "after compaction" {
		t.Fatalf("final = %+v, %v", final, err)
	}
	if strings.Join(reasons, ",") != "overflow" {
		t.Fatalf("compactor reasons = %v", reasons)
	}
	if got := h.seq(EventAutoRetryStart, EventAutoCompactionStart, EventAutoCompactionEnd); got != "auto_compaction_start auto_compaction_end" {
		t.Fatalf("events = %s", got)
	}
	var end string
	for _, l := range h.lines {
		if strings.Contains(l, EventAutoCompactionEnd) {
			end = l
		}
	}
	if end != `{"type":"auto_compaction_end","result":{"summary":"s","firstKeptEntryId":"x","tokensBefore":1},"aborted":false,"willRetry":true}` {
		t.Fatalf("end = %s", end)
	}
	for _, m := range h.prov.Requests[1].Messages {
		if m.Role == llm.RoleAssistant {
			t.Fatalf("the failed turn was sent again: %+v", m)
		}
	}
}

func TestRecoveryWithoutCompactorOrFailing(t *testing.T) {
	over := assistant(llm.StopError)
	over.ErrorMessage = "context_length_exceeded"
	h := newHarness(t, over)
	final, _ := h.agent.Prompt(context.Background(), "hi")
	if final.StopReason != llm.StopError || final.ErrorMessage != "context_length_exceeded" || len(h.prov.Requests) != 1 {
		t.Fatalf("final = %+v", final)
	}

	h = newHarness(t, assistant(llm.StopLength, llm.Text("cut")))
	h.agent.Compactor = func(context.Context, string, string) (json.RawMessage, error) { return nil, errors.New("model down") }
	final, _ = h.agent.Prompt(context.Background(), "hi")
	if final.StopReason != llm.StopError || final.ErrorMessage != "Incomplete response recovery failed: model down" {
		t.Fatalf("final = %+v", final)
	}
	h = newHarness(t, assistant(llm.StopLength, llm.Text("cut")))
	h.agent.Compactor = func(context.Context, string, string) (json.RawMessage, error) { t.Fatal("called"); return nil, nil }
	h.agent.SetAutoCompaction(false)
	if final, _ = h.agent.Prompt(context.Background(), "hi"); final.StopReason != llm.StopLength {
		t.Fatalf("final = %+v", final)
	}
}

// rejecting fails its first stream with a 401 unless the credential is
// the refreshed one.
type rejecting struct {
	creds []string
}

func (p *rejecting) Stream(_ context.Context, _ *llm.Request, m *llm.Model, c llm.Credential) (*llm.Stream, error) {
	p.creds = append(p.creds, c.Secret)
	if c.Secret != "fresh" {
		return nil, &llm.UpstreamError{Status: 401, Message: "invalid token"}
	}
	return (&replayed{turns: [][]llm.Event{record(assistant(llm.StopEnd, llm.Text("ok")))}}).Stream(context.Background(), nil, m, c)
}

func TestUnauthorizedRefreshesOnceAndRetries(t *testing.T) {
	h := newHarness(t)
	p := &rejecting{}
	h.agent.Provider, h.agent.Credential = p, llm.OAuthToken("stale")
	refreshes := 0
	h.agent.RefreshCredential = func(context.Context) (llm.Credential, error) {
		refreshes++
		return llm.OAuthToken("fresh"), nil
	}
	final, err := h.agent.Prompt(context.Background(), "hi")
	if err != nil || final.TextContent() != "ok" || refreshes != 1 || strings.Join(p.creds, ",") != "stale,fresh" {
		t.Fatalf("final = %+v, %v; refreshes %d, creds %v", final, err, refreshes, p.creds)
	}
	// Without a refresh hook the 401 ends the run.
	h = newHarness(t)
	h.agent.Provider, h.agent.Credential = &rejecting{}, llm.OAuthToken("stale")
	if final, _ = h.agent.Prompt(context.Background(), "hi"); final.StopReason != llm.StopError || final.ErrorStatus != 401 {
		t.Fatalf("final = %+v", final)
	}
}

func TestSteerInWaitModeLetsTheBatchFinish(t *testing.T) {
	h := newHarness(t,
		assistant(llm.StopToolUse, toolCall("t1", "bash", `{"command":"sleep 0.2; echo one"}`), toolCall("t2", "bash", `{"command":"echo two"}`)),
		assistant(llm.StopEnd, llm.Text("done")),
	)
	if err := h.agent.SetInterruptMode(InterruptWait); err != nil {
		t.Fatal(err)
	}
	if err := h.agent.SetSteeringMode(ModeAll); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	h.agent.Subscribe(func(e *Event) {
		if e.Type == EventToolExecutionStart {
			once.Do(func() {
				h.agent.Steer([]llm.Content{llm.Text("s1")})
				h.agent.Steer([]llm.Content{llm.Text("s2")})
			})
		}
	})
	if _, err := h.agent.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, m := range h.prov.Requests[1].Messages {
		if m.Role == llm.RoleToolResult {
			results = append(results, strings.TrimSpace(m.TextContent()))
		}
	}
	if strings.Join(results, ",") != "one,two" {
		t.Fatalf("tool results = %q", results)
	}
	if got := userTexts(h, 1); strings.Join(got, ",") != "go,s1,s2" {
		t.Fatalf("user messages = %q", got)
	}
}

// denying refuses credential "denied" by an account policy naming the
// requested model (Codex's ChatGPT-account sentence).
type denying struct {
	creds []string
}

func (p *denying) Stream(_ context.Context, _ *llm.Request, m *llm.Model, c llm.Credential) (*llm.Stream, error) {
	p.creds = append(p.creds, c.Secret)
	if c.Secret == "denied" {
		return nil, &llm.UpstreamError{Status: 403, Message: "The '" + m.ID + "' model is not supported when using Codex with a ChatGPT account."}
	}
	return (&replayed{turns: [][]llm.Event{record(assistant(llm.StopEnd, llm.Text("ok")))}}).Stream(context.Background(), nil, m, c)
}

// An account-policy denial goes to OnPolicyDenied (model-scoped when it
// names the turn's model) and the turn is retried once on the credential
// it returns; the denied token is never force-refreshed.
func TestPolicyDenialSwitchesAccountWithoutRefresh(t *testing.T) {
	h := newHarness(t)
	h.agent.Model.Provider, h.agent.Model.ID = "openai-codex", "gpt-5.4"
	p := &denying{}
	h.agent.Provider, h.agent.Credential = p, llm.OAuthToken("denied")
	refreshes := 0
	h.agent.RefreshCredential = func(context.Context) (llm.Credential, error) {
		refreshes++
		return llm.OAuthToken("fresh-but-same-account"), nil
	}
	var told []PolicyDenied
	h.agent.OnPolicyDenied = func(_ context.Context, d PolicyDenied) (llm.Credential, bool) {
		told = append(told, d)
		return llm.OAuthToken("sibling"), true
	}
	final, err := h.agent.Prompt(context.Background(), "hi")
	if err != nil || final.TextContent() != "ok" || strings.Join(p.creds, ",") != "denied,sibling" || refreshes != 0 {
		t.Fatalf("final = %+v, %v; creds %v, refreshes %d", final, err, p.creds, refreshes)
	}
	if len(told) != 1 || !told[0].ModelOnly || told[0].Credential.Secret != "denied" || told[0].Model.ID != "gpt-5.4" {
		t.Fatalf("OnPolicyDenied told %+v", told)
	}
	// No sibling: the denial ends the turn, still without a refresh.
	h = newHarness(t)
	h.agent.Model.Provider, h.agent.Model.ID = "openai-codex", "gpt-5.4"
	h.agent.Provider, h.agent.Credential = &denying{}, llm.OAuthToken("denied")
	h.agent.RefreshCredential = func(context.Context) (llm.Credential, error) {
		refreshes++
		return llm.OAuthToken("fresh"), nil
	}
	h.agent.OnPolicyDenied = func(context.Context, PolicyDenied) (llm.Credential, bool) { return llm.Credential{}, false }
	if final, _ = h.agent.Prompt(context.Background(), "hi"); final.StopReason != llm.StopError || final.ErrorStatus != 403 || refreshes != 0 {
		t.Fatalf("final = %+v, refreshes %d", final, refreshes)
	}
}
