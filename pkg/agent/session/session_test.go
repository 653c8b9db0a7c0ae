package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/llm"
)

func copyFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenReferenceFileKeepsEveryLineOnAppend(t *testing.T) {
	p := copyFixture(t, "reference.jsonl")
	before, _ := os.ReadFile(p)
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if h := f.Header(); h.ID != "0196b3c2-7d1e-7c4a-9a51-2f7e0c1d9b20" || h.Cwd != "/home/ada/src/app" || h.Version != 3 {
		t.Fatalf("header = %+v", h)
	}
	if f.Leaf() != "f0000001" {
		t.Fatalf("leaf = %q, want the last entry", f.Leaf())
	}
	e, err := f.AppendMessage(NewMessage(&llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("again")}, Timestamp: 5}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if e.ParentID != "f0000001" {
		t.Fatalf("parentId = %q", e.ParentID)
	}
	after, _ := os.ReadFile(p)
	if !bytes.HasPrefix(after, before) {
		t.Fatalf("append rewrote existing lines")
	}
	added := strings.TrimSuffix(string(after[len(before):]), "\n")
	if strings.Contains(added, "\n") {
		t.Fatalf("append wrote more than one line: %q", added)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(added), &got); err != nil {
		t.Fatal(err)
	}
	if got["type"] != "message" || got["parentId"] != "f0000001" || len(got["id"].(string)) != 8 {
		t.Fatalf("appended line = %s", added)
	}
}

