package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/anthropic"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// windowFake is an Anthropic upstream with a small context window: a
// request whose body is over window tokens (4 bytes a token) fails with
// the provider's "prompt is too long" error; a summarisation request gets
// a summary; any other request gets the next step of a tool loop (calls
// bash until calls tool calls were made, then a final answer), with a
// usage that measures the request.
type windowFake struct {
	window, calls int

	mu        sync.Mutex
	made      int
	overflows int
	summaries []string // the prompts of summarisation requests
	after     []string // the first message of requests after a compaction
}

func (f *windowFake) serve(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	var body struct {
		System   []struct{ Text string } `json:"system"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(data, &body)
	tokens := len(data) / 4
	f.mu.Lock()
	defer f.mu.Unlock()
	if tokens > f.window {
		f.overflows++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: %d tokens > %d maximum"}}`, tokens, f.window)
		return
	}
	system := ""
	for _, s := range body.System {
		system += s.Text
	}
	var m llm.Message
	switch {
	case strings.Contains(system, "context summarization assistant"):
		f.summaries = append(f.summaries, string(body.Messages[0].Content))
		m = llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopEnd,
			Content: []llm.Content{llm.Text(fmt.Sprintf("## Current outcome\nSUMMARY-%d: printed blocks so far", len(f.summaries)))}}
	default:
		if len(body.Messages) > 0 && strings.Contains(string(body.Messages[0].Content), "SUMMARY-") {
			f.after = append(f.after, string(body.Messages[0].Content))
		}
		if f.made < f.calls {
			f.made++
			m = llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopToolUse, Content: []llm.Content{
				llm.ToolCall(fmt.Sprintf("toolu_%d", f.made), "bash", json.RawMessage(`{"command":"head -c 6000 /dev/zero | tr '\\0' x"}`))}}
		} else {
			m = llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopEnd, Content: []llm.Content{llm.Text("all done")}}
		}
	}
	m.Usage = llm.Usage{Input: int64(tokens), Output: 20}
	w.Header().Set("Content-Type", "text/event-stream")
	enc := anthropic.NewStreamEncoder("fake-model", "msg_1").Encode
	var buf []byte
	for ev := range llmtest.Replay(m, 64).Events() {
		buf = enc(buf[:0], &ev)
		_, _ = w.Write(buf)
	}
}

// TestAgentE2ECompaction runs the real omp against a model with a 12,000
// token window: a long tool loop overflows it, compacts by itself and
// finishes; a second invocation continues the session, crosses the
// threshold and compacts again, feeding the first summary in.
func TestAgentE2ECompaction(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	f := &windowFake{window: 12000, calls: 12}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	e := &e2eEnv{home: t.TempDir(), project: t.TempDir()}
	agentDir := filepath.Join(e.home, ".omp", "agent")
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		t.Fatal(err)
	}
	yml := fmt.Sprintf(`providers:
  fake:
    baseUrl: %s
    apiKey: FAKE_PROVIDER_KEY
    api: anthropic-messages
    auth: apiKey
    models:
      - id: fake-model
        contextWindow: 12000
        maxTokens: 2048
`, srv.URL)
	if err := os.WriteFile(filepath.Join(agentDir, "models.yml"), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}

	// 1. One prompt, twelve tool calls of ~1,500 tokens each: ~18,000
	// tokens in a 12,000-token window.
	stdout, stderr, code := e.run(t, "", "--mode", "json", "--model", "fake/fake-model", "print twelve blocks")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var starts, ends []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var v map[string]any
		_ = json.Unmarshal([]byte(l), &v)
		switch v["type"] {
		case "auto_compaction_start":
			starts = append(starts, v)
		case "auto_compaction_end":
			ends = append(ends, v)
		}
	}
	if len(starts) == 0 || len(starts) != len(ends) {
		t.Fatalf("compaction events: %d starts, %d ends\n%s", len(starts), len(ends), stderr)
	}
	for _, end := range ends {
		if end["result"] == nil || end["errorMessage"] != nil {
			t.Fatalf("compaction failed: %v", end)
		}
	}
	if !strings.Contains(stdout, `"text":"all done"`) || f.made != 12 {
		t.Fatalf("the run did not finish: %d calls made\n%s", f.made, stderr)
	}
	if f.overflows == 0 || starts[0]["reason"] != "overflow" {
		t.Fatalf("no overflow recovery: %d overflows, first reason %v", f.overflows, starts[0]["reason"])
	}
	if len(f.after) == 0 {
		t.Fatal("no request carried the summary after compacting")
	}
	files := e.sessionFiles(t)
	if len(files) != 1 {
		t.Fatalf("session files: %v", files)
	}
	sf, err := session.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	compactions := 0
	for _, en := range sf.Entries() {
		if en.Type == session.TypeCompaction {
			compactions++
		}
	}
	if compactions != len(ends) {
		t.Fatalf("%d compaction entries for %d compactions", compactions, len(ends))
	}
	if m := sf.BuildContext().Messages; m[0].Role != session.RoleCompactionSummary {
		t.Fatalf("reloaded context starts with %s", m[0].Role)
	}

	// 2. Continue the session: more blocks cross the threshold (10,200)
	// after the run; the next summary is an update of the previous one.
	f.mu.Lock()
	f.calls += 4
	nSummaries := len(f.summaries)
	f.mu.Unlock()
	stdout, stderr, code = e.run(t, "", "-c", "-p", "print four more")
	if code != 0 || strings.TrimSpace(stdout) != "all done" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if len(f.summaries) <= nSummaries {
		t.Fatal("the continued session did not compact")
	}
	fed := false
	for _, s := range f.summaries[nSummaries:] {
		// JSON-escaped: \u003cprevious-summary\u003e\n## Current outcome…
		fed = fed || strings.Contains(s, `previous-summary\u003e\n## Current outcome\nSUMMARY-`)
	}
	if !fed {
		for _, s := range f.summaries[nSummaries:] {
			t.Logf("summary prompt: %.300s … %s", s, s[max(len(s)-300, 0):])
		}
		sf, _ := session.Open(files[0])
		for _, en := range sf.Entries() {
			if en.Type == session.TypeCompaction {
				t.Logf("compaction: %.600s", en.Raw)
			}
		}
		t.Fatal("the previous summary was not fed in")
	}
	if files := e.sessionFiles(t); len(files) != 1 {
		t.Fatalf("session files after -c: %v", files)
	}
}
