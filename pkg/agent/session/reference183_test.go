package session

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

// TestReference183FileRoundTrips: a session file with what the reference
// writes since 18.2 — session_init with compactionThreshold, an assistant
// message with requestBodyReadTimeoutFullReplay, the new custom and
// custom_message types, and agent_end / retry_fallback_applied records
// (unknown types here) — keeps every line byte for byte when a message is
// appended and when the file is written anew (fork), and still builds its
// context.
func TestReference183FileRoundTrips(t *testing.T) {
	p := copyFixture(t, "reference-18.3.jsonl")
	before, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if h := f.Header(); h.Version != 3 || CurrentVersion != 3 {
		t.Fatalf("header = %+v", h)
	}
	if f.Leaf() != "g000000b" {
		t.Fatalf("leaf = %q, want the last record", f.Leaf())
	}
	ctx := f.BuildContext()
	var kinds []string
	for _, m := range ctx.Messages {
		var w struct {
			CustomType string `json:"customType"`
		}
		if err := json.Unmarshal(m.Raw, &w); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, m.Role+":"+w.CustomType)
	}
	// session_init and the custom entries are state, not context; the
	// custom messages are context whether displayed or not.
	want := "user:,assistant:,custom:anthropic-usage-wrap-up,custom:collab-entry-too-large,custom:session-agent-notice"
	if got := strings.Join(kinds, ","); got != want || ctx.Model != "openai/gpt-5.5" {
		t.Fatalf("context = %s (model %q), want %s", got, ctx.Model, want)
	}

	e, err := f.AppendMessage(NewMessage(&llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("and now?")}, Timestamp: 5}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if e.ParentID != "g000000b" {
		t.Fatalf("appended under %q", e.ParentID)
	}
	after, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, before) || bytes.Count(after[len(before):], []byte("\n")) != 1 {
		t.Fatalf("append changed the existing lines:\n%s", after)
	}

	g, err := Fork(p, filepath.Join(t.TempDir(), "forks"), "/home/ada/src/app", nil)
	if err != nil {
		t.Fatal(err)
	}
	forked, err := os.ReadFile(g.Path())
	if err != nil {
		t.Fatal(err)
	}
	ol, fl := strings.Split(string(after), "\n"), strings.Split(string(forked), "\n")
	if len(ol) != len(fl) || strings.Join(ol[1:], "\n") != strings.Join(fl[1:], "\n") {
		t.Fatalf("a rewrite changed lines other than the header:\n%s", forked)
	}
}
