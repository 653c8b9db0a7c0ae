package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// rekeyHome is a broker host in a temporary HOME: a key file and a vault
// holding one OAuth and one API-key credential.
type rekeyHome struct {
	environ []string
	keyPath string
	dbPath  string
	oldKey  uint32
}

func newRekeyHome(t *testing.T) *rekeyHome {
	t.Helper()
	environ := []string{"HOME=" + t.TempDir()}
	dirs, err := config.ResolveDirs(*config.ProcessEnv(environ))
	if err != nil {
		t.Fatal(err)
	}
	h := &rekeyHome{environ: environ, keyPath: dirs.VaultKeyPath(), dbPath: dirs.VaultDB()}
	kr, _, err := seal.LoadOrCreateKeyFile(h.keyPath)
	if err != nil {
		t.Fatal(err)
	}
	h.oldKey = kr.ActiveID()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, h.dbPath, kr, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct {
		provider string
		cred     vault.Credential
	}{
		{"anthropic", vault.Credential{Type: vault.TypeOAuth, Access: "acc-1", Refresh: "ref-1", Expires: 1, Email: "a@x.io"}},
		{"openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-A"}},
	} {
		if _, err := st.Upsert(ctx, c.provider, c.cred); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// secrets opens the vault with nothing but the key file at keyPath and
// returns the secrets of rows 1 and 2.
func (h *rekeyHome) secrets(t *testing.T, keyPath string) []string {
	t.Helper()
	kr, err := seal.LoadKeyFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), h.dbPath, kr, sqlite.Options{})
	if err != nil {
		t.Fatalf("open the vault with the rekeyed key file: %v", err)
	}
	defer st.Close()
	var out []string
	for _, id := range []int64{1, 2} {
		r, err := st.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Credential.Refresh+r.Credential.Key)
	}
	return out
}

func rekeyRun(t *testing.T, environ []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb, environ)
	return code, out.String(), errb.String()
}

func rekeyKeyIDs(t *testing.T, path string) []uint32 {
	t.Helper()
	kr, err := seal.LoadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return kr.IDs()
}

func TestRekeyCLIReportsNewKeyAndLeavesOnlyIt(t *testing.T) {
	// 2 rows × 4 sealed columns + the canary.
	const resealed = 9
	t.Run("text output names the new key and the retired one", func(t *testing.T) {
		h := newRekeyHome(t)
		code, out, errOut := rekeyRun(t, h.environ, "auth-broker", "rekey")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		ids := rekeyKeyIDs(t, h.keyPath)
		if len(ids) != 1 || ids[0] == h.oldKey {
			t.Fatalf("key file ids %08x after rekey from %08x", ids, h.oldKey)
		}
		want := fmt.Sprintf("Re-sealed %d secrets under key %08x (%s)\nRetired key %08x\n", resealed, ids[0], h.keyPath, h.oldKey)
		if out != want {
			t.Fatalf("stdout:\n%q\nwant\n%q", out, want)
		}
		if got := h.secrets(t, h.keyPath); !slices.Equal(got, []string{"ref-1", "sk-A"}) {
			t.Fatalf("secrets after rekey %q", got)
		}
	})
	t.Run("--json prints one object with the key ids", func(t *testing.T) {
		h := newRekeyHome(t)
		code, out, errOut := rekeyRun(t, h.environ, "auth-broker", "rekey", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var got struct {
			Resealed      int      `json:"resealed"`
			ActiveKeyID   string   `json:"activeKeyId"`
			RetiredKeyIDs []string `json:"retiredKeyIds"`
			Path          string   `json:"path"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || strings.Count(out, "\n") != 1 {
			t.Fatalf("stdout %q is not one JSON line: %v", out, err)
		}
		ids := rekeyKeyIDs(t, h.keyPath)
		if got.Resealed != resealed || got.ActiveKeyID != fmt.Sprintf("%08x", ids[0]) || got.Path != h.keyPath ||
			!slices.Equal(got.RetiredKeyIDs, []string{fmt.Sprintf("%08x", h.oldKey)}) {
			t.Fatalf("json %+v; key file ids %08x, old %08x", got, ids, h.oldKey)
		}
		if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(got.ActiveKeyID) {
			t.Fatalf("activeKeyId %q", got.ActiveKeyID)
		}
	})
	t.Run("--vault-key-file rotates that file even with OMP_VAULT_KEY set", func(t *testing.T) {
		h := newRekeyHome(t)
		other := filepath.Join(t.TempDir(), "moved.key")
		b, err := os.ReadFile(h.keyPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(other, b, 0o600); err != nil {
			t.Fatal(err)
		}
		env := append(slices.Clone(h.environ), "OMP_VAULT_KEY=ignored-by-rekey-with-a-key-file")
		if code, _, errOut := rekeyRun(t, env, "auth-broker", "rekey", "--vault-key-file", other); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if ids := rekeyKeyIDs(t, other); len(ids) != 1 || ids[0] == h.oldKey {
			t.Fatalf("rotated file ids %08x", ids)
		}
		if got := h.secrets(t, other); !slices.Equal(got, []string{"ref-1", "sk-A"}) {
			t.Fatalf("secrets after rekey %q", got)
		}
	})
}

func TestRekeyCLIFailsWithoutTouchingTheKeyFile(t *testing.T) {
	for name, tc := range map[string]struct {
		setup   func(t *testing.T, h *rekeyHome) []string // returns extra args
		environ []string
		wantErr []string
	}{
		"OMP_VAULT_KEY without --vault-key-file is refused": {
			environ: []string{"OMP_VAULT_KEY=" + strings.Repeat("A", 43) + "="},
			wantErr: []string{"OMP_VAULT_KEY is set", "--vault-key-file"},
		},
		"a key file that does not open the vault names the key ids": {
			setup: func(t *testing.T, h *rekeyHome) []string {
				wrong := filepath.Join(t.TempDir(), "wrong.key")
				if _, _, err := seal.LoadOrCreateKeyFile(wrong); err != nil {
					t.Fatal(err)
				}
				return []string{"--vault-key-file", wrong}
			},
			wantErr: []string{"vault key does not match this vault"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newRekeyHome(t)
			keyFile := h.keyPath
			args := []string{"auth-broker", "rekey"}
			if tc.setup != nil {
				extra := tc.setup(t, h)
				args = append(args, extra...)
				keyFile = extra[len(extra)-1]
			}
			before, err := os.ReadFile(keyFile)
			if err != nil {
				t.Fatal(err)
			}
			code, out, errOut := rekeyRun(t, append(slices.Clone(h.environ), tc.environ...), args...)
			if code != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q", code, out)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(errOut, w) {
					t.Fatalf("stderr %q lacks %q", errOut, w)
				}
			}
			if tc.setup != nil {
				for _, id := range append(rekeyKeyIDs(t, keyFile), h.oldKey) {
					if !strings.Contains(errOut, fmt.Sprintf("%08x", id)) {
						t.Fatalf("stderr %q does not name key %08x", errOut, id)
					}
				}
			}
			if after, _ := os.ReadFile(keyFile); !bytes.Equal(after, before) {
				t.Fatal("a failed rekey changed the key file")
			}
			if got := h.secrets(t, h.keyPath); !slices.Equal(got, []string{"ref-1", "sk-A"}) {
				t.Fatalf("secrets after a failed rekey %q", got)
			}
		})
	}
}
