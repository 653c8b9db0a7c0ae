package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/anthropic"
	"github.com/ompgo/omp/pkg/llm/llmtest"
	"github.com/ompgo/omp/pkg/llm/openai"
	"github.com/ompgo/omp/pkg/vault"
)

// binary is the real omp, built once per test run (ompBinary).
func binary(t testing.TB) string { return ompBinary(t) }

// fakeAnthropic is a scripted Anthropic Messages upstream: each request
// gets the next scripted message as an SSE stream, or an error status.
type fakeAnthropic struct {
	srv *httptest.Server
	// wire is the API the fake speaks (default anthropic-messages).
	wire string

	mu     sync.Mutex
	script []any // llm.Message or fakeError
	bodies []map[string]any
	keys   []string
}

// fakeHang starts a stream and then waits for the client to go away.
type fakeHang struct{ started chan struct{} }

type fakeError struct {
	status int
	body   string
}

// fakeGatedError is a fakeError answered only once release is closed;
// started is closed when the request arrives.
type fakeGatedError struct {
	fakeError
	started, release chan struct{}
}

func newFakeAnthropic(t *testing.T) *fakeAnthropic {
	f := &fakeAnthropic{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAnthropic) push(items ...any) {
	f.mu.Lock()
	f.script = append(f.script, items...)
	f.mu.Unlock()
}

func (f *fakeAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	want := map[string]string{llm.APIOpenAIChat: "/v1/chat/completions", llm.APIOpenAIResponses: "/v1/responses"}[f.wire]
	if want == "" {
		want = "/v1/messages"
	}
	if r.Method != http.MethodPost || r.URL.Path != want {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	data, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(data, &body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	key := r.Header.Get("x-api-key")
	if key == "" {
		key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	f.keys = append(f.keys, key)
	if len(f.script) == 0 {
		f.mu.Unlock()
		http.Error(w, `{"type":"error","error":{"type":"api_error","message":"script exhausted"}}`, http.StatusInternalServerError)
		return
	}
	next := f.script[0]
	f.script = f.script[1:]
	f.mu.Unlock()
	if g, ok := next.(fakeGatedError); ok {
		close(g.started)
		select {
		case <-g.release:
		case <-r.Context().Done():
			return
		}
		next = g.fakeError
	}
	switch v := next.(type) {
	case fakeError:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(v.status)
		_, _ = io.WriteString(w, v.body)
	case fakeHang:
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"fake-model\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n")
		w.(http.Flusher).Flush()
		close(v.started)
		<-r.Context().Done()
	case llm.Message:
		w.Header().Set("Content-Type", "text/event-stream")
		var encode func([]byte, *llm.Event) []byte
		switch f.wire {
		case llm.APIOpenAIChat:
			encode = openai.NewChatStream(openai.ChatOptions{ID: "chatcmpl-1", Model: "fake-model", IncludeUsage: true}).Append
		case llm.APIOpenAIResponses:
			encode = openai.NewResponsesStream(openai.ResponsesOptions{ID: openai.NewResponseID(), Model: "fake-model"}).Append
		default:
			encode = anthropic.NewStreamEncoder("fake-model", "msg_1").Encode
		}
		var buf []byte
		for ev := range llmtest.Replay(v, 4).Events() {
			buf = encode(buf[:0], &ev)
			_, _ = w.Write(buf)
		}
	}
}

func (f *fakeAnthropic) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...)
}

type e2eEnv struct {
	home, project string
	fake          *fakeAnthropic
}

func newE2E(t *testing.T) *e2eEnv { return newE2EWire(t, llm.APIAnthropic) }

// newE2EWire is a temp home and project with a models.yml provider "fake"
// speaking wire against a scripted fake upstream.
func newE2EWire(t *testing.T, wire string) *e2eEnv {
	e := &e2eEnv{home: t.TempDir(), project: t.TempDir(), fake: newFakeAnthropic(t)}
	e.fake.wire = wire
	base := e.fake.srv.URL
	if wire != llm.APIAnthropic {
		base += "/v1"
	}
	agentDir := filepath.Join(e.home, ".omp", "agent")
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		t.Fatal(err)
	}
	yml := fmt.Sprintf(`providers:
  fake:
    baseUrl: %s
    apiKey: FAKE_PROVIDER_KEY
    api: %s
    auth: apiKey
    models:
      - id: fake-model
        contextWindow: 200000
        maxTokens: 8192
`, base, wire)
	if err := os.WriteFile(filepath.Join(agentDir, "models.yml"), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *e2eEnv) run(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return e.runEnv(t, nil, stdin, args...)
}

// runEnv is run with extra "NAME=value" environment entries.
func (e *e2eEnv) runEnv(t *testing.T, extra []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = e.project
	cmd.Env = append([]string{"HOME=" + e.home, "PATH=" + os.Getenv("PATH"), "FAKE_PROVIDER_KEY=sk-fake-123", "PI_BASH_NO_LOGIN=1"}, extra...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var o, er bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &er
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), er.String(), code
}

func (e *e2eEnv) sessionFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(e.home, ".omp", "agent", "sessions", "*", "*.jsonl"))
	return files
}

