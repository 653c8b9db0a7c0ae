package cliproxy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

const good = `{"type":"claude","access_token":"a","refresh_token":"r","email":"a@b.c","expired":"2026-09-01T18:00:00Z"}`

func TestScanDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "b-codex.json"), `{"type":"codex","access_token":"a","refresh_token":"r","account_id":"acc","expired":"2026-09-01T18:00:00Z"}`)
	write(t, filepath.Join(dir, "a-claude.json"), good)
	write(t, filepath.Join(dir, "c-bad.json"), `{`)
	write(t, filepath.Join(dir, "notes.txt"), good)
	write(t, filepath.Join(dir, "upper.JSON"), good)
	if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub.json", "nested.json"), good)
	if runtime.GOOS != "windows" {
		if err := os.Symlink(filepath.Join(dir, "a-claude.json"), filepath.Join(dir, "link.json")); err != nil {
			t.Fatal(err)
		}
	}

	entries, skips, err := Scan(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].File != filepath.Join(dir, "a-claude.json") || entries[1].File != filepath.Join(dir, "b-codex.json") {
		t.Fatalf("entries = %+v", entries)
	}
	if entries[0].Provider != "anthropic" || entries[1].Provider != "openai-codex" {
		t.Fatalf("providers = %s, %s", entries[0].Provider, entries[1].Provider)
	}
	if len(skips) != 1 || skips[0].File != filepath.Join(dir, "c-bad.json") || skips[0].Reason != "unreadable JSON: unexpected end of JSON input" {
		t.Fatalf("skips = %+v", skips)
	}
}

func TestScanSingleFileAndTilde(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, "weird-name.txt"), good)
	entries, skips, err := Scan("~/weird-name.txt", Options{Home: home})
	if err != nil || len(skips) != 0 || len(entries) != 1 {
		t.Fatalf("got %v %v %v", entries, skips, err)
	}
	if entries[0].File != filepath.Join(home, "weird-name.txt") {
		t.Fatalf("file = %q", entries[0].File)
	}
}

func TestScanErrors(t *testing.T) {
	_, _, err := Scan(filepath.Join(t.TempDir(), "missing"), Options{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing path err = %v", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	_, _, err = Scan("/dev/null", Options{})
	var nf *NotFileOrDirError
	if !errors.As(err, &nf) || err.Error() != "Import source is neither file nor directory: /dev/null" {
		t.Fatalf("device err = %v", err)
	}
}

func TestScanEmptyDirectory(t *testing.T) {
	entries, skips, err := Scan(t.TempDir(), Options{})
	if err != nil || len(entries) != 0 || len(skips) != 0 {
		t.Fatalf("got %v %v %v", entries, skips, err)
	}
}

func TestResolvePathPlainPrefixReplacement(t *testing.T) {
	got, err := ResolvePath("~x/y", "/home/u")
	if err != nil || got != "/home/ux/y" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestDescribe(t *testing.T) {
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	future := now.Add(time.Hour).UnixMilli()
	past := now.Add(-time.Hour).UnixMilli()
	oauth := func(email, acct, project string, exp int64) vault.Credential {
		return vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: exp, Email: email, AccountID: acct, ProjectID: project}
	}
	tests := []struct {
		name string
		e    Entry
		want string
	}{
		{"email", Entry{Provider: "anthropic", Credential: oauth("a@b.c", "acc", "", future), File: "/d/f.json"}, "anthropic: a@b.c from /d/f.json"},
		{"account id when no email", Entry{Provider: "openai-codex", Credential: oauth("", "acc", "", future), File: "f"}, "openai-codex: acc from f"},
		{"project id is not an identity here", Entry{Provider: "google-gemini-cli", Credential: oauth("", "", "p", future), File: "f"}, "google-gemini-cli: (no identity) from f"},
		{"expired", Entry{Provider: "p", Credential: oauth("e", "", "", past), File: "f"}, "p: e [expired] from f"},
		{"expired and disabled", Entry{Provider: "p", Credential: oauth("e", "", "", past), Disabled: true, File: "f"}, "p: e [expired] [disabled] from f"},
		{"expiring exactly now is not expired", Entry{Provider: "p", Credential: oauth("e", "", "", now.UnixMilli()), File: "f"}, "p: e from f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Describe(tt.e, now); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
