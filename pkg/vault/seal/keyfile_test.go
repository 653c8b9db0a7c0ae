package seal_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/pkg/vault/seal"
)

func perm(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestLoadOrCreateKeyFileCreatesPrivateFileThenLoadsIt(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX modes")
	}
	dir := filepath.Join(t.TempDir(), "cfg", "omp")
	path := filepath.Join(dir, "vault.key")
	kr, created, err := seal.LoadOrCreateKeyFile(path)
	if err != nil || !created {
		t.Fatalf("create: created=%v err=%v", created, err)
	}
	if got := perm(t, path); got != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", got)
	}
	if got := perm(t, dir); got != 0o700 {
		t.Fatalf("key dir mode %04o, want 0700", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
	kr2, created, err := seal.LoadOrCreateKeyFile(path)
	if err != nil || created {
		t.Fatalf("load: created=%v err=%v", created, err)
	}
	blob, _ := kr.Seal(plain, aad)
	if _, err := kr2.Open(blob, aad); err != nil {
		t.Fatalf("reloaded keyring cannot open: %v", err)
	}
}

func TestLoadOrCreateKeyFileRacersShareOneKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.key")
	const n = 8
	ids := make([]uint32, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			kr, _, err := seal.LoadOrCreateKeyFile(path)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = kr.ActiveID()
		})
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("racing creators got different keys: %08x", ids)
		}
	}
}

func TestLoadKeyFileRefusesGroupOrWorldAccess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX modes")
	}
	path := filepath.Join(t.TempDir(), "vault.key")
	if _, _, err := seal.LoadOrCreateKeyFile(path); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644} {
		os.Chmod(path, mode)
		_, _, err := seal.LoadOrCreateKeyFile(path)
		if !errors.Is(err, seal.ErrKeyFileMode) || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("mode %04o: err = %v", mode, err)
		}
	}
}

func TestAddKeyThenRetireKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.key")
	kr1, _, err := seal.LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	oldBlob, _ := kr1.Seal(plain, aad)

	kr2, err := seal.AddKey(path)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := seal.LoadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.ActiveID() != kr2.ActiveID() || kr2.ActiveID() == kr1.ActiveID() || len(loaded.IDs()) != 2 {
		t.Fatalf("after AddKey: active %08x ids %08x", loaded.ActiveID(), loaded.IDs())
	}
	if _, err := loaded.Open(oldBlob, aad); err != nil {
		t.Fatalf("old blob after AddKey: %v", err)
	}
	if !loaded.NeedsReseal(oldBlob) {
		t.Fatal("old blob does not need reseal")
	}
	newBlob, _ := loaded.Seal(plain, aad)

	if _, err := seal.RetireKeys(path, 0xdeadbeef); err == nil {
		t.Fatal("retiring to an absent key succeeded")
	}
	kr3, err := seal.RetireKeys(path, kr2.ActiveID())
	if err != nil {
		t.Fatal(err)
	}
	if len(kr3.IDs()) != 1 || kr3.ActiveID() != kr2.ActiveID() {
		t.Fatalf("after retire: %08x", kr3.IDs())
	}
	if _, err := kr3.Open(newBlob, aad); err != nil {
		t.Fatal(err)
	}
	if _, err := kr3.Open(oldBlob, aad); !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("retired key still opens: %v", err)
	}
	if runtime.GOOS != "windows" && perm(t, path) != 0o600 {
		t.Fatalf("rewritten key file mode %04o", perm(t, path))
	}
}

func TestParseKeyFileRejects(t *testing.T) {
	k := seal.NewKey()
	b64 := base64.StdEncoding.EncodeToString(k.Secret[:])
	good := fmt.Sprintf("v1 %08x %s", k.ID, b64)
	other := seal.NewKey()
	otherLine := fmt.Sprintf("v1 %08x %s", other.ID, base64.StdEncoding.EncodeToString(other.Secret[:]))
	tests := []struct{ name, text string }{
		{"empty file", "# nothing\n"},
		{"no active key", good + "\n"},
		{"two active keys", good + " active\n" + otherLine + " active\n"},
		{"bad version", "v2" + good[2:] + " active\n"},
		{"short id", fmt.Sprintf("v1 %x %s active\n", k.ID&0xfff, b64)},
		{"id not matching the key", fmt.Sprintf("v1 %08x %s active\n", k.ID^1, b64)},
		{"short secret", fmt.Sprintf("v1 %08x %s active\n", k.ID, base64.StdEncoding.EncodeToString(k.Secret[:31]))},
		{"bad flag", good + " primary\n"},
		{"duplicate key", good + " active\n" + good + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := seal.ParseKeyFile([]byte(tt.text))
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), b64[:20]) {
				t.Fatalf("error leaks key material: %v", err)
			}
		})
	}
	kr, err := seal.ParseKeyFile([]byte("# c\n\n" + otherLine + "\n" + good + " active\n"))
	if err != nil || kr.ActiveID() != k.ID || len(kr.IDs()) != 2 {
		t.Fatalf("valid file: %v", err)
	}
}

func TestKeyringFromEnv(t *testing.T) {
	k := seal.NewKey()
	fileKr, _ := seal.NewKeyring(k, seal.NewKey())
	text := string(seal.MarshalKeyFile(fileKr))
	blob, _ := fileKr.Seal(plain, aad)
	for name, v := range map[string]string{
		"standard base64":         base64.StdEncoding.EncodeToString(k.Secret[:]),
		"url base64 without pads": base64.RawURLEncoding.EncodeToString(k.Secret[:]),
		"surrounding whitespace":  "  " + base64.StdEncoding.EncodeToString(k.Secret[:]) + "\n",
		"key file text":           text,
	} {
		t.Run(name, func(t *testing.T) {
			kr, err := seal.KeyringFromEnv(v)
			if err != nil {
				t.Fatal(err)
			}
			// A bare secret derives the same id as the file, so it opens blobs
			// sealed by a keyring loaded from the file.
			if got, err := kr.Open(blob, aad); err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("open: %v", err)
			}
		})
	}
	for _, bad := range []string{"", "   ", "not base64!", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		if _, err := seal.KeyringFromEnv(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

func FuzzParseKeyFile(f *testing.F) {
	kr, _ := seal.NewKeyring(seal.KeyFromSecret([32]byte{7}), seal.KeyFromSecret([32]byte{8}))
	f.Add(string(seal.MarshalKeyFile(kr)))
	f.Add("v1 00000000 AAAA active")
	f.Add("")
	f.Add(base64.StdEncoding.EncodeToString(make([]byte, 32)))
	f.Fuzz(func(t *testing.T, text string) {
		got, err := seal.ParseKeyFile([]byte(text))
		if err == nil {
			// Whatever parses must round-trip through the writer.
			again, err := seal.ParseKeyFile(seal.MarshalKeyFile(got))
			if err != nil || again.ActiveID() != got.ActiveID() || len(again.IDs()) != len(got.IDs()) {
				t.Fatalf("round trip: %v", err)
			}
		}
		_, _ = seal.KeyringFromEnv(text)
	})
}