func asst(stop llm.StopReason, blocks ...llm.Content) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: blocks, StopReason: stop,
		Usage: llm.Usage{Input: 10, Output: 5}}
}

func call(id, name string, args any) llm.Content {
	b, _ := json.Marshal(args)
	return llm.ToolCall(id, name, b)
}

func TestAgentE2EToolLoopContinueAndError(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	e.fake.push(
		asst(llm.StopToolUse, llm.Text("Creating the file."), call("toolu_1", "write", map[string]string{"path": "hello.txt", "content": "hello world\n"})),
		asst(llm.StopToolUse, call("toolu_2", "bash", map[string]string{"command": "cat hello.txt && echo ran > ran.txt"})),
		asst(llm.StopToolUse, call("toolu_3", "edit", map[string]any{"path": "hello.txt", "edits": []map[string]string{{"old_text": "world", "new_text": "omp"}}})),
		asst(llm.StopEnd, llm.Text("All done.")),
	)
	stdout, stderr, code := e.run(t, "", "-p", "--model", "fake/fake-model", "create hello.txt")
	if code != 0 || stdout != "All done.\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(e.project, "hello.txt")); string(got) != "hello omp\n" {
		t.Fatalf("hello.txt = %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(e.project, "ran.txt")); string(got) != "ran\n" {
		t.Fatalf("ran.txt = %q", got)
	}
	reqs := e.fake.requests()
	if len(reqs) != 4 {
		t.Fatalf("upstream requests = %d", len(reqs))
	}
	for i, k := range e.fake.keys {
		if k != "sk-fake-123" {
			t.Fatalf("request %d key = %q, want the models.yml apiKey from the environment", i, k)
		}
	}
	// The bash result reached the model in the third request.
	third, _ := json.Marshal(reqs[2]["messages"])
	if !strings.Contains(string(third), `hello world\n`) || !strings.Contains(string(third), `"tool_use_id":"toolu_2"`) {
		t.Fatalf("third request lacks the bash result: %s", third)
	}

	files := e.sessionFiles(t)
	if len(files) != 1 {
		t.Fatalf("session files = %v", files)
	}
	sf, err := session.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if h := sf.Header(); h.Cwd != e.project || h.Version != 3 {
		t.Fatalf("header = %+v", h)
	}
	ctx := sf.BuildContext()
	if ctx.Model != "fake/fake-model" || ctx.ThinkingLevel != "medium" {
		t.Fatalf("replay = %q %q", ctx.Model, ctx.ThinkingLevel)
	}
	var roles []string
	for _, m := range ctx.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,toolResult,assistant,toolResult,assistant,toolResult,assistant" {
		t.Fatalf("session roles = %s", got)
	}
	entries := sf.Entries()
	if entries[0].Type != session.TypeModelChange || entries[0].ParentID != "" || entries[1].Type != session.TypeThinkingLevelChange {
		t.Fatalf("first entries = %s / %s", entries[0].Raw, entries[1].Raw)
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].ParentID != entries[i-1].ID {
			t.Fatalf("entry %d parentId %q, want %q", i, entries[i].ParentID, entries[i-1].ID)
		}
	}

	// -c continues the same file with the whole history upstream.
	e.fake.push(asst(llm.StopEnd, llm.Text("Continued.")))
	stdout, stderr, code = e.run(t, "", "-c", "-p", "and now?")
	if code != 0 || stdout != "Continued.\n" {
		t.Fatalf("continue: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if files2 := e.sessionFiles(t); len(files2) != 1 || files2[0] != files[0] {
		t.Fatalf("continue wrote %v", files2)
	}
	reqs = e.fake.requests()
	msgs, _ := reqs[4]["messages"].([]any)
	if len(msgs) != 9 {
		t.Fatalf("continued request has %d messages, want the 8 of the session plus the new prompt", len(msgs))
	}
	sf2, err := session.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sf2.BuildContext().Messages); n != 10 {
		t.Fatalf("continued session has %d messages", n)
	}

	// --resume by id prefix finds the same file.
	id := sf.Header().ID
	e.fake.push(asst(llm.StopEnd, llm.Text("Resumed.")))
	if stdout, stderr, code = e.run(t, "", "-r", strings.ToUpper(id[:13]), "-p", "resume"); code != 0 || stdout != "Resumed.\n" {
		t.Fatalf("resume: exit %d %q %s", code, stdout, stderr)
	}
	if _, stderr, code = e.run(t, "", "-r", "ffffffff", "-p", "x"); code != 1 || !strings.Contains(stderr, `Session "ffffffff" not found.`) {
		t.Fatalf("resume of nothing: exit %d %q", code, stderr)
	}

	// --fork copies it into a new file whose header names its parent.
	e.fake.push(asst(llm.StopEnd, llm.Text("Forked.")))
	if stdout, stderr, code = e.run(t, "", "--fork", id[:13], "-p", "fork"); code != 0 || stdout != "Forked.\n" {
		t.Fatalf("fork: exit %d %q %s", code, stdout, stderr)
	}
	var forked string
	for _, p := range e.sessionFiles(t) {
		if p != files[0] {
			forked = p
		}
	}
	ff, err := session.Open(forked)
	if err != nil || ff.Header().ParentSession != id || len(ff.BuildContext().Messages) != 14 {
		t.Fatalf("fork file %s: %v", forked, err)
	}

	// An upstream error exits 1 with the message on stderr and is recorded.
	e.fake.push(fakeError{400, `{"type":"error","error":{"type":"invalid_request_error","message":"fake-model is not allowed here"}}`})
	stdout, stderr, code = e.run(t, "piped context", "-r", id[:13], "-p", "fail please")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "fake-model is not allowed here") {
		t.Fatalf("error run: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	reqs = e.fake.requests()
	msgs, _ = reqs[7]["messages"].([]any)
	last, _ := json.Marshal(msgs[len(msgs)-1])
	if !strings.Contains(string(last), `piped context\n\nfail please`) {
		t.Fatalf("piped stdin not prepended: %s", last)
	}
	data, _ := os.ReadFile(files[0])
	if !strings.Contains(string(data), `"stopReason":"error","errorMessage":"fake-model is not allowed here"`) {
		t.Fatalf("error turn not persisted:\n%s", data)
	}
}

func TestAgentE2EJSONModeAndNoSession(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	e.fake.push(asst(llm.StopEnd, llm.Text("hi there")))
	stdout, stderr, code := e.run(t, "", "--mode", "json", "--no-session", "--model", "fake/fake-model", "hello")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first["type"] != "session" || first["cwd"] != e.project {
		t.Fatalf("first line = %s", lines[0])
	}
	var types []string
	for _, l := range lines[1:] {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		if v["type"] != "message_update" {
			types = append(types, v["type"].(string))
		}
	}
	if got := strings.Join(types, " "); got != "agent_start turn_start message_start message_end message_start message_end turn_end agent_end" {
		t.Fatalf("events = %s", got)
	}
	if files := e.sessionFiles(t); len(files) != 0 {
		t.Fatalf("--no-session wrote %v", files)
	}
	_, stderr, code = e.run(t, "", "-p", "--model", "nope/x", "hi")
	if code != 1 || !strings.Contains(stderr, `Model "nope/x" not found`) {
		t.Fatalf("unknown model: exit %d, %q", code, stderr)
	}
	_, stderr, code = e.run(t, "", "-p")
	if code != 1 || !strings.Contains(stderr, "No prompt provided") {
		t.Fatalf("empty prompt: exit %d, %q", code, stderr)
	}
	// @path arguments are attached to the first message.
	_ = os.WriteFile(filepath.Join(e.project, "notes.txt"), []byte("remember the milk\n"), 0o644)
	e.fake.push(asst(llm.StopEnd, llm.Text("noted")))
	if out, stderr, code := e.run(t, "", "-p", "--no-session", "--model", "fake/fake-model", "@notes.txt", "summarise"); code != 0 || out != "noted\n" {
		t.Fatalf("@file: exit %d %q %s", code, out, stderr)
	}
	reqs := e.fake.requests()
	lastReq, _ := json.Marshal(reqs[len(reqs)-1]["messages"])
	if !strings.Contains(string(lastReq), `\u003cfile path=\"notes.txt\"\u003e\nremember the milk\n\u003c/file\u003e\nsummarise`) {
		t.Fatalf("attachment not in the first message: %s", lastReq)
	}
	if _, stderr, code := e.run(t, "", "-p", "--no-session", "--model", "fake/fake-model", "@missing.txt", "x"); code != 1 || !strings.Contains(stderr, "File not found: missing.txt") {
		t.Fatalf("@missing: exit %d %q", code, stderr)
	}

	// --resume of a missing path starts a new session there.
	target := filepath.Join(t.TempDir(), "mine.jsonl")
	e.fake.push(asst(llm.StopEnd, llm.Text("new")))
	if _, stderr, code := e.run(t, "", "-r", target, "-p", "--model", "fake/fake-model", "hi"); code != 0 {
		t.Fatalf("resume path: exit %d %s", code, stderr)
	}
	if sf, err := session.Open(target); err != nil || len(sf.BuildContext().Messages) != 2 {
		t.Fatalf("resume path: %v", err)
	}
	stdout, _, code = e.run(t, "", "--list-models", "fake/")
	if code != 0 || !strings.HasPrefix(stdout, "fake/fake-model") || strings.Count(stdout, "\n") != 1 ||
		!strings.Contains(stdout, "anthropic-messages") || !strings.Contains(stdout, "200000") {
		t.Fatalf("--list-models fake/: exit %d\n%s", code, stdout)
	}
	stdout, _, _ = e.run(t, "", "--list-models")
	if !strings.Contains(stdout, "anthropic/claude-3-haiku-20240307") || !strings.Contains(stdout, "fake/fake-model") {
		t.Fatalf("--list-models lacks bundled or custom models")
	}
}

func TestAgentE2ESIGINTExits130WithTheSessionFlushed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	hang := fakeHang{started: make(chan struct{})}
	e.fake.push(hang)
	cmd := exec.Command(binary(t), "-p", "--model", "fake/fake-model", "wait for it")
	cmd.Dir = e.project
	cmd.Env = []string{"HOME=" + e.home, "PATH=" + os.Getenv("PATH"), "FAKE_PROVIDER_KEY=k"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hang.started:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the request never reached the upstream")
	}
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit = %v, stderr %q", err, stderr.String())
	}
	files := e.sessionFiles(t)
	if len(files) != 1 {
		t.Fatalf("session files = %v", files)
	}
	data, _ := os.ReadFile(files[0])
	if !strings.Contains(string(data), `"stopReason":"aborted","errorMessage":"Request was aborted"`) {
		t.Fatalf("aborted turn not flushed:\n%s", data)
	}
}

