package config

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestEnsureTokenCreatesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "auth-broker.token")
	tok, created, err := EnsureToken(path)
	if err != nil || !created {
		t.Fatalf("EnsureToken = %v, %v", created, err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) != 32 || len(tok) != 43 {
		t.Fatalf("token %d chars, %d bytes, %v", len(tok), len(raw), err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != tok {
		t.Fatalf("file holds %q, want the bare token without newline", data)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %o", st.Mode().Perm())
	}
	if st, _ := os.Stat(filepath.Dir(path)); st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %o", st.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp")); len(left) != 0 {
		t.Errorf("temp files left: %v", left)
	}

	again, created, err := EnsureToken(path)
	if err != nil || created || again != tok {
		t.Fatalf("second EnsureToken = %q, %v, %v", again, created, err)
	}
}

func TestEnsureTokenKeepsExistingTrimmed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t")
	writeFile(t, path, "  existing\n")
	tok, created, err := EnsureToken(path)
	if err != nil || created || tok != "existing" {
		t.Fatalf("got %q, %v, %v", tok, created, err)
	}
}

func TestEnsureTokenReplacesBlankFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t")
	writeFile(t, path, " \n")
	tok, created, err := EnsureToken(path)
	if err != nil || !created || tok == "" {
		t.Fatalf("got %q, %v, %v", tok, created, err)
	}
	if got, _ := ReadToken(path); got != tok {
		t.Fatalf("file holds %q", got)
	}
}

func TestEnsureTokenConcurrentCallersAgree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t")
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			tok, _, err := EnsureToken(path)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[tok] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	onDisk, _ := ReadToken(path)
	if len(seen) != 1 || !seen[onDisk] {
		t.Fatalf("callers saw %d tokens; disk %q", len(seen), onDisk)
	}
}

func TestRegenerateTokenReplaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t")
	old, _, err := EnsureToken(path)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := RegenerateToken(path)
	if err != nil || fresh == old || len(fresh) != 43 {
		t.Fatalf("got %q, %v", fresh, err)
	}
	if got, _ := ReadToken(path); got != fresh {
		t.Fatalf("file holds %q", got)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %o", st.Mode().Perm())
	}
}

func TestReadTokenMissingIsEmpty(t *testing.T) {
	tok, err := ReadToken(filepath.Join(t.TempDir(), "none"))
	if tok != "" || err != nil {
		t.Fatalf("got %q, %v", tok, err)
	}
}

func TestReadTokenUnreadableIsError(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadToken(dir); err == nil {
		t.Fatal("reading a directory succeeded")
	}
}

func TestCheckPerms(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	path := filepath.Join(dir, "auth-broker.token")
	if w := CheckPerms(path); len(w) != 0 {
		t.Fatalf("missing paths warned: %v", w)
	}
	if _, _, err := EnsureToken(path); err != nil {
		t.Fatal(err)
	}
	if w := CheckPerms(path); len(w) != 0 {
		t.Fatalf("private paths warned: %v", w)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := CheckPerms(path)
	if len(w) != 2 || !strings.Contains(w[0], "0644") || !strings.Contains(w[1], "0755") {
		t.Fatalf("warnings = %v", w)
	}
	tok, _ := ReadToken(path)
	for _, s := range w {
		if strings.Contains(s, tok) {
			t.Fatalf("warning leaks the token: %q", s)
		}
	}
}
