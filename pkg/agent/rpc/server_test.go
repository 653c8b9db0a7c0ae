package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// rpcInProcess runs Serve over pipes (so the race detector sees the
// server, the loop and the writer together).
type rpcInProcess struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
	// skipped counts the frames next passed over, by type (await).
	skipped map[string]int
}

func startRPCInProcess(t *testing.T, prov llm.Provider) *rpcInProcess {
	return startRPCInProcessWith(t, prov, nil)
}

// startRPCInProcessWith is startRPCInProcess with configure applied to the
// agent before the server starts (nil: none).
func startRPCInProcessWith(t *testing.T, prov llm.Provider, configure func(*agent.Agent)) *rpcInProcess {
	dir := t.TempDir()
	sf, err := session.Create(dir, dir, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := llm.Model{ID: "fake-model", Provider: "fake", API: llm.APIAnthropic, ContextWindow: 200000, MaxTokens: 8192}
	tenv := &tools.Env{Cwd: dir, Environ: []string{"PATH=" + os.Getenv("PATH")}}
	ag := &agent.Agent{Session: sf, Model: m, Provider: prov, ThinkingLevel: "off",
		Tools: tools.Builtin(tenv, tools.BashOptions{NoLogin: true}, &tools.TodoList{}, nil)}
	if configure != nil {
		configure(ag)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := testHost(ag, m)
	h.Stdin, h.Stdout, h.AgentDir, h.Cwd, h.ToolEnv, h.BashOptions = inR, outW, dir, dir, tenv, tools.BashOptions{NoLogin: true}
	p := &rpcInProcess{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() { p.done <- Serve(context.Background(), h); outW.Close() }()
	return p
}

// finish closes stdin, drains stdout and waits for runRPC to return.
func (p *rpcInProcess) finish() {
	p.t.Helper()
	p.in.Close()
	go func() { _, _ = io.Copy(io.Discard, p.out) }()
	select {
	case err := <-p.done:
		if err != nil {
			p.t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		p.t.Fatal("runRPC did not return after EOF")
	}
}

// await returns once a frame of type want has been read, now or among
// the frames next skipped before (consuming that record).
func (p *rpcInProcess) await(want string) {
	p.t.Helper()
	if p.skipped[want] > 0 {
		p.skipped[want]--
		return
	}
	p.next(want)
}

func (p *rpcInProcess) send(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, s+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// next returns the next frame whose type (or response id) is want; the
// frames it skips are remembered for seen.
func (p *rpcInProcess) next(want string) map[string]any {
	p.t.Helper()
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			p.t.Fatalf("waiting for %s: %v", want, err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			p.t.Fatalf("not JSON: %s", line)
		}
		if m["type"] == want || m["type"] == "response" && m["id"] == want {
			return m
		}
		if p.skipped == nil {
			p.skipped = map[string]int{}
		}
		p.skipped[fmt.Sprint(m["type"])]++
	}
}

func TestRPCInProcessSteerAndFollowUp(t *testing.T) {
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
	// The tool runs until the steer interrupts it (immediate mode), so the
	// run is streaming here whatever the machine's load.
	p.send(`{"id":"4","type":"get_state"}`)
	st := p.next("4")["data"].(map[string]any)
	if st["isStreaming"] != true {
		t.Errorf("state = %v", st)
	}
	p.send(`{"id":"2","type":"prompt","message":"steered","streamingBehavior":"steer"}`)
	p.send(`{"id":"3","type":"follow_up","message":"afterwards"}`)
	p.next("2")
	p.next("3")
	p.await("agent_end")
	p.send(`{"id":"5","type":"get_messages"}`)
	msgs := p.next("5")["data"].(map[string]any)["messages"].([]any)
	var users []string
	for _, m := range msgs {
		mm := m.(map[string]any)
		if mm["role"] == "user" {
			b, _ := json.Marshal(mm["content"])
			users = append(users, string(b))
		}
	}
	if len(users) != 3 || !strings.Contains(users[1], "steered") || !strings.Contains(users[2], "afterwards") {
		t.Errorf("user messages = %v", users)
	}
	p.finish()
}

func TestRPCInProcessSessionCommands(t *testing.T) {
	prov := &llmtest.Provider{Chunk: 4, Messages: []llm.Message{
		{Role: llm.RoleAssistant, StopReason: llm.StopEnd, Content: []llm.Content{llm.Text("first answer")}},
	}}
	p := startRPCInProcess(t, prov)
	p.next("ready")
	p.send(`{"id":"1","type":"prompt","message":"hello there"}`)
	p.next("agent_end")
	p.send(`{"id":"2","type":"get_state"}`)
	first := p.next("2")["data"].(map[string]any)
	p.send(`{"id":"3","type":"get_branch_messages"}`)
	branch := p.next("3")["data"].(map[string]any)["messages"].([]any)
	if len(branch) != 1 || branch[0].(map[string]any)["text"] != "hello there" {
		t.Fatalf("branch messages = %v", branch)
	}
	entryID := branch[0].(map[string]any)["entryId"].(string)

	p.send(`{"id":"4","type":"new_session"}`)
	if r := p.next("4"); r["success"] != true || r["data"].(map[string]any)["cancelled"] != false {
		t.Fatalf("new_session = %v", r)
	}
	p.send(`{"id":"5","type":"get_state"}`)
	st := p.next("5")["data"].(map[string]any)
	if st["sessionId"] == first["sessionId"] || st["messageCount"] != 0.0 {
		t.Fatalf("after new_session: %v", st)
	}
	p.send(`{"id":"6","type":"switch_session","sessionPath":` + strconvQuote(first["sessionFile"].(string)) + `}`)
	p.next("6")
	p.send(`{"id":"7","type":"get_state"}`)
	if st := p.next("7")["data"].(map[string]any); st["sessionId"] != first["sessionId"] || st["messageCount"] != 2.0 {
		t.Fatalf("after switch_session: %v", st)
	}
	p.send(`{"id":"e1","type":"export_html","outputPath":"out/export.html"}`)
	if r := p.next("e1"); r["success"] != true {
		t.Fatalf("export_html = %v", r)
	} else if path := r["data"].(map[string]any)["path"].(string); !filepath.IsAbs(path) || !strings.HasSuffix(path, "out/export.html") {
		t.Fatalf("export path %q", path)
	} else if html, err := os.ReadFile(path); err != nil || !strings.Contains(string(html), "hello there") {
		t.Fatalf("export file: %v", err)
	}
	p.send(`{"id":"8","type":"branch","entryId":"nope"}`)
	if r := p.next("8"); r["error"] != "Invalid entry for branching: nope" {
		t.Fatalf("bad branch = %v", r)
	}
	p.send(`{"id":"9","type":"branch","entryId":"` + entryID + `"}`)
	if r := p.next("9")["data"].(map[string]any); r["text"] != "hello there" || r["cancelled"] != false {
		t.Fatalf("branch = %v", r)
	}
	p.send(`{"id":"10","type":"get_state"}`)
	// A branch is a new session file whose header names the source.
	if st := p.next("10")["data"].(map[string]any); st["messageCount"] != 0.0 || st["sessionId"] == first["sessionId"] ||
		st["sessionFile"] == first["sessionFile"] {
		t.Fatalf("after branch: %v", st)
	} else if bf, err := session.Open(st["sessionFile"].(string)); err != nil || bf.Header().ParentSession != first["sessionFile"] {
		t.Fatalf("branch file: %v (parentSession %q)", err, bf.Header().ParentSession)
	}
	p.finish()
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// testHost is a Host for agent ag on model m: a catalogue of the built-in
// models and m, no other credentials, model switches straight on the agent.
func testHost(ag *agent.Agent, m llm.Model) *Host {
	return &Host{
		Agent: ag, Catalog: llm.Builtin().With(m), Stderr: io.Discard, Now: time.Now,
		Available: func(context.Context, string) bool { return false },
		SwitchModel: func(_ context.Context, m llm.Model, role string) error {
			return errors.New("No credentials for provider: " + m.Provider)
		},
		RestoreModel: func(context.Context, llm.Model) error { return errors.New("no credentials") },
	}
}