func TestReferenceContext(t *testing.T) {
	f, err := Open(copyFixture(t, "reference.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := f.BuildContext()
	if ctx.Model != "anthropic/claude-sonnet-4-5" || ctx.ThinkingLevel != "off" {
		t.Fatalf("replay: model %q level %q", ctx.Model, ctx.ThinkingLevel)
	}
	var roles []string
	for _, m := range ctx.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,toolResult,assistant" {
		t.Fatalf("roles = %s", got)
	}
	msgs := LLMMessages(ctx.Messages)
	if msgs[0].Content[0].Text != "fix the build" || msgs[1].Content[0].Name != "bash" || msgs[3].TextContent() != "Build fixed." {
		t.Fatalf("messages = %+v", msgs)
	}
	if msgs[1].Usage.Input != 100 || msgs[1].StopReason != llm.StopToolUse {
		t.Fatalf("assistant metadata lost: %+v", msgs[1])
	}
}

func TestMigrationRewriteKeepsUnknownLinesVerbatim(t *testing.T) {
	data, _ := os.ReadFile(filepath.Join("testdata", "reference.jsonl"))
	v2 := bytes.Replace(data, []byte(`"version":3`), []byte(`"version":2`), 1)
	v2 = append(v2, []byte(`{"type":"message","id":"h1","parentId":"f0000001","timestamp":"2026-02-16T10:20:39.000Z","message":{"role":"hookMessage","customType":"x","content":"hi","display":true,"timestamp":1}}`+"\n")...)
	p := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, v2, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(p)
	for _, keep := range []string{
		`{"type":"future_entry_kind","id":"d0000001","parentId":"c1d2e3f4","timestamp":"2026-02-16T10:20:36.000Z","payload":{"x":[1,2,3]},  "spacing" : "kept"}` + "\n",
		"this line is not json\n",
		`"resolvedModelIsFallback":false`,
	} {
		if !bytes.Contains(after, []byte(keep)) {
			t.Errorf("rewrite lost %q", keep)
		}
	}
	if !bytes.Contains(after, []byte(`"version":3`)) || bytes.Contains(after, []byte(`hookMessage`)) {
		t.Fatalf("not migrated:\n%s", after)
	}
	msgs := f.BuildContext().Messages
	if last := msgs[len(msgs)-1]; last.Role != RoleCustom || last.LLM == nil || last.LLM.Content[0].Text != "hi" {
		t.Fatalf("hookMessage not a custom message: %+v", last)
	}
}

func TestMigrateV1ChainsIDs(t *testing.T) {
	v1 := `{"type":"session","id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}
{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}
{"type":"message","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"two","timestamp":2}}
{"type":"compaction","timestamp":"2026-01-01T00:00:03.000Z","summary":"S","firstKeptEntryIndex":1,"tokensBefore":9}
{"type":"message","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":"three","timestamp":4}}
`
	f, err := Parse([]byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	es := f.Entries()
	if len(es) != 4 || es[0].ParentID != "" || es[1].ParentID != es[0].ID || es[3].ParentID != es[2].ID || f.Leaf() != es[3].ID {
		t.Fatalf("chain wrong: %+v", es)
	}
	var c Compaction
	_ = es[2].Decode(&c)
	if c.FirstKeptEntryID != es[1].ID {
		t.Fatalf("firstKeptEntryId = %q, want %q", c.FirstKeptEntryID, es[1].ID)
	}
	got := texts(LLMMessages(f.BuildContext().Messages))
	want := []string{compactionPrefix + "S" + compactionSuffix, "two", "three"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("context = %q", got)
	}
}

func texts(msgs []llm.Message) []string {
	var out []string
	for i := range msgs {
		out = append(out, msgs[i].TextContent())
	}
	return out
}

func TestTruncatedLastLineIsCutOnAppend(t *testing.T) {
	data, _ := os.ReadFile(filepath.Join("testdata", "reference.jsonl"))
	p := filepath.Join(t.TempDir(), "s.jsonl")
	broken := append(bytes.Clone(data), `{"type":"message","id":"zz","parentId":"f0000001","mess`...)
	if err := os.WriteFile(p, broken, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if f.Leaf() != "f0000001" {
		t.Fatalf("leaf = %q", f.Leaf())
	}
	if _, err := f.AppendThinkingLevel("high"); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(p)
	if !bytes.HasPrefix(after, data) || bytes.Contains(after, []byte(`"mess`+"\n")) {
		t.Fatalf("truncated line not cut:\n%s", after[len(data)-20:])
	}
	g, err := Open(p)
	if err != nil || g.BuildContext().ThinkingLevel != "high" {
		t.Fatalf("reopen: %v", err)
	}
}

func TestLastLineWithoutNewline(t *testing.T) {
	data, _ := os.ReadFile(filepath.Join("testdata", "reference.jsonl"))
	p := filepath.Join(t.TempDir(), "s.jsonl")
	_ = os.WriteFile(p, bytes.TrimSuffix(data, []byte("\n")), 0o600)
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AppendThinkingLevel("low"); err != nil {
		t.Fatal(err)
	}
	g, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(g.Entries()); n != len(f.Entries()) {
		t.Fatalf("entries after reopen = %d, want %d", n, len(f.Entries()))
	}
}

func TestBadHeaderIsRefusedAndUntouched(t *testing.T) {
	for name, content := range map[string]string{
		"not json":   "hello\n",
		"no session": `{"type":"message","id":"a","parentId":null}` + "\n",
		"numeric id": `{"type":"session","id":5,"cwd":"/"}` + "\n",
		"empty":      "",
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.jsonl")
			_ = os.WriteFile(p, []byte(content), 0o600)
			_, err := Open(p)
			var he *HeaderError
			if !errors.As(err, &he) || !errors.Is(err, ErrNotSession) {
				t.Fatalf("err = %v", err)
			}
			if !strings.Contains(err.Error(), "the session header is missing or malformed. The file was not modified.") {
				t.Fatalf("text = %q", err)
			}
			if got, _ := os.ReadFile(p); string(got) != content {
				t.Fatal("file modified")
			}
			if MostRecent(filepath.Dir(p)) != "" {
				t.Fatal("-c would pick a bad file")
			}
		})
	}
}

func TestNewSessionWrittenOnFirstAssistantMessage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions", "-proj")
	clock := time.Date(2026, 2, 16, 10, 20, 30, 0, time.UTC)
	f, err := Create(dir, "/home/ada/proj", Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(f.Path()), "2026-02-16T10-20-30-000Z_") || !strings.HasSuffix(f.Path(), f.Header().ID+".jsonl") {
		t.Fatalf("path = %s", f.Path())
	}
	_, _ = f.AppendModelChange("anthropic", "claude", "")
	_, _ = f.AppendThinkingLevel("medium")
	_, _ = f.AppendMessage(NewMessage(&llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("hi")}}, nil))
	if _, err := os.Stat(f.Path()); !os.IsNotExist(err) {
		t.Fatalf("written before the first assistant message: %v", err)
	}
	_, _ = f.AppendMessage(NewMessage(&llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("hello")}, StopReason: llm.StopEnd}, nil))
	data, err := os.ReadFile(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("lines = %d:\n%s", len(lines), data)
	}
	if !strings.HasPrefix(lines[0], `{"type":"session","version":3,"id":"`) {
		t.Fatalf("header = %s", lines[0])
	}
	if !strings.Contains(lines[1], `"parentId":null`) || !strings.Contains(lines[1], `"model":"anthropic/claude","provider":"anthropic","modelId":"claude"`) {
		t.Fatalf("model_change = %s", lines[1])
	}
	g, err := Open(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	ctx := g.BuildContext()
	if ctx.Model != "anthropic/claude" || ctx.ThinkingLevel != "medium" || len(ctx.Messages) != 2 {
		t.Fatalf("reopened context = %+v", ctx)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode = %v", st.Mode())
	}
}