// BenchmarkStartToFirstRequest is process start → first upstream request
// of `omp -p` with a models.yml provider; the target is ≤ 30 ms.
func BenchmarkStartToFirstRequest(b *testing.B) {
	bin := binary(b)
	home, project := b.TempDir(), b.TempDir()
	arrived := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- time.Now()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"stop"}}`)
	}))
	defer srv.Close()
	agentDir := filepath.Join(home, ".omp", "agent")
	_ = os.MkdirAll(agentDir, 0o700)
	_ = os.WriteFile(filepath.Join(agentDir, "models.yml"), []byte("providers:\n  fake:\n    baseUrl: "+srv.URL+
		"\n    apiKey: k\n    api: anthropic-messages\n    models:\n      - id: m\n"), 0o600)
	var total time.Duration
	for b.Loop() {
		cmd := exec.Command(bin, "-p", "--no-session", "--model", "fake/m", "hi")
		cmd.Dir = project
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		at := <-arrived
		_ = cmd.Wait()
		total += at.Sub(start)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-to-request")
}

// TestAgentE2EOpenAIWires runs the same tool loop against Chat Completions
// and Responses fakes: the loop is provider-neutral.
func TestAgentE2EOpenAIWires(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	for _, wire := range []string{llm.APIOpenAIChat, llm.APIOpenAIResponses} {
		t.Run(wire, func(t *testing.T) {
			e := newE2EWire(t, wire)
			e.fake.push(
				asst(llm.StopToolUse, call("call_1", "write", map[string]string{"path": "a.txt", "content": "one\n"})),
				asst(llm.StopToolUse, call("call_2", "bash", map[string]string{"command": "cat a.txt"})),
				asst(llm.StopToolUse, call("call_3", "edit", map[string]string{"path": "a.txt", "old_text": "one", "new_text": "two"})),
				asst(llm.StopEnd, llm.Text("Edited.")),
			)
			stdout, stderr, code := e.run(t, "", "-p", "--model", "fake/fake-model", "go")
			if code != 0 || stdout != "Edited.\n" {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
			}
			if got, _ := os.ReadFile(filepath.Join(e.project, "a.txt")); string(got) != "two\n" {
				t.Fatalf("a.txt = %q", got)
			}
			reqs := e.fake.requests()
			if len(reqs) != 4 || e.fake.keys[0] != "sk-fake-123" {
				t.Fatalf("requests %d keys %v", len(reqs), e.fake.keys)
			}
			third, _ := json.Marshal(reqs[2])
			if !strings.Contains(string(third), `one\\n`) {
				t.Fatalf("third request lacks the bash output: %s", third)
			}
			files := e.sessionFiles(t)
			if len(files) != 1 {
				t.Fatalf("session files = %v", files)
			}
			sf, err := session.Open(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if n := len(sf.BuildContext().Messages); n != 8 {
				t.Fatalf("session messages = %d", n)
			}
		})
	}
}

// TestAgentE2EBrokerMode: with OMP_AUTH_BROKER_URL set, the key of a
// built-in provider comes from the broker's snapshot, and the
// provider's base URL from models.yml.
func TestAgentE2EBrokerMode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	b := startBroker(t, "")
	b.upload(t, apiKeyCred("anthropic", "sk-ant-api03-broker-held"))
	e.anthropicAt(t, e.fake.srv.URL)
	e.fake.push(asst(llm.StopEnd, llm.Text("from the broker's key")))
	cmd := exec.Command(binary(t), "-p", "--no-session", "--model", "anthropic/claude-3-haiku-20240307", "hi")
	cmd.Dir = e.project
	cmd.Env = []string{"HOME=" + e.home, "PATH=" + os.Getenv("PATH"), "OMP_AUTH_BROKER_URL=" + b.url, "OMP_AUTH_BROKER_TOKEN=" + b.token,
		"OMP_APP_NAME= robot "}
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("omp: %v\n%s", err, stderr)
	}
	if string(out) != "from the broker's key\n" || len(e.fake.keys) != 1 || e.fake.keys[0] != "sk-ant-api03-broker-held" {
		t.Fatalf("stdout %q, upstream keys %v", out, e.fake.keys)
	}
	// The turn's burn reached the broker before exit, under
	// the install id the run created and OMP_APP_NAME trimmed.
	id, err := os.ReadFile(filepath.Join(e.home, ".omp", "install-id"))
	if err != nil {
		t.Fatalf("install id: %v", err)
	}
	u, err := b.client.UsageClients(context.Background(), 0)
	if err != nil || len(u.Clients) != 1 || u.Clients[0].InstallID != strings.TrimSpace(string(id)) ||
		len(u.Clients[0].Providers) != 1 || u.Clients[0].Providers[0].App != "robot" ||
		u.Clients[0].Providers[0].InputTokens != 10 || u.Clients[0].Providers[0].OutputTokens != 5 {
		t.Fatalf("broker clients %+v (%v), want install %s app robot with 10 in / 5 out", u.Clients, err, id)
	}
	// The agent named the broker credential that served the turn.
	if p := u.Clients[0].Providers[0]; p.CredentialID == 0 || p.Account != "api_key #"+strconv.FormatInt(p.CredentialID, 10) {
		t.Fatalf("turn not attributed to the broker's key: %+v", p)
	}

	// A broker URL without a token is a hard error naming the token file.
	cmd = exec.Command(binary(t), "-p", "--no-session", "--model", "anthropic/claude-3-haiku-20240307", "hi")
	cmd.Dir = e.project
	cmd.Env = []string{"HOME=" + e.home, "PATH=" + os.Getenv("PATH"), "OMP_AUTH_BROKER_URL=" + b.url}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "no bearer token is available") {
		t.Fatalf("missing token: %v, %q", err, stderr.String())
	}
}

// TestAgentE2EKeysAndSessionDir: the key ladder (--api-key beats the
// provider's environment variable) for a built-in provider retargeted by
// models.yml, and --session-dir for create and -c.
func TestAgentE2EKeysAndSessionDir(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	e.anthropicAt(t, e.fake.srv.URL)
	sdir := filepath.Join(t.TempDir(), "my-sessions")
	run := func(extraEnv []string, args ...string) (string, string, int) {
		cmd := exec.Command(binary(t), args...)
		cmd.Dir = e.project
		cmd.Env = append([]string{"HOME=" + e.home, "PATH=" + os.Getenv("PATH")}, extraEnv...)
		var o, er bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &er
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return o.String(), er.String(), code
	}
	model := "anthropic/claude-3-haiku-20240307"
	e.fake.push(asst(llm.StopEnd, llm.Text("one")), asst(llm.StopEnd, llm.Text("two")))
	if out, stderr, code := run([]string{"ANTHROPIC_API_KEY=sk-ant-api03-from-env"}, "-p", "--session-dir", sdir, "--model", model, "hi"); code != 0 || out != "one\n" {
		t.Fatalf("env key: exit %d %q %s", code, out, stderr)
	}
	if out, stderr, code := run([]string{"ANTHROPIC_API_KEY=sk-ant-api03-from-env"}, "-p", "-c", "--session-dir", sdir, "--api-key", "sk-ant-api03-from-flag", "again"); code != 0 || out != "two\n" {
		t.Fatalf("flag key: exit %d %q %s", code, out, stderr)
	}
	if got := strings.Join(e.fake.keys, ","); got != "sk-ant-api03-from-env,sk-ant-api03-from-flag" {
		t.Fatalf("upstream keys = %s", got)
	}
	files, _ := filepath.Glob(filepath.Join(sdir, "*.jsonl"))
	if len(files) != 1 || len(e.sessionFiles(t)) != 0 {
		t.Fatalf("--session-dir files %v, default dir %v", files, e.sessionFiles(t))
	}
	if reqs := e.fake.requests(); len(reqs[1]["messages"].([]any)) != 3 {
		t.Fatalf("-c with --session-dir did not continue: %v", reqs[1]["messages"])
	}
	if _, stderr, code := run(nil, "-p", "--no-session", "--model", model, "hi"); code != 1 || !strings.Contains(stderr, `No API key for provider "anthropic"`) {
		t.Fatalf("no key: exit %d %q", code, stderr)
	}
}

// TestAgentE2EBrokerRefreshAfter401: the provider rejects the broker's
// OAuth access token once; the agent has the broker refresh it (one token
// request upstream of the broker) and the turn succeeds with the new one.
func TestAgentE2EBrokerRefreshAfter401(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	var grants atomic.Int32
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		grants.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"acc-fresh","refresh_token":"r2","expires_in":3600,"token_type":"Bearer"}`)
	}))
	t.Cleanup(tokens.Close)
	dead := "http://" + closedAddr(t)
	b := startBrokerURLs(t, "", func(p, kind string) string {
		if kind == "tokenUrl" {
			return tokens.URL
		}
		return dead
	})
	b.upload(t, oauthCred("anthropic", "a@example.com", "r1"))
	e.anthropicAt(t, e.fake.srv.URL)
	e.fake.push(fakeError{401, `{"type":"error","error":{"type":"authentication_error","message":"invalid bearer token"}}`},
		asst(llm.StopEnd, llm.Text("after the refresh")))
	out, stderr, err := e.brokerPrint(t, b)
	if err != nil {
		t.Fatalf("omp: %v\n%s", err, stderr.String())
	}
	if string(out) != "after the refresh\n" || grants.Load() != 1 || strings.Join(e.fake.keys, ",") != "acc-r1,acc-fresh" {
		t.Fatalf("stdout %q, token grants %d, upstream credentials %v", out, grants.Load(), e.fake.keys)
	}
	if strings.Contains(stderr.String(), "acc-") {
		t.Errorf("a token reached stderr: %s", stderr.String())
	}
}

