package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSetTitleRewritesTheHeader(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(dir, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AppendThinkingLevel("high"); err != nil {
		t.Fatal(err)
	}
	if err := f.Persist(); err != nil {
		t.Fatal(err)
	}
	if err := f.SetTitle(""); err != ErrEmptyName {
		t.Fatalf("empty name: %v", err)
	}
	if err := f.SetTitle(`my "session"`); err != nil {
		t.Fatal(err)
	}
	g, err := Open(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	if g.Header().Title != `my "session"` || g.Header().ID != f.Header().ID || len(g.Entries()) != 1 {
		t.Fatalf("reopened: %+v, %d entries", g.Header(), len(g.Entries()))
	}
	data, _ := os.ReadFile(f.Path())
	first := strings.SplitN(string(data), "\n", 2)[0]
	if !strings.HasPrefix(first, `{"type":"session","version":3,"id":`) || !strings.HasSuffix(first, `,"title":"my \"session\"","titleSource":"user"}`) {
		t.Fatalf("header = %s", first)
	}
}

func TestSetTitleWithASlot(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	slot := string(titleSlot("", "2026-01-01T00:00:00.000Z"))
	header := `{"type":"session","version":3,"id":"0196","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}`
	if err := os.WriteFile(p, []byte(slot+"\n"+header+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 200)
	if err := f.SetTitle(long); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 || len(lines[0])+1 != titleSlotBytes || lines[1] != header ||
		!strings.Contains(lines[2], `"type":"title_change"`) || !strings.Contains(lines[2], `"source":"user"`) {
		t.Fatalf("file:\n%s", data)
	}
}
