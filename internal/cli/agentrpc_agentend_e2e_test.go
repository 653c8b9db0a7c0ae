package cli

import (
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/llm"
)

// agentEndFlags renders an agent_end frame's isTerminal and yielded ("-":
// absent or not a boolean), and fails on awaitingAsyncWork, which the
// agent never sends (it has no background work).
func agentEndFlags(t *testing.T, f rpcFrame) string {
	t.Helper()
	if _, ok := f.m["awaitingAsyncWork"]; ok {
		t.Errorf("agent_end carries awaitingAsyncWork: %s", f.raw)
	}
	s := func(k string) string {
		switch f.m[k] {
		case true:
			return "true"
		case false:
			return "false"
		}
		return "-"
	}
	return "isTerminal=" + s("isTerminal") + " yielded=" + s("yielded")
}

// TestAgentE2ERPCAgentEndYields: agent_end tells a host whether the agent
// goes on by itself. A plain turn ends terminal and yielded; a run that
// failed on an upstream 529 and is retried ends neither, and the retried
// run's end is terminal; a run followed by a queued follow-up is not
// terminal but has yielded.
func TestAgentE2ERPCAgentEndYields(t *testing.T) {
	e := newE2E(t)
	e.fake.push(asst(llm.StopEnd, llm.Text("plain")))
	d := startRPC(t, e.project, rpcEnv(e), 30*time.Second, binary(t), "--mode", "rpc", "--model", "fake/fake-model", "--no-ui")
	d.until("ready", func(f rpcFrame) bool { return f.str("type") == "ready" })

	d.send(`{"id":"p1","type":"prompt","message":"hello"}`)
	if got := agentEndFlags(t, d.agentEnd()); got != "isTerminal=true yielded=true" {
		t.Errorf("plain turn: %s", got)
	}
	d.promptResult("p1")

	// 529, then the retry succeeds.
	e.fake.push(fakeError{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		asst(llm.StopEnd, llm.Text("after the retry")))
	d.send(`{"id":"p2","type":"prompt","message":"again"}`)
	first := d.agentEnd()
	if got := agentEndFlags(t, first); got != "isTerminal=false yielded=false" {
		t.Errorf("failed run before its retry: %s", got)
	}
	final := d.agentEnd()
	if got := agentEndFlags(t, final); got != "isTerminal=true yielded=true" {
		t.Errorf("retried run: %s", got)
	}
	if r := d.promptResult("p2"); r.str("status") != "completed" {
		t.Errorf("prompt_result = %s", r.raw)
	}
	start := d.index(func(f rpcFrame) bool { return f.str("type") == "auto_retry_start" })
	if firstAt := d.index(func(f rpcFrame) bool { return f.raw == first.raw }); start < 0 || start > firstAt {
		t.Errorf("auto_retry_start %d, first agent_end %d: %v", start, firstAt, frameTypes(d.seen))
	}

	// A follow-up queued while the turn is in flight; the turn fails
	// without a retry, so the follow-up runs next.
	started, release := make(chan struct{}), make(chan struct{})
	bad := fakeError{status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"bad request"}}`}
	e.fake.push(fakeGatedError{bad, started, release}, asst(llm.StopEnd, llm.Text("followed up")))
	d.send(`{"id":"p3","type":"prompt","message":"first"}`)
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn's request never reached the fake upstream")
	}
	d.send(`{"id":"f1","type":"follow_up","message":"then this"}`)
	d.response("f1")
	close(release)
	if got := agentEndFlags(t, d.agentEnd()); got != "isTerminal=false yielded=true" {
		t.Errorf("run before the follow-up: %s", got)
	}
	if got := agentEndFlags(t, d.agentEnd()); got != "isTerminal=true yielded=true" {
		t.Errorf("follow-up run: %s", got)
	}
	if r := d.promptResult("p3"); r.str("status") != "completed" {
		t.Errorf("prompt_result = %s", r.raw)
	}
	if code := d.closeAndWait(); code != 0 {
		t.Errorf("exit %d", code)
	}
}
