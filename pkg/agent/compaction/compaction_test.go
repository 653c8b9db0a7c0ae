package compaction

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

func TestThreshold(t *testing.T) {
	d := Defaults()
	with := func(f func(*Settings)) Settings { s := d; f(&s); return s }
	for _, c := range []struct {
		name   string
		window int
		s      Settings
		want   int
	}{
		{"15 % wins on a large window", 200000, d, 170000},
		{"reserve wins", 100000, d, 83616},
		{"small window: reserve capped at 15 %", 16000, d, 13600},
		{"thresholdTokens", 100000, with(func(s *Settings) { s.ThresholdTokens = 5000 }), 5000},
		{"thresholdTokens beats percent", 100000, with(func(s *Settings) { s.ThresholdTokens = 5000; s.ThresholdPercent = 10 }), 5000},
		{"thresholdPercent", 100000, with(func(s *Settings) { s.ThresholdPercent = 50 }), 50000},
		{"clamped below window-1024", 100000, with(func(s *Settings) { s.ThresholdTokens = 500000 }), 98976},
		{"clamped to 1", 1000, d, 1},
		{"unset reserve uses the default", 100000, with(func(s *Settings) { s.ReserveTokens = 0 }), 83616},
		{"no window, no threshold", 0, d, 0},
	} {
		if got := Threshold(c.window, c.s); got != c.want {
			t.Errorf("%s: Threshold(%d) = %d, want %d", c.name, c.window, got, c.want)
		}
	}
}

func TestEstimate(t *testing.T) {
	for _, c := range []struct {
		name string
		m    llm.Message
		want int
	}{
		{"text rounds up", llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("123456789")}}, 3},
		{"thinking and text", llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{{Type: llm.ContentThinking, Thinking: "1234"}, llm.Text("1234")}}, 2},
		{"tool call name and arguments", llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{call("x", "read", `{"path":"a"}`)}}, 4},
		{"image", llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Image("image/png", "AAAA"), llm.Text("hi")}}, 1201},
		{"tool result", llm.Message{Role: llm.RoleToolResult, Content: []llm.Content{llm.Text(words(10))}}, 10},
		{"empty", llm.Message{Role: llm.RoleUser}, 0},
	} {
		if got := EstimateLLM(&c.m); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestContextUsage(t *testing.T) {
	b := newBuilder(t)
	b.user(words(100))
	b.asst("", 1000, call("c1", "bash", `{}`))
	b.result("c1", "bash", words(10))
	msgs := b.f.BuildContext().Messages
	if u := ContextUsage(msgs, 0); u.Tokens != 1010 || u.Index != 1 || u.Measured != 1000 {
		t.Fatalf("usage = %+v", u)
	}
	if u := ContextUsage(msgs, 60); u.Tokens != 950 {
		t.Fatalf("with savings = %+v", u)
	}
	// An error turn does not measure; the one before does.
	b.add(&llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopError, Usage: llm.Usage{Input: 99999}, Content: []llm.Content{llm.Text(words(5))}})
	if u := ContextUsage(b.f.BuildContext().Messages, 0); u.Tokens != 1015 || u.Index != 1 {
		t.Fatalf("after an error = %+v", u)
	}
	// A usage older than the latest compaction does not count: estimate all.
	path, _ := b.path()
	b.entry(session.TypeCompaction, session.Compaction{Summary: words(20), FirstKeptEntryID: path[len(path)-3].ID})
	msgs = b.f.BuildContext().Messages
	want := 0
	for _, m := range msgs {
		want += Estimate(m)
	}
	if u := ContextUsage(msgs, 0); u.Index != -1 || u.Tokens != want || want <= 20 {
		t.Fatalf("after compaction = %+v, want %d", u, want)
	}
	// The measured/estimated ratio is clamped to [0.5, 2].
	if r := (Usage{Index: 1, Measured: 1000, Estimated: 100}).Ratio(); r != 2 {
		t.Fatalf("ratio = %v", r)
	}
	if r := (Usage{Index: -1}).Ratio(); r != 1 {
		t.Fatalf("ratio = %v", r)
	}
}

