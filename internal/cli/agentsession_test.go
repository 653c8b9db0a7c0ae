package cli

import (
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// newSessionWith writes a session of dir whose first user message is text.
func newSessionWith(t *testing.T, dir, text string) *session.File {
	t.Helper()
	sf, err := session.Create(dir, dir, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg := &llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(text)}}
	if _, err := sf.AppendMessage(session.NewMessage(msg, nil)); err != nil {
		t.Fatal(err)
	}
	if err := sf.Persist(); err != nil {
		t.Fatal(err)
	}
	return sf
}

// commonPrefix is the longest prefix a and b share.
func commonPrefix(a, b string) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n]
}

// TestResumeAmbiguousPrefixListsTheCandidates: two sessions started in the
// same second share the start of their ids; --resume with that shared
// prefix fails (exit 1) listing both, and the prefix the interactive mode
// shows for each resumes that one.
func TestResumeAmbiguousPrefixListsTheCandidates(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	a := newSessionWith(t, dir, "fix the parser")
	b := newSessionWith(t, dir, "write the release notes")
	shared := commonPrefix(a.Header().ID, b.Header().ID)
	if len(shared) < 8 {
		// The pair straddled a change of the ids' leading time bits: start
		// over in a fresh directory, well inside the next window.
		dir = t.TempDir()
		a = newSessionWith(t, dir, "fix the parser")
		b = newSessionWith(t, dir, "write the release notes")
		shared = commonPrefix(a.Header().ID, b.Header().ID)
	}
	if len(shared) < 8 {
		t.Fatalf("ids %s and %s created together differ within 8 characters", a.Header().ID, b.Header().ID)
	}

	r := c.run("", "--session-dir", dir, "-r", shared[:8], "-p", "hi")
	if r.code != 1 {
		t.Fatalf("ambiguous prefix: exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		`Session prefix "` + shared[:8] + `" is ambiguous: it matches 2 sessions.`,
		a.Header().ID + "  " + a.Header().Timestamp + "  fix the parser",
		b.Header().ID + "  " + b.Header().Timestamp + "  write the release notes",
		"longer prefix",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	for _, sf := range []*session.File{a, b} {
		got, err := resumeSession(session.ShortID(sf), []string{dir}, c.agentDir(), true, dir)
		if err != nil {
			t.Fatalf("resume %s: %v", session.ShortID(sf), err)
		}
		if got.Path() != sf.Path() {
			t.Errorf("resume %s opened %s, want %s", session.ShortID(sf), got.Path(), sf.Path())
		}
	}
	if _, err := resumeSession("ffffffff", []string{dir}, c.agentDir(), true, dir); err == nil || err.Error() != `Session "ffffffff" not found.` {
		t.Errorf("unknown prefix: %v", err)
	}
}
