package cli

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/llm"
)

// promptResult returns the prompt_result of the prompt with id, seen
// already or waited for.
func (d *rpcDriver) promptResult(id string) rpcFrame {
	d.t.Helper()
	if i := d.index(isPromptResult(id)); i >= 0 {
		return d.seen[i]
	}
	return d.until("prompt_result "+id, func(f rpcFrame) bool { return f.str("type") == "prompt_result" && f.str("id") == id })
}

// index is the position of the first frame seen that matches pred (-1:
// none).
func (d *rpcDriver) index(pred func(rpcFrame) bool) int { return slices.IndexFunc(d.seen, pred) }

func isResponse(id string) func(rpcFrame) bool {
	return func(f rpcFrame) bool { return f.str("type") == "response" && f.str("id") == id }
}

func isPromptResult(id string) func(rpcFrame) bool {
	return func(f rpcFrame) bool { return f.str("type") == "prompt_result" && f.str("id") == id }
}

// TestAgentE2ERPCPromptResults: every accepted prompt and abort_and_prompt
// gets exactly one prompt_result after its response and the agent's
// agent_end (completed, error with the upstream's status, aborted), a
// stretch of activity ends with session_settled, message frames carry
// one messageId per message, and a slash command that ends locally gets
// no prompt_result.
func TestAgentE2ERPCPromptResults(t *testing.T) {
	e := newE2E(t)
	e.fake.push(asst(llm.StopEnd, llm.Text("first answer")))
	d := startRPC(t, e.project, rpcEnv(e), 30*time.Second, binary(t), "--mode", "rpc", "--model", "fake/fake-model", "--no-ui")
	d.until("ready", func(f rpcFrame) bool { return f.str("type") == "ready" })

	// A completed prompt: response, events, agent_end, prompt_result, session_settled.
	d.send(`{"id":"p1","type":"prompt","message":"hello"}`)
	r := d.promptResult("p1")
	d.until("session_settled", func(f rpcFrame) bool { return f.str("type") == "session_settled" })
	if r.m["agentInvoked"] != true || r.str("status") != "completed" || r.m["sessionSettled"] != true || r.m["error"] != nil {
		t.Errorf("prompt_result = %s", r.raw)
	}
	resp, end, res := d.index(isResponse("p1")), d.index(func(f rpcFrame) bool { return f.str("type") == "agent_end" }),
		d.index(isPromptResult("p1"))
	if !(resp >= 0 && resp < end && end < res) {
		t.Errorf("order: response %d, agent_end %d, prompt_result %d: %v", resp, end, res, frameTypes(d.seen))
	}
	ids := map[string][]string{} // messageId → the message frames carrying it
	for _, f := range d.seen {
		if typ := f.str("type"); strings.HasPrefix(typ, "message_") {
			id := f.str("messageId")
			if !strings.HasPrefix(id, "msg-") {
				t.Errorf("%s without messageId: %s", typ, f.raw)
			}
			ids[id] = append(ids[id], typ)
		}
	}
	// The user message and the assistant's answer: two ids, each opened
	// by message_start and closed by message_end.
	if len(ids) != 2 {
		t.Errorf("message ids: %v", ids)
	}
	for id, types := range ids {
		if types[0] != "message_start" || types[len(types)-1] != "message_end" {
			t.Errorf("%s: %v", id, types)
		}
	}

	d.send(`{"id":"s1","type":"get_state"}`)
	st := d.response("s1").m["data"].(map[string]any)
	if st["hasPendingAsyncWork"] != false || st["isSettled"] != true {
		t.Errorf("get_state: hasPendingAsyncWork %v, isSettled %v", st["hasPendingAsyncWork"], st["isSettled"])
	}

	// An upstream failure that is not retried here: status error with the
	// provider's HTTP status and whether a retry could help.
	d.send(`{"id":"r0","type":"set_auto_retry","enabled":false}`)
	d.response("r0")
	e.fake.push(fakeError{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	d.send(`{"id":"p2","type":"prompt","message":"again"}`)
	r = d.promptResult("p2")
	perr, _ := r.m["error"].(map[string]any)
	if r.str("status") != "error" || r.m["agentInvoked"] != true || perr == nil || perr["httpStatus"] != 529.0 ||
		perr["retryable"] != true || perr["provider"] != "fake" || perr["model"] != "fake-model" || perr["message"] == "" {
		t.Errorf("error prompt_result = %s", r.raw)
	}
	e.fake.push(fakeError{status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"bad request"}}`})
	d.send(`{"id":"p2b","type":"prompt","message":"bad"}`)
	if r := d.promptResult("p2b"); r.m["error"].(map[string]any)["retryable"] != false || r.m["error"].(map[string]any)["httpStatus"] != 400.0 {
		t.Errorf("400 prompt_result = %s", r.raw)
	}

	// abort: the running prompt ends aborted.
	hang := fakeHang{started: make(chan struct{})}
	e.fake.push(hang)
	d.send(`{"id":"p3","type":"prompt","message":"take your time"}`)
	d.response("p3")
	<-hang.started
	d.send(`{"id":"a1","type":"abort"}`)
	d.response("a1")
	if r := d.promptResult("p3"); r.str("status") != "aborted" || r.m["agentInvoked"] != true {
		t.Errorf("aborted prompt_result = %s", r.raw)
	}

	// abort_and_prompt: the aborted prompt and the new one each get theirs.
	hang = fakeHang{started: make(chan struct{})}
	e.fake.push(hang, asst(llm.StopEnd, llm.Text("instead")))
	d.send(`{"id":"p4","type":"prompt","message":"slow"}`)
	d.response("p4")
	<-hang.started
	d.send(`{"id":"p5","type":"abort_and_prompt","message":"do this instead"}`)
	if r := d.promptResult("p4"); r.str("status") != "aborted" {
		t.Errorf("p4 prompt_result = %s", r.raw)
	}
	if r := d.promptResult("p5"); r.str("status") != "completed" || r.m["agentInvoked"] != true {
		t.Errorf("p5 prompt_result = %s", r.raw)
	}
	if d.index(isResponse("p5")) > d.index(isPromptResult("p5")) {
		t.Errorf("abort_and_prompt: prompt_result before the response")
	}

	// A slash command handled by the server ends locally.
	d.send(`{"id":"p6","type":"prompt","message":"/rename the renamed one"}`)
	if r := d.response("p6"); r.m["success"] != true || r.m["data"].(map[string]any)["agentInvoked"] != false {
		t.Errorf("slash command response = %s", r.raw)
	}
	d.send(`{"id":"s2","type":"get_state"}`)
	if st := d.response("s2").m["data"].(map[string]any); st["sessionName"] != "the renamed one" {
		t.Errorf("sessionName after /rename = %v", st["sessionName"])
	}

	if code := d.closeAndWait(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, d.stderr)
	}
	results := map[string]int{}
	settled := 0
	for _, f := range d.seen {
		switch f.str("type") {
		case "prompt_result":
			results[f.str("id")]++
		case "session_settled":
			settled++
		}
	}
	want := map[string]int{"p1": 1, "p2": 1, "p2b": 1, "p3": 1, "p4": 1, "p5": 1}
	if !maps.Equal(results, want) {
		t.Errorf("prompt_result frames per id = %v, want %v", results, want)
	}
	// One per stretch of activity: p1, p2, p2b, p3, and p4+p5 (the abort
	// and the new prompt run back to back, but p4's run settles first).
	if settled < 5 || settled > 6 {
		t.Errorf("%d session_settled frames", settled)
	}
}

// TestAgentE2ERPCSessionCommands183: unknown commands echo their id;
// get_entries (with an unknown since: code unknown_since), get_tree,
// get_available_thinking_levels, set_event_filter, and open_session
// moving to a new directory and back to resume the first session.
func TestAgentE2ERPCSessionCommands183(t *testing.T) {
	e := newE2E(t)
	e.fake.push(asst(llm.StopEnd, llm.Text("one")), asst(llm.StopEnd, llm.Text("two")), asst(llm.StopEnd, llm.Text("three")))
	d := startRPC(t, e.project, rpcEnv(e), 30*time.Second, binary(t), "--mode", "rpc", "--model", "fake/fake-model")
	d.until("ready", func(f rpcFrame) bool { return f.str("type") == "ready" })

	d.send(`{"id":"u1","type":"no_such_command"}`)
	if f := d.response("u1"); f.str("error") != "Unknown command: no_such_command" || f.m["success"] != false {
		t.Errorf("unknown command = %s", f.raw)
	}

	d.send(`{"id":"p1","type":"prompt","message":"hello"}`)
	d.promptResult("p1")
	d.send(`{"id":"s0","type":"get_state"}`)
	first := d.response("s0").m["data"].(map[string]any)

	d.send(`{"id":"e1","type":"get_entries"}`)
	all := d.response("e1").m["data"].(map[string]any)
	entries := all["entries"].([]any)
	if len(entries) < 2 || all["leafId"] == nil {
		t.Fatalf("get_entries = %v", all)
	}
	firstID := entries[0].(map[string]any)["id"].(string)
	d.send(`{"id":"e2","type":"get_entries","since":"` + firstID + `"}`)
	if since := d.response("e2").m["data"].(map[string]any)["entries"].([]any); len(since) != len(entries)-1 {
		t.Errorf("get_entries since the first: %d entries, want %d", len(since), len(entries)-1)
	}
	d.send(`{"id":"e3","type":"get_entries","since":"nope"}`)
	if f := d.response("e3"); f.m["success"] != false || f.str("code") != "unknown_since" || f.str("error") != "Unknown entries cursor: nope" {
		t.Errorf("unknown since = %s", f.raw)
	}

	d.send(`{"id":"t1","type":"get_tree"}`)
	tr := d.response("t1").m["data"].(map[string]any)
	roots := tr["tree"].([]any)
	if len(roots) != 1 || tr["leafId"] != all["leafId"] {
		t.Fatalf("get_tree = %v", tr)
	}
	depth, node := 0, roots[0].(map[string]any)
	for {
		depth++
		kids := node["children"].([]any)
		if len(kids) == 0 {
			break
		}
		node = kids[0].(map[string]any)
	}
	if depth != len(entries) || node["entry"].(map[string]any)["id"] != tr["leafId"] {
		t.Errorf("tree depth %d for %d entries; last %v", depth, len(entries), node["entry"])
	}

	d.send(`{"id":"l1","type":"get_available_thinking_levels"}`)
	if lv := d.response("l1").m["data"].(map[string]any)["levels"].([]any); len(lv) != 1 || lv[0] != "off" {
		t.Errorf("levels of a model without reasoning = %v", lv)
	}

	// The filter keeps agent_end only; null restores every event.
	d.send(`{"id":"f0","type":"set_event_filter"}`)
	if f := d.response("f0"); f.m["success"] != false {
		t.Errorf("filter without events = %s", f.raw)
	}
	d.send(`{"id":"f1","type":"set_event_filter","events":["agent_end"]}`)
	if ev := d.response("f1").m["data"].(map[string]any)["events"].([]any); len(ev) != 1 || ev[0] != "agent_end" {
		t.Errorf("set_event_filter = %v", ev)
	}
	from := len(d.seen)
	d.send(`{"id":"p2","type":"prompt","message":"quietly"}`)
	d.promptResult("p2")
	var events []string
	for _, f := range d.seen[from:] {
		if typ := f.str("type"); typ != "response" && typ != "prompt_result" {
			events = append(events, typ)
		}
	}
	if !slices.Equal(events, []string{"agent_end"}) {
		t.Errorf("filtered frames: %v", events)
	}
	d.send(`{"id":"f2","type":"set_event_filter","events":null}`)
	if f := d.response("f2"); f.m["success"] != true || f.m["data"].(map[string]any)["events"] != nil {
		t.Errorf("set_event_filter null = %s", f.raw)
	}

	// open_session: an empty directory starts a new session there; the
	// first session's directory resumes it.
	other := filepath.Join(t.TempDir(), "other")
	d.send(`{"id":"o1","type":"open_session","sessionDir":` + strconvQuote(other) + `}`)
	o1 := d.response("o1").m["data"].(map[string]any)
	if o1["cancelled"] != false || o1["resumed"] != false || o1["sessionId"] == first["sessionId"] ||
		filepath.Dir(o1["sessionFile"].(string)) != other {
		t.Fatalf("open_session new = %v", o1)
	}
	d.send(`{"id":"p3","type":"prompt","message":"in the other one"}`)
	d.promptResult("p3")
	if _, err := os.Stat(o1["sessionFile"].(string)); err != nil {
		t.Errorf("the new session file: %v", err)
	}
	firstDir := filepath.Dir(first["sessionFile"].(string))
	d.send(`{"id":"o2","type":"open_session","sessionDir":` + strconvQuote(firstDir) + `}`)
	o2 := d.response("o2").m["data"].(map[string]any)
	if o2["resumed"] != true || o2["sessionId"] != first["sessionId"] || o2["sessionFile"] != first["sessionFile"] {
		t.Fatalf("open_session resume = %v", o2)
	}
	d.send(`{"id":"s1","type":"get_state"}`)
	if st := d.response("s1").m["data"].(map[string]any); st["sessionId"] != first["sessionId"] || st["messageCount"] != 4.0 {
		t.Errorf("after open_session: %v", st)
	}
	if code := d.closeAndWait(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, d.stderr)
	}

	// --no-ui belongs to the RPC mode.
	if out, errOut, code := e.run(t, "", "--no-ui", "-p", "hi"); code != 1 || out != "" || errOut != "Error: --no-ui requires --mode rpc\n" {
		t.Errorf("--no-ui without rpc: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
