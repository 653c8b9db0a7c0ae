package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

// agentEnd is the decoded agent_end line: its message count and the two
// flags, each nil when absent.
type agentEnd struct {
	messages   int
	isTerminal *bool
	yielded    *bool
	rest       []string // any other member
}

func (h *harness) agentEnds(t *testing.T) []agentEnd {
	t.Helper()
	var out []agentEnd
	for _, l := range h.lines {
		if !strings.HasPrefix(l, `{"type":"agent_end"`) {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("agent_end %s: %v", l, err)
		}
		var e agentEnd
		var msgs []json.RawMessage
		_ = json.Unmarshal(m["messages"], &msgs)
		e.messages = len(msgs)
		for k, v := range m {
			var b bool
			switch k {
			case "type", "messages":
			case "isTerminal":
				if json.Unmarshal(v, &b) == nil {
					e.isTerminal = &b
				}
			case "yielded":
				if json.Unmarshal(v, &b) == nil {
					e.yielded = &b
				}
			default:
				e.rest = append(e.rest, k)
			}
		}
		out = append(out, e)
	}
	return out
}

// flags renders the agent_end flags for comparison ("-" when absent).
func (e agentEnd) flags() string {
	s := func(p *bool) string {
		if p == nil {
			return "-"
		}
		if *p {
			return "true"
		}
		return "false"
	}
	return "isTerminal=" + s(e.isTerminal) + " yielded=" + s(e.yielded)
}

func TestAgentEndOfAPlainTurnIsTerminal(t *testing.T) {
	h := newHarness(t, assistant(llm.StopEnd, llm.Text("hello")))
	if _, err := h.agent.Prompt(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	ends := h.agentEnds(t)
	if len(ends) != 1 || ends[0].flags() != "isTerminal=true yielded=true" || ends[0].messages != 2 || ends[0].rest != nil {
		t.Fatalf("agent_end = %+v (%s)", ends, ends[0].flags())
	}
	if last := h.events[len(h.events)-1]; last != EventAgentEnd {
		t.Fatalf("last event = %s", last)
	}
}

func TestAgentEndBeforeARetryIsNotTerminal(t *testing.T) {
	failed := assistant(llm.StopError)
	failed.ErrorMessage = "529 overloaded"
	failed.ErrorStatus = 529
	h := newHarness(t, failed, assistant(llm.StopEnd, llm.Text("ok")))
	if final, err := h.agent.Prompt(context.Background(), "hi"); err != nil || final.TextContent() != "ok" {
		t.Fatalf("final = %+v, %v", final, err)
	}
	// The retry is decided (and announced) before the failed run's end.
	if got := h.seq(EventAgentStart, EventAgentEnd, EventAutoRetryStart, EventAutoRetryEnd); got !=
		"agent_start auto_retry_start agent_end agent_start auto_retry_end agent_end" {
		t.Fatalf("events = %s", got)
	}
	ends := h.agentEnds(t)
	if len(ends) != 2 || ends[0].flags() != "isTerminal=false yielded=false" || ends[1].flags() != "isTerminal=true yielded=true" {
		t.Fatalf("agent_end flags: %s, %s", ends[0].flags(), ends[len(ends)-1].flags())
	}
	// Neither carries awaitingAsyncWork: there is no background work.
	for _, e := range ends {
		if e.rest != nil {
			t.Fatalf("agent_end has %v", e.rest)
		}
	}
}

func TestAgentEndWhenRetriesRunOutIsTerminal(t *testing.T) {
	failed := assistant(llm.StopError)
	failed.ErrorMessage = "503 service unavailable"
	h := newHarness(t, failed, failed, failed)
	h.agent.Retry.MaxRetries = 2
	if final, _ := h.agent.Prompt(context.Background(), "hi"); final.StopReason != llm.StopError {
		t.Fatalf("final = %+v", final)
	}
	var got []string
	for _, e := range h.agentEnds(t) {
		got = append(got, e.flags())
	}
	if strings.Join(got, "; ") != "isTerminal=false yielded=false; isTerminal=false yielded=false; isTerminal=true yielded=true" {
		t.Fatalf("agent_end flags: %v", got)
	}
}

func TestAgentEndBeforeAQueuedFollowUpHasYielded(t *testing.T) {
	failed := assistant(llm.StopError)
	failed.ErrorMessage = "invalid request: bad tool schema"
	h := newHarness(t, failed, assistant(llm.StopEnd, llm.Text("followed up")))
	// The follow-up arrives while the first turn streams; that turn fails
	// without a retry, so the run ends before taking it from the queue.
	queued := false
	h.agent.Subscribe(func(e *Event) {
		if e.Type == EventTurnStart && !queued {
			queued = true
			h.agent.FollowUp([]llm.Content{llm.Text("and then this")})
		}
	})
	final, err := h.agent.Prompt(context.Background(), "hi")
	if err != nil || final.TextContent() != "followed up" {
		t.Fatalf("final = %+v, %v", final, err)
	}
	ends := h.agentEnds(t)
	if len(ends) != 2 || ends[0].flags() != "isTerminal=false yielded=true" || ends[1].flags() != "isTerminal=true yielded=true" {
		t.Fatalf("agent_end = %+v", ends)
	}
	if s, f := h.agent.QueuedCounts(); s+f != 0 {
		t.Fatalf("queues hold %d steering, %d follow-up", s, f)
	}
	last := h.prov.Requests[1].Messages
	if m := last[len(last)-1]; m.Role != llm.RoleUser || m.Content[0].Text != "and then this" {
		t.Fatalf("second request ends with %+v", m)
	}
}

func TestAgentEndAfterAnAbortIsTerminalWithTheQueueKept(t *testing.T) {
	h := newHarness(t, assistant(llm.StopEnd, llm.Text("never")))
	ctx, cancel := context.WithCancel(context.Background())
	h.agent.Subscribe(func(e *Event) {
		if e.Type == EventTurnStart {
			h.agent.FollowUp([]llm.Content{llm.Text("later")})
			cancel()
		}
	})
	if final, _ := h.agent.Prompt(ctx, "hi"); final.StopReason != llm.StopAborted {
		t.Fatalf("final = %+v", final)
	}
	ends := h.agentEnds(t)
	if len(ends) != 1 || ends[0].flags() != "isTerminal=true yielded=true" {
		t.Fatalf("agent_end = %+v", ends)
	}
	if _, f := h.agent.QueuedCounts(); f != 1 {
		t.Fatalf("follow-up queue holds %d", f)
	}
}