// TestAgentE2EUsageLimitMovesToAnotherAccount: in broker mode a 429 that
// reads as a usage limit blocks the session's account — the block reaches
// the broker for the whole fleet — and the turn is retried at once on the
// other account.
func TestAgentE2EUsageLimitMovesToAnotherAccount(t *testing.T) {
	e, stderr, creds := failoverToSibling(t, fakeError{429, `{"type":"error","error":{"type":"rate_limit_error","message":"usage_limit_reached: your usage limit has been reached"}}`})
	if strings.Contains(stderr, "auto_retry") {
		t.Fatalf("stderr: %s", stderr)
	}
	// The limited account is blocked at the broker for the fleet.
	blocked := 0
	for _, en := range creds {
		if len(en.Blocks) > 0 {
			blocked++
			if en.Credential.Access != e.fake.keys[0] {
				t.Fatalf("blocked %s, but the limited request used another token", en.Credential.Email)
			}
		}
	}
	if blocked != 1 {
		t.Fatalf("%d blocked credentials at the broker, want 1", blocked)
	}
}

// failoverToSibling runs `omp -p` in broker mode with two anthropic
// accounts, the first request answered by fail and the retry by a text,
// and checks the turn was answered by the other account with no refresh
// token on stderr. It returns the run's stderr and the broker's snapshot
// credentials for the caller's checks of the block.
func failoverToSibling(t *testing.T, fail fakeError) (*e2eEnv, string, []vault.Entry) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	b := startBroker(t, "")
	b.upload(t, oauthCred("anthropic", "alice@example.com", "rt-alice"), oauthCred("anthropic", "bob@example.com", "rt-bob"))
	e.anthropicAt(t, e.fake.srv.URL)
	e.fake.push(fail, asst(llm.StopEnd, llm.Text("answered by the other account")))
	out, stderr, err := e.brokerPrint(t, b)
	if err != nil || string(out) != "answered by the other account\n" {
		t.Fatalf("omp: %v, stdout %q\n%s", err, out, stderr.String())
	}
	if len(e.fake.keys) != 2 || e.fake.keys[0] == e.fake.keys[1] {
		t.Fatalf("upstream credentials %v: want two different accounts", e.fake.keys)
	}
	if strings.Contains(stderr.String(), "rt-") {
		t.Fatalf("a refresh token reached stderr: %s", stderr.String())
	}
	res, err := b.client.Snapshot(context.Background(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return e, stderr.String(), res.Snapshot.Credentials
}

// anthropicAt points the anthropic provider at base (models.yml).
func (e *e2eEnv) anthropicAt(t *testing.T, base string) {
	t.Helper()
	yml := "providers:\n  anthropic:\n    baseUrl: " + base + "\n"
	if err := os.WriteFile(filepath.Join(e.home, ".omp", "agent", "models.yml"), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
}

// brokerPrint runs `omp -p hi` with an anthropic model in broker mode on b.
func (e *e2eEnv) brokerPrint(t *testing.T, b *testBroker) ([]byte, *bytes.Buffer, error) {
	t.Helper()
	cmd := exec.Command(binary(t), "-p", "--no-session", "--model", "anthropic/claude-3-haiku-20240307", "hi")
	cmd.Dir = e.project
	cmd.Env = []string{"HOME=" + e.home, "PATH=" + os.Getenv("PATH"), "OMP_AUTH_BROKER_URL=" + b.url, "OMP_AUTH_BROKER_TOKEN=" + b.token}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return out, &stderr, err
}

// TestAgentE2EBrokerDownBootsFromTheSnapshotCache: a run with the broker up
// writes the snapshot cache; with the broker stopped the next run boots
// from it and answers with the cached credential.
func TestAgentE2EBrokerDownBootsFromTheSnapshotCache(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	b := startBroker(t, "")
	b.upload(t, oauthCred("anthropic", "a@example.com", "r1"))
	e.anthropicAt(t, e.fake.srv.URL)
	e.fake.push(asst(llm.StopEnd, llm.Text("live")), asst(llm.StopEnd, llm.Text("from the cache")))
	if out, stderr, err := e.brokerPrint(t, b); err != nil || string(out) != "live\n" {
		t.Fatalf("broker up: %v, stdout %q\n%s", err, out, stderr.String())
	}
	path := filepath.Join(e.home, ".omp", "cache", "auth-broker-snapshot.enc")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot cache after a live boot: %v %v", fi, err)
	}
	b.stop()
	start := time.Now()
	out, stderr, err := e.brokerPrint(t, b)
	if err != nil || string(out) != "from the cache\n" {
		t.Fatalf("broker down with a fresh cache: %v, stdout %q\n%s", err, out, stderr.String())
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("run took %v", took)
	}
	if strings.Join(e.fake.keys, ",") != "acc-r1,acc-r1" {
		t.Errorf("upstream credentials %v", e.fake.keys)
	}
	if strings.Contains(stderr.String(), "acc-") || strings.Contains(stderr.String(), b.token) {
		t.Errorf("a secret reached stderr: %s", stderr.String())
	}
}
