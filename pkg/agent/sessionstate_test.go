package agent

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// Every turn of a session carries the same provider state, so a fallback a
// turn learned applies to the session's later turns; another session gets
// its own.
func TestProviderStateIsPerSession(t *testing.T) {
	h := newHarness(t,
		assistant(llm.StopEnd, llm.Text("one")),
		assistant(llm.StopEnd, llm.Text("two")),
		assistant(llm.StopEnd, llm.Text("three")),
	)
	for _, text := range []string{"first", "second"} {
		if _, err := h.agent.Prompt(context.Background(), text); err != nil {
			t.Fatal(err)
		}
	}
	reqs := h.prov.Requests
	if len(reqs) != 2 || reqs[0].Session == nil || reqs[1].Session != reqs[0].Session {
		t.Fatalf("two turns of one session: provider states %v, want one shared non-nil state", sessions(reqs))
	}
	scope := llm.UpstreamScope("anthropic", "https://api.anthropic.com/v1/messages", "m1")
	reqs[0].Session.DisableThinkingReplay(scope)

	sf, err := session.Create(filepath.Join(h.dir, "other"), h.dir, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.agent.SetSession(sf)
	if _, err := h.agent.Prompt(context.Background(), "third"); err != nil {
		t.Fatal(err)
	}
	next := h.prov.Requests[2].Session
	if next == nil || next == reqs[0].Session || next.ThinkingReplayDisabled(scope) {
		t.Fatalf("a new session reused the old provider state: %v", sessions(h.prov.Requests))
	}
}

func sessions(reqs []*llm.Request) []*llm.SessionState {
	out := make([]*llm.SessionState, len(reqs))
	for i, r := range reqs {
		out[i] = r.Session
	}
	return out
}