func TestPrune(t *testing.T) {
	b := newBuilder(t)
	b.user("go")
	var ids []string
	for i := range 10 {
		id := string(rune('a' + i))
		tool := "bash"
		if i == 1 {
			tool = "read"
		}
		b.asst("", 0, call(id, tool, `{}`))
		ids = append(ids, b.result(id, tool, words(10000)))
	}
	path, msgs := b.path()
	p := Prune(path, msgs, 42)
	// Newest four (40,000) are protected; of the six older, the read
	// result is never a candidate: five are pruned.
	if len(p.Replace) != 5 || p.Saved != 50000 {
		t.Fatalf("pruned %d saving %d", len(p.Replace), p.Saved)
	}
	for i, id := range ids {
		_, pruned := p.Replace[id]
		if want := i < 6 && i != 1; pruned != want {
			t.Fatalf("result %d pruned = %v", i, pruned)
		}
	}
	var got map[string]any
	if err := json.Unmarshal(p.Replace[ids[0]], &got); err != nil {
		t.Fatal(err)
	}
	if got["toolCallId"] != "a" || got["prunedAt"] != float64(42) || got["role"] != "toolResult" ||
		got["content"].([]any)[0].(map[string]any)["text"] != "[Output truncated - 10000 tokens]" {
		t.Fatalf("pruned message = %v", got)
	}
	// Rewritten in the file; a second pass finds nothing new (prunedAt).
	if err := b.f.ReplaceMessages(p.Replace); err != nil {
		t.Fatal(err)
	}
	// The decoded-message cache follows the replacement.
	_, fresh := b.path()
	if txt := fresh[2].LLM.Content[0].Text; txt != "[Output truncated - 10000 tokens]" {
		t.Fatalf("in-memory message after the rewrite: %.40s", txt)
	}
	g, err := session.Open(b.f.Path())
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(b.f.Path())
	if n := strings.Count(string(data), "[Output truncated - 10000 tokens]"); n != 5 {
		t.Fatalf("file has %d pruned results", n)
	}
	path = g.ActivePath()
	if p := Prune(path, g.EntryMessages(path), 43); len(p.Replace) != 0 {
		t.Fatalf("second prune = %d", len(p.Replace))
	}
	// Below the minimum saving nothing is pruned.
	b2 := newBuilder(t)
	b2.user("go")
	for i := range 5 {
		id := string(rune('a' + i))
		b2.asst("", 0, call(id, "bash", `{}`))
		b2.result(id, "bash", words(10000))
	}
	path, msgs = b2.path()
	if p := Prune(path, msgs, 1); len(p.Replace) != 0 {
		t.Fatalf("10,000 tokens of candidates pruned: %d", len(p.Replace))
	}
}

func TestReplaceMessagesRejectsUnknownIDs(t *testing.T) {
	b := newBuilder(t)
	id := b.user("x")
	before, _ := os.ReadFile(b.f.Path())
	if err := b.f.ReplaceMessages(map[string][]byte{id: []byte(`{"role":"user","content":"y"}`), "nope": []byte(`{}`)}); err == nil {
		t.Fatal("unknown id accepted")
	}
	after, _ := os.ReadFile(b.f.Path())
	if string(before) != string(after) {
		t.Fatal("file changed by a failed replace")
	}
}

func settingsKeep(keep int) Settings {
	s := Defaults()
	s.KeepRecentTokens = keep
	return s
}

func roles(ms []session.Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Role)
	}
	return strings.Join(out, ",")
}