func TestInMemorySessionWritesNothing(t *testing.T) {
	f, err := Create("", "/x", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AppendMessage(NewMessage(&llm.Message{Role: llm.RoleAssistant}, nil)); err != nil {
		t.Fatal(err)
	}
	if f.Path() != "" || f.ArtifactsDir() != "" || f.Persist() != nil {
		t.Fatal("in-memory session touched the disk")
	}
}

// build writes a session from entry lines (header added) and parses it.
func build(t *testing.T, lines ...string) *File {
	t.Helper()
	all := `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}` + "\n" + strings.Join(lines, "\n") + "\n"
	f, err := Parse([]byte(all))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func msg(id, parent, role, text string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	m := map[string]any{"role": role, "content": []any{map[string]any{"type": "text", "text": text}}, "timestamp": 1}
	if role == "assistant" {
		m["stopReason"] = "stop"
	}
	b, _ := json.Marshal(m)
	return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-01-01T00:00:01.000Z","message":` + string(b) + `}`
}

func TestBuildContextTable(t *testing.T) {
	tests := []struct {
		name   string
		lines  []string
		branch string
		want   []string
	}{
		{
			name:  "linear",
			lines: []string{msg("a", "", "user", "u1"), msg("b", "a", "assistant", "a1")},
			want:  []string{"u1", "a1"},
		},
		{
			name:   "branch follows the leaf only",
			lines:  []string{msg("a", "", "user", "u1"), msg("b", "a", "assistant", "a1"), msg("c", "a", "assistant", "other")},
			branch: "b",
			want:   []string{"u1", "a1"},
		},
		{
			name: "compaction keeps from firstKeptEntryId",
			lines: []string{msg("a", "", "user", "old"), msg("b", "a", "assistant", "kept"), msg("c", "b", "user", "kept2"),
				`{"type":"compaction","id":"d","parentId":"c","timestamp":"2026-01-01T00:00:02.000Z","summary":"SUM","firstKeptEntryId":"b","tokensBefore":100,"tokensAfter":5,"method":"soft"}`,
				msg("e", "d", "user", "new")},
			want: []string{compactionPrefix + "SUM" + compactionSuffix, "kept", "kept2", "new"},
		},
		{
			name: "compaction with a missing firstKeptEntryId",
			lines: []string{msg("a", "", "user", "old"),
				`{"type":"compaction","id":"d","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","summary":"SUM","firstKeptEntryId":"gone","tokensBefore":1}`,
				msg("e", "d", "user", "new")},
			want: []string{compactionPrefix + "SUM" + compactionSuffix, "new"},
		},
		{
			name: "branch summary and custom message",
			lines: []string{msg("a", "", "user", "u1"),
				`{"type":"branch_summary","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","fromId":"a","summary":"BR"}`,
				`{"type":"custom_message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:03.000Z","customType":"handoff","content":"CM","display":false}`,
				`{"type":"custom","id":"d","parentId":"c","timestamp":"2026-01-01T00:00:03.000Z","customType":"user_todo_edit","data":{}}`,
				`{"type":"label","id":"e","parentId":"d","timestamp":"2026-01-01T00:00:03.000Z","targetId":"a","label":"x"}`},
			want: []string{"u1", branchPrefix + "BR" + branchSuffix, "CM"},
		},
		{
			name: "unknown role and unknown type contribute nothing",
			lines: []string{msg("a", "", "user", "u1"), msg("b", "a", "pythonExecution", "py"),
				`{"type":"future","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:03.000Z"}`, msg("d", "c", "user", "u2")},
			want: []string{"u1", "u2"},
		},
		{
			name: "reset boundary starts the context",
			lines: []string{msg("a", "", "user", "u1"),
				`{"type":"reset_boundary","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:03.000Z"}`, msg("c", "b", "user", "u2")},
			want: []string{"u2"},
		},
		{
			name: "messages the batch decoder declines keep their place",
			lines: []string{msg("a", "", "user", "u1"),
				`{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","Content":"folded","timestamp":1}}`,
				`{"type":"message","id":"c","parentId":"b","timestamp":"t","message":{"role":"bashExecution","command":"ls","output":"o","exitCode":0,"timestamp":1}}`,
				`{"type":"message","id":"d","parentId":"c","timestamp":"t","message":[{"role":"user","content":"not a message object"}]}`,
				`{"type":"message","id":"e","parentId":"d","timestamp":"t"}`,
				msg("f", "e", "assistant", "a1")},
			want: []string{"u1", "folded", "Ran `ls`\n\n```\no\n```", "a1"},
		},
		{
			// As the reference reads a session file: a line that is not
			// valid JSON is no entry, so the chain through it ends there.
			name: "a line that does not parse is skipped",
			lines: []string{msg("a", "", "user", "u1"),
				`{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":tru}}`,
				msg("c", "b", "assistant", "a1")},
			want: []string{"a1"},
		},
		{
			name: "cycle guard",
			lines: []string{`{"type":"message","id":"a","parentId":"b","timestamp":"t","message":{"role":"user","content":"x","timestamp":1}}`,
				`{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"y","timestamp":1}}`},
			want: []string{"x", "y"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := build(t, tt.lines...)
			if tt.branch != "" {
				if err := f.Branch(tt.branch); err != nil {
					t.Fatal(err)
				}
			}
			got := texts(LLMMessages(f.BuildContext().Messages))
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestLLMMessagesRepairs(t *testing.T) {
	call := func(id string) llm.Content { return llm.ToolCall(id, "bash", json.RawMessage(`{}`)) }
	msgs := []Message{
		NewMessage(&llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("u")}}, nil),
		NewMessage(&llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{call("t1")}, StopReason: llm.StopError, ErrorMessage: "boom"}, nil),
		NewMessage(&llm.Message{Role: llm.RoleToolResult, ToolCallID: "t1", ToolName: "bash"}, nil),
		NewMessage(&llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{call("t2")}, StopReason: llm.StopToolUse}, nil),
	}
	out := LLMMessages(msgs)
	if len(out) != 3 || out[1].Content[0].ID != "t2" || out[2].ToolCallID != "t2" || !out[2].IsError || out[2].TextContent() != "No result provided" {
		t.Fatalf("repairs = %+v", out)
	}
}

func TestEncodeCwd(t *testing.T) {
	tests := []struct{ cwd, want string }{
		{"/home/ada", "-"},
		{"/home/ada/src/app", "-src-app"},
		{"/tmp/x/y", "-tmp-x-y"},
		{"/srv/data", "--srv-data--"},
		{"/home/adam", "--home-adam--"},
	}
	for _, tt := range tests {
		if got := EncodeCwd(tt.cwd, "/home/ada", "/tmp"); got != tt.want {
			t.Errorf("EncodeCwd(%q) = %q, want %q", tt.cwd, got, tt.want)
		}
	}
	if got := LegacyEncodeCwd("/home/ada/src"); got != "--home-ada-src--" {
		t.Errorf("legacy = %q", got)
	}
}

func TestMostRecentMergesBothEncodings(t *testing.T) {
	agent := t.TempDir()
	dirs := Dirs(agent, "/home/ada/app", "/home/ada")
	if len(dirs) != 2 {
		t.Fatalf("dirs = %v", dirs)
	}
	old := time.Now().Add(-time.Hour)
	for i, d := range dirs {
		_ = os.MkdirAll(d, 0o700)
		p := filepath.Join(d, "s.jsonl")
		_ = os.WriteFile(p, []byte(`{"type":"session","version":3,"id":"id`+string(rune('0'+i))+`","timestamp":"t","cwd":"/home/ada/app"}`+"\n"), 0o600)
		if i == 0 {
			_ = os.Chtimes(p, old, old)
		}
	}
	if got := MostRecent(dirs...); got != filepath.Join(dirs[1], "s.jsonl") {
		t.Fatalf("most recent = %s", got)
	}
}

func TestLargeStringTruncatedOnPersist(t *testing.T) {
	f, _ := Create("", "/x", Options{})
	big := strings.Repeat("é", maxStringChars+10)
	e, err := f.AppendMessage(NewMessage(&llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(big)}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	m := f.BuildContext().Messages[0]
	text := m.LLM.Content[0].Text
	if !strings.HasSuffix(text, truncatedNotice) || len([]rune(text)) != maxStringChars+len(truncatedNotice) {
		t.Fatalf("not truncated: %d runes, raw %d bytes", len([]rune(text)), len(e.Raw))
	}
}

func TestBreadcrumb(t *testing.T) {
	agent := t.TempDir()
	env := map[string]string{"KITTY_WINDOW_ID": "4", "TMUX_PANE": "%1 x"}
	id := TerminalID(func(k string) string { return env[k] })
	if id != "_1_x" {
		t.Fatalf("id = %q", id)
	}
	sess := filepath.Join(t.TempDir(), "s.jsonl")
	_ = os.WriteFile(sess, []byte("x"), 0o600)
	WriteBreadcrumb(agent, id, "/proj", sess)
	if got := ReadBreadcrumb(agent, id, "/proj"); got != sess {
		t.Fatalf("read = %q", got)
	}
	if ReadBreadcrumb(agent, id, "/other") != "" || ReadBreadcrumb(agent, "", "/proj") != "" {
		t.Fatal("breadcrumb used for another cwd or without a terminal")
	}
	_ = os.Remove(sess)
	if ReadBreadcrumb(agent, id, "/proj") != "" {
		t.Fatal("breadcrumb to a missing file used")
	}
	if TerminalID(func(string) string { return "" }) != "" {
		t.Fatal("terminal id without variables")
	}
}

func TestImagesGoToTheBlobStoreAndBack(t *testing.T) {
	dir := t.TempDir()
	blobs := filepath.Join(dir, "blobs")
	f, _ := Create(filepath.Join(dir, "s"), "/x", Options{})
	f.SetBlobsDir(blobs)
	png := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 400)
	data := base64.StdEncoding.EncodeToString(png)
	small := base64.StdEncoding.EncodeToString([]byte("tiny"))
	m := &llm.Message{Role: llm.RoleToolResult, ToolCallID: "t", ToolName: "read",
		Content: []llm.Content{llm.Text("Read image file [image/png]"), llm.Image("image/png", data), llm.Image("image/png", small)}}
	if _, err := f.AppendMessage(NewMessage(m, json.RawMessage(`{"k":1}`))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AppendMessage(NewMessage(&llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopEnd}, nil)); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(f.Path())
	sum := sha256.Sum256(png)
	ref := "blob:sha256:" + hex.EncodeToString(sum[:])
	if !bytes.Contains(raw, []byte(`"data":"`+ref+`"`)) || bytes.Contains(raw, []byte(data)) || !bytes.Contains(raw, []byte(small)) ||
		!bytes.Contains(raw, []byte(`"details":{"k":1}`)) {
		t.Fatalf("file:\n%s", raw)
	}
	if got, _ := os.ReadFile(filepath.Join(blobs, hex.EncodeToString(sum[:]))); !bytes.Equal(got, png) {
		t.Fatal("blob holds something else")
	}
	g, _ := Open(f.Path())
	g.SetBlobsDir(blobs)
	if img := g.BuildContext().Messages[0].LLM.Content[1]; img.Data != data {
		t.Fatalf("not rehydrated: %.40s", img.Data)
	}
	h, _ := Open(f.Path()) // no blob store: the reference stays
	if img := h.BuildContext().Messages[0].LLM.Content[1]; img.Data != ref {
		t.Fatalf("data = %.40s", img.Data)
	}
}

// The two fixtures were written by `make interop`'s agent step
// (scripts/interop-agent.sh): ref-then-go.jsonl started by the reference
// omp 18.1.21 (title slot, null thinking level, session_exit custom
// entries) and continued by ours; go-then-ref.jsonl the other way round.
func TestInteropFixtures(t *testing.T) {
	for name, want := range map[string][]string{
		"ref-then-go.jsonl": {"hello from the reference", "pong from fake upstream", "and from go", "pong from fake upstream"},
		"go-then-ref.jsonl": {"go wrote this first", "pong from fake upstream", "reference continues", "pong from fake upstream"},
	} {
		t.Run(name, func(t *testing.T) {
			p := copyFixture(t, name)
			before, _ := os.ReadFile(p)
			f, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			ctx := f.BuildContext()
			if got := texts(LLMMessages(ctx.Messages)); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("context = %q", got)
			}
			if ctx.Model != "fake/fake-model" || ctx.ThinkingLevel == "" {
				t.Fatalf("replay: %q %q", ctx.Model, ctx.ThinkingLevel)
			}
			if _, err := f.AppendThinkingLevel("high"); err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(p)
			if !bytes.HasPrefix(after, before) {
				t.Fatal("an append rewrote the file")
			}
		})
	}
}

func TestForkCopiesEverythingUnderANewHeader(t *testing.T) {
	src := copyFixture(t, "reference.jsonl")
	art := strings.TrimSuffix(src, ".jsonl")
	_ = os.MkdirAll(art, 0o700)
	_ = os.WriteFile(filepath.Join(art, "0.bash.log"), []byte("out"), 0o600)
	dir := filepath.Join(t.TempDir(), "forks")
	f, err := Fork(src, dir, "/new/cwd", nil)
	if err != nil {
		t.Fatal(err)
	}
	h := f.Header()
	if h.ParentSession != "0196b3c2-7d1e-7c4a-9a51-2f7e0c1d9b20" || h.ID == h.ParentSession || h.Cwd != "/new/cwd" {
		t.Fatalf("header = %+v", h)
	}
	orig, _ := os.ReadFile(src)
	forked, _ := os.ReadFile(f.Path())
	ol, fl := strings.Split(string(orig), "\n"), strings.Split(string(forked), "\n")
	if len(ol) != len(fl) || ol[0] != fl[0] || strings.Join(ol[2:], "\n") != strings.Join(fl[2:], "\n") {
		t.Fatalf("lines other than the header changed")
	}
	if got, _ := os.ReadFile(filepath.Join(f.ArtifactsDir(), "0.bash.log")); string(got) != "out" {
		t.Fatal("artifacts not copied")
	}
	g, err := Open(f.Path())
	if err != nil || g.Leaf() != "f0000001" || len(g.BuildContext().Messages) != 4 {
		t.Fatalf("reopen: %v", err)
	}
}
