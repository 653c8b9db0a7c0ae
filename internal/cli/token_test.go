package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tokenRE is 32 random bytes as base64url without padding.
var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

func TestTokenCreatesPrivateFileAndPrintsIt(t *testing.T) {
	c := newCLI(t)
	out := c.ok("", "auth-broker", "token")
	tok := strings.TrimSuffix(out, "\n")
	if !tokenRE.MatchString(tok) || out != tok+"\n" {
		t.Fatalf("token output %q, want 43 base64url characters and one newline", out)
	}
	raw, err := os.ReadFile(c.tokenPath())
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != tok {
		t.Fatalf("token file holds %q, want the bare token %q (no newline)", raw, tok)
	}
	for path, want := range map[string]os.FileMode{c.tokenPath(): 0o600, c.configDir(): 0o700} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s mode %o, want %o", path, got, want)
		}
	}
	if again := c.ok("", "auth-broker", "token"); again != out {
		t.Fatalf("second `token` printed %q, want the cached %q", again, out)
	}
}

func TestTokenReadsExistingFileTrimmed(t *testing.T) {
	c := newCLI(t)
	writeFile(t, c.tokenPath(), "  existing-token\n")
	if out := c.ok("", "auth-broker", "token"); out != "existing-token\n" {
		t.Fatalf("token printed %q, want the trimmed file content", out)
	}
}

func TestTokenRegenerateRotates(t *testing.T) {
	c := newCLI(t)
	first := strings.TrimSpace(c.ok("", "auth-broker", "token"))
	second := strings.TrimSpace(c.ok("", "auth-broker", "token", "--regenerate"))
	if second == first || !tokenRE.MatchString(second) {
		t.Fatalf("--regenerate printed %q (first %q), want a fresh 43-character token", second, first)
	}
	raw, _ := os.ReadFile(c.tokenPath())
	if string(raw) != second {
		t.Fatalf("file holds %q after --regenerate, want %q", raw, second)
	}
	if st, _ := os.Stat(c.tokenPath()); st.Mode().Perm() != 0o600 {
		t.Fatalf("regenerated file mode %o, want 600", st.Mode().Perm())
	}
	if third := strings.TrimSpace(c.ok("", "auth-broker", "token")); third != second {
		t.Fatalf("`token` after --regenerate printed %q, want %q", third, second)
	}
}

func TestTokenJSONShape(t *testing.T) {
	for _, args := range [][]string{
		{"auth-broker", "token", "--json"},
		{"auth-broker", "token", "--json", "--regenerate"},
		{"auth-broker", "--json", "token"}, // persistent flag before the action
	} {
		t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
			c := newCLI(t)
			out := c.ok("", args...)
			raw, _ := os.ReadFile(c.tokenPath())
			path, _ := filepath.Abs(c.tokenPath())
			jsonPath, _ := json.Marshal(path)
			// Key order is part of the shape: token first, then path.
			wantLine := `{"token":"` + string(raw) + `","path":` + string(jsonPath) + "}\n"
			if out != wantLine {
				t.Fatalf("got  %q\nwant %q", out, wantLine)
			}
		})
	}
}

// TestRegenerateDoesNotAffectRunningBroker: the broker reads its token once
// at startup; a client reading the rotated file is refused
// until the broker restarts.
func TestRegenerateDoesNotAffectRunningBroker(t *testing.T) {
	c := newCLI(t)
	b := startBroker(t, c.tokenPath())   // the broker host is the client host
	c.env["OMP_AUTH_BROKER_URL"] = b.url // token from <config-dir>/auth-broker.token
	if out := c.ok("", "auth-broker", "token"); out != b.token+"\n" {
		t.Fatalf("token %q, want the broker's %q", out, b.token)
	}
	c.ok("", "auth-broker", "migrate", "--from-local", "--dry-run")
	rotated := strings.TrimSpace(c.ok("", "auth-broker", "token", "--regenerate"))
	r := c.run("", "auth-broker", "migrate", "--from-local", "--dry-run")
	if r.code != 1 || r.stderr != "error: Auth broker returned no snapshot\n" {
		t.Fatalf("after --regenerate: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	assertNoSecrets(t, r, b.token, rotated)
	// The old token still works against the running broker.
	b.state(t)
}