func TestPrepareCutPointAndSplitTurn(t *testing.T) {
	b := newBuilder(t)
	b.user(words(100))                                   // 0
	b.asst("", 0, call("c1", "read", `{"path":"a.go"}`)) // 1
	b.result("c1", "read", words(100))                   // 2
	b.asst(words(100), 0)                                // 3
	b.entry(session.TypeModelChange, session.ModelChange{Model: "p/m"})
	u2 := b.user(words(100))                                   // 5
	a4 := b.asst("", 0, call("c2", "edit", `{"path":"b.go"}`)) // 6
	b.result("c2", "edit", words(300))                         // 7
	b.asst(words(10), 0)                                       // 8
	path, msgs := b.path()

	// Keep 250: reached at the edit result (7), not a cut point; the next
	// one is the assistant at 8 — inside the turn that starts at 5: split.
	p, err := Prepare(path, msgs, settingsKeep(250), Usage{Index: -1, Tokens: 1234}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.FirstKeptEntryID != path[8].ID || !p.Split || p.TokensBefore != 1234 {
		t.Fatalf("cut %s split %v", p.FirstKeptEntryID, p.Split)
	}
	if roles(p.ToSummarize) != "user,assistant,toolResult,assistant" || roles(p.TurnPrefix) != "user,assistant,toolResult" {
		t.Fatalf("summarize %s prefix %s", roles(p.ToSummarize), roles(p.TurnPrefix))
	}
	if d := p.Files.Details(); strings.Join(d.ReadFiles, ",") != "a.go" || strings.Join(d.ModifiedFiles, ",") != "b.go" {
		t.Fatalf("files %+v", d)
	}

	// Keep 312: reached at the assistant 6 (a cut point), still split.
	p, _ = Prepare(path, msgs, settingsKeep(312), Usage{Index: -1}, 0)
	if p.FirstKeptEntryID != a4 || !p.Split || roles(p.TurnPrefix) != "user" {
		t.Fatalf("cut at %s, split %v, prefix %s", p.FirstKeptEntryID, p.Split, roles(p.TurnPrefix))
	}

	// Keep 400: reached at the user message 5, a turn start: no split, and
	// the model_change before it is pulled into the kept region.
	p, _ = Prepare(path, msgs, settingsKeep(400), Usage{Index: -1}, 0)
	if p.FirstKeptEntryID != path[4].ID || p.Split || p.TurnPrefix != nil || roles(p.ToSummarize) != "user,assistant,toolResult,assistant" {
		t.Fatalf("cut at %s (u2 %s), split %v, summarize %s", p.FirstKeptEntryID, u2, p.Split, roles(p.ToSummarize))
	}

	// A measured ratio of 2 halves the keep budget (500 → 250).
	p, _ = Prepare(path, msgs, settingsKeep(500), Usage{Index: 8, Measured: 2000, Estimated: 1000}, 0)
	if p.FirstKeptEntryID != path[8].ID {
		t.Fatalf("ratio not applied: cut at %s", p.FirstKeptEntryID)
	}

	// The keep budget is capped at half the threshold of a small window:
	// 20,000 on a 2,000-token window keeps ~850.
	p, _ = Prepare(path, msgs, Defaults(), Usage{Index: -1}, 2000)
	if p == nil || p.FirstKeptEntryID == path[0].ID {
		t.Fatalf("small window kept everything: %+v", p)
	}

	// Never reached: the first cut point, nothing to summarise.
	if _, err := Prepare(path, msgs, settingsKeep(100000), Usage{Index: -1}, 0); !errors.Is(err, ErrNothing) || err.Error() != "Nothing to compact" {
		t.Fatalf("err = %v", err)
	}
}

func TestPrepareAfterCompaction(t *testing.T) {
	b := newBuilder(t)
	b.user(words(100))
	b.asst(words(100), 0)
	kept := b.user(words(100))
	b.asst(words(100), 0)
	details := json.RawMessage(`{"readFiles":["old.go"],"modifiedFiles":["mod.go"]}`)
	b.entry(session.TypeCompaction, session.Compaction{Summary: "S1", FirstKeptEntryID: kept, Details: details})
	path, msgs := b.path()
	if _, err := Prepare(path, msgs, settingsKeep(10), Usage{Index: -1}, 0); !errors.Is(err, ErrNothing) {
		t.Fatalf("compaction as the last entry: %v", err)
	}
	b.user(words(100))
	b.asst(words(100), 0)
	b.user(words(10))
	b.asst(words(10), 0)
	path, msgs = b.path()
	p, err := Prepare(path, msgs, settingsKeep(15), Usage{Index: -1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The previously kept messages are summarised again: the two kept
	// messages come first, then the new window's head.
	if p.PreviousSummary != "S1" || roles(p.ToSummarize) != "user,assistant,user,assistant" || p.Split {
		t.Fatalf("prev %q summarize %s", p.PreviousSummary, roles(p.ToSummarize))
	}
	if d := p.Files.Details(); strings.Join(d.ReadFiles, ",") != "old.go" || strings.Join(d.ModifiedFiles, ",") != "mod.go" {
		t.Fatalf("details not carried: %+v", d)
	}
}

func TestRenderFiles(t *testing.T) {
	ops := newFileOps()
	ops.Read["/p/packages/agent/src/compaction/compaction.ts"] = true
	ops.Read["packages/agent/src/compaction/utils.ts"] = true
	ops.Modified["packages/agent/src/compaction/utils.ts"] = true
	ops.Modified["packages/agent/src/compaction/prompts/file-operations.md"] = true
	ops.Read["README.md"] = true
	ops.Read["/etc/hosts"] = true
	want := "<files>\nREADME.md (Read)\n# /etc/\nhosts (Read)\n# packages/agent/src/compaction/\ncompaction.ts (Read)\nutils.ts (RW)\n" +
		"## prompts/\nfile-operations.md (Write)\n</files>"
	if got := RenderFiles(ops, "/p"); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// The cap keeps modified files first, then says how many were left out.
	ops = newFileOps()
	for i := range 25 {
		ops.Read["r/"+string(rune('a'+i))+".go"] = true
	}
	ops.Modified["z/m.go"] = true
	got := RenderFiles(ops, "/p")
	if !strings.Contains(got, "m.go (Write)") || !strings.Contains(got, "… (6 more files omitted)\n</files>") ||
		strings.Count(got, "(Read)") != 19 {
		t.Fatalf("capped:\n%s", got)
	}
	if RenderFiles(newFileOps(), "/p") != "" {
		t.Fatal("empty ops render a block")
	}
	// Old blocks, legacy ones included, are replaced by one new block.
	s := WithFiles("text\n\n<read-files>\nx\n</read-files>\n<modified-files>\ny\n</modified-files>\n\n<files>\nold\n</files>", ops, "/p")
	if strings.Count(s, "<files>") != 1 || strings.Contains(s, "read-files") || strings.Contains(s, "old") || !strings.HasPrefix(s, "text\n\n<files>") {
		t.Fatalf("WithFiles = %q", s)
	}
}

func TestSerialize(t *testing.T) {
	b := newBuilder(t)
	b.user("fix it")
	b.add(&llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopToolUse, Content: []llm.Content{
		{Type: llm.ContentThinking, Thinking: "hmm"}, llm.Text("ok"), call("c1", "bash", `{"command":"make","timeout":5}`), call("c2", "read", `{"path":"a"}`)}})
	b.result("c1", "bash", strings.Repeat("x", 1500)+strings.Repeat("y", 1500))
	b.result("c2", "read", "content")
	got := Serialize(b.f.BuildContext().Messages, 0)
	want := "[User]: fix it\n\n[Assistant thinking]: hmm\n\n[Assistant]: ok\n\n" +
		`[Assistant tool calls]: bash(command="make", timeout=5); read(path="a")` + "\n\n[Tool result]: " +
		strings.Repeat("x", 1200) + "…" + strings.Repeat("y", 800) + "\n\n[Tool result]: content"
	if got != want {
		t.Fatalf("got\n%s", got)
	}
	// Over the budget: the oldest blocks go, behind the marker.
	small := Serialize(b.f.BuildContext().Messages, 20)
	if !strings.HasPrefix(small, "[earlier conversation omitted]\n\n[Tool result]: content") || strings.Contains(small, "fix it") {
		t.Fatalf("capped = %q", small)
	}
}

// recorder is a Complete that answers from a function and records prompts.
type recorder struct {
	mu      sync.Mutex
	prompts []string
	max     []int
	answer  func(prompt string) (string, error)
}

func (r *recorder) complete(_ context.Context, system, prompt string, maxTokens int) (string, error) {
	r.mu.Lock()
	r.prompts = append(r.prompts, prompt)
	r.max = append(r.max, maxTokens)
	r.mu.Unlock()
	if system != SystemPrompt() {
		return "", errors.New("wrong system prompt")
	}
	return r.answer(prompt)
}

func TestCompactSplitTurnIterativeAndFiles(t *testing.T) {
	b := newBuilder(t)
	b.user(words(100))
	b.asst("", 0, call("c1", "write", `{"path":"/p/src/new.go"}`))
	b.result("c1", "write", "ok")
	b.asst(words(100), 0)
	b.user("second " + words(100))
	b.asst("", 0, call("c2", "read", `{"path":"src/new.go"}`))
	b.result("c2", "read", words(300))
	b.asst(words(10), 0)
	path, msgs := b.path()
	p, err := Prepare(path, msgs, settingsKeep(250), Usage{Index: -1, Tokens: 900}, 0)
	if err != nil || !p.Split {
		t.Fatalf("prepare: %v %+v", err, p)
	}
	p.PreviousSummary = "## Current outcome\nold\n\n<files>\nstale (Read)\n</files>"
	r := &recorder{answer: func(prompt string) (string, error) {
		if strings.Contains(prompt, "## Owner request") {
			return "PREFIX", nil
		}
		return "HISTORY", nil
	}}
	res, err := Compact(context.Background(), p, Options{Complete: r.complete, Settings: Defaults(), CustomInstructions: "focus on tests", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	want := "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX\n\n<files>\n# src/\nnew.go (RW)\n</files>"
	if res.Summary != want {
		t.Fatalf("summary =\n%s", res.Summary)
	}
	if res.FirstKeptEntryID != p.FirstKeptEntryID || res.TokensBefore != 900 ||
		strings.Join(res.Details.ModifiedFiles, ",") != "/p/src/new.go" || strings.Join(res.Details.ReadFiles, ",") != "src/new.go" {
		t.Fatalf("result = %+v", res)
	}
	if len(r.prompts) != 2 {
		t.Fatalf("%d calls", len(r.prompts))
	}
	var hist, prefix string
	for i, pr := range r.prompts {
		if strings.Contains(pr, "## Owner request") {
			prefix = pr
			if r.max[i] != 8192 {
				t.Fatalf("prefix maxTokens %d", r.max[i])
			}
		} else {
			hist = pr
			if r.max[i] != 13107 {
				t.Fatalf("history maxTokens %d", r.max[i])
			}
		}
	}
	if !strings.HasPrefix(hist, "<conversation>\n[User]: abcd") || !strings.Contains(hist, "<previous-summary>\n## Current outcome\nold\n</previous-summary>") ||
		strings.Contains(hist, "stale") || !strings.Contains(hist, "Rewrite the capsule") ||
		!strings.HasSuffix(hist, "\n\nAdditional focus requested by the user:\nfocus on tests") || strings.Contains(hist, "second") {
		t.Fatalf("history prompt:\n%s", hist)
	}
	if !strings.HasPrefix(prefix, "<conversation>\n[User]: second") || strings.Contains(prefix, "focus on tests") {
		t.Fatalf("prefix prompt:\n%s", prefix)
	}

	// A first compaction uses the first-summary prompt; a failing model
	// fails the compaction.
	p.PreviousSummary, p.Split = "", false
	r = &recorder{answer: func(string) (string, error) { return "", errors.New("boom") }}
	if _, err := Compact(context.Background(), p, Options{Complete: r.complete, Settings: Defaults()}); err == nil || err.Error() != "boom" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(r.prompts[0], "## Working identities") || strings.Contains(r.prompts[0], "previous-summary") {
		t.Fatalf("first prompt:\n%s", r.prompts[0])
	}
	// A split turn with no history before it: "No prior history."
	p2 := &Preparation{Split: true, TurnPrefix: p.TurnPrefix, Files: newFileOps()}
	r = &recorder{answer: func(string) (string, error) { return "P", nil }}
	res, _ = Compact(context.Background(), p2, Options{Complete: r.complete, Settings: Defaults()})
	if res.Summary != "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nP" || len(r.prompts) != 1 {
		t.Fatalf("split turn without history: summary = %q", res.Summary)
	}
}

func TestBranchEntriesAndSummary(t *testing.T) {
	b := newBuilder(t)
	root := b.user("start")
	common := b.asst("ok", 0)
	b.user("try A")
	b.asst("", 0, call("c1", "edit", `{"path":"x.go"}`))
	b.result("c1", "edit", words(50))
	b.entry(session.TypeBranchSummary, session.BranchSummary{FromID: common, Summary: "older", Details: json.RawMessage(`{"readFiles":["r.go"],"modifiedFiles":[]}`)})
	b.asst("A failed", 0)
	old := b.f.ActivePath()
	entries := BranchEntries(old, b.f.PathTo(common))
	if len(entries) != 5 || entries[0].ParentID != common {
		t.Fatalf("branch entries = %d", len(entries))
	}
	if n := len(BranchEntries(old, b.f.PathTo(root))); n != 6 {
		t.Fatalf("from root: %d", n)
	}
	prep := PrepareBranch(entries, b.f.EntryMessages(entries), 0)
	if roles(prep.Messages) != "user,assistant,toolResult,branchSummary,assistant" {
		t.Fatalf("messages %s", roles(prep.Messages))
	}
	// A budget keeps the newest messages only; the files still cover all.
	small := PrepareBranch(entries, b.f.EntryMessages(entries), 40)
	if roles(small.Messages) != "branchSummary,assistant" {
		t.Fatalf("budgeted %s", roles(small.Messages))
	}
	r := &recorder{answer: func(string) (string, error) { return "## Goal\nA", nil }}
	sum, det, err := BranchSummary(context.Background(), small, Options{Complete: r.complete, Settings: Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	want := BranchPreamble + "\n\n## Goal\nA\n\n<files>\nr.go (Read)\nx.go (Write)\n</files>"
	if sum != want || strings.Join(det.ModifiedFiles, ",") != "x.go" || strings.Join(det.ReadFiles, ",") != "r.go" {
		t.Fatalf("summary =\n%s\n%+v", sum, det)
	}
	if !strings.Contains(r.prompts[0], "## Why it was left") || r.max[0] != 8192 {
		t.Fatalf("prompt %q max %d", r.prompts[0], r.max[0])
	}
	r = &recorder{answer: func(string) (string, error) { return "x", nil }}
	_, _, _ = BranchSummary(context.Background(), small, Options{Complete: r.complete, Settings: Defaults(), CustomInstructions: "only files"})
	if !strings.HasSuffix(r.prompts[0], "</conversation>\n\nonly files") {
		t.Fatalf("custom prompt %q", r.prompts[0])
	}
	if _, _, err := BranchSummary(context.Background(), BranchPreparation{}, Options{Complete: r.complete}); !errors.Is(err, ErrNothingToSummarize) {
		t.Fatalf("empty: %v", err)
	}
}
