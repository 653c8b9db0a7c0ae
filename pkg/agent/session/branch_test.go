package session

import (
	"os"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

// TestBranchIntoANewFile is /branch and RPC branch: a new file whose
// header names the source file, holding the path up to the leaf with label
// entries dropped and parentIds re-chained, other bytes unchanged.
func TestBranchIntoANewFile(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(dir, "/proj", Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(role llm.Role, text string) *Entry {
		e, err := f.AppendMessage(NewMessage(&llm.Message{Role: role, Content: []llm.Content{llm.Text(text)}}, nil))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	u1 := msg(llm.RoleUser, "first")
	a1 := msg(llm.RoleAssistant, "one")
	if _, err := f.Append(TypeLabel, map[string]string{"targetId": a1.ID, "label": "keep"}); err != nil {
		t.Fatal(err)
	}
	u2 := msg(llm.RoleUser, "second")
	a2 := msg(llm.RoleAssistant, "two")
	if err := f.Persist(); err != nil {
		t.Fatal(err)
	}
	if err := f.SetTitle("my work"); err != nil {
		t.Fatal(err)
	}

	// Branching from u2: the path up to but excluding it.
	b, err := f.BranchInto(dir, u2.ParentID)
	if err != nil {
		t.Fatal(err)
	}
	h := b.Header()
	if h.ParentSession != f.Path() || h.ID == f.Header().ID || h.Cwd != "/proj" || h.Title != "my work" || b.Path() == f.Path() {
		t.Fatalf("header %+v path %s", h, b.Path())
	}
	data, _ := os.ReadFile(b.Path())
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 || lines[1] != string(u1.Raw) || lines[2] != string(a1.Raw) {
		t.Fatalf("branch file:\n%s", data)
	}
	if got := b.BuildContext().Messages; len(got) != 2 || b.Leaf() != a1.ID {
		t.Fatalf("context %d messages, leaf %s", len(got), b.Leaf())
	}

	// The whole path: the label goes, u2 is re-chained onto a1 with its
	// other members in place.
	b2, err := f.BranchInto(dir, a2.ID)
	if err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(b2.Path())
	lines = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	want := strings.Replace(string(u2.Raw), `"parentId":"`+u2.ParentID+`"`, `"parentId":"`+a1.ID+`"`, 1)
	if len(lines) != 5 || strings.Contains(string(data), `"type":"label"`) || lines[3] != want || lines[4] != string(a2.Raw) {
		t.Fatalf("branch file:\n%s\nwant line 3 %s", data, want)
	}
	if reopened, err := Open(b2.Path()); err != nil || len(reopened.BuildContext().Messages) != 4 {
		t.Fatalf("reopen: %v", err)
	}

	// From the first message: a header and nothing else.
	b3, err := f.BranchInto(dir, "")
	if err != nil || len(b3.BuildContext().Messages) != 0 {
		t.Fatalf("empty branch: %v", err)
	}
	if _, err := f.BranchInto(dir, "nope"); err == nil {
		t.Fatal("unknown entry accepted")
	}
}
