package sqlite

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite/sqlitetest"
)

// legacyVault leaves in dir what an earlier omp-go left at the reference's
// path when it was killed: agent.db with committed writes still in its
// -wal (copied while the store was open, so no checkpoint ran). It
// returns the path and the key.
func legacyVault(t *testing.T, dir string) (string, *seal.Keyring) {
	t.Helper()
	ctx := context.Background()
	kr, err := seal.NewKeyring(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(t.TempDir(), "agent.db")
	st, err := Open(ctx, live, kr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []vault.Credential{
		{Type: vault.TypeOAuth, Access: "acc-1", Refresh: "ref-1", Expires: 1_765_003_600_000, Email: "a@x.io"},
		{Type: vault.TypeAPIKey, Key: "sk-legacy"},
	} {
		if _, err := st.Upsert(ctx, "anthropic", c); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "agent.db")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(live + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == "-wal" && len(b) == 0 {
			t.Fatal("the live vault's WAL is empty: the fixture would not test carrying it over")
		}
		if err := os.WriteFile(path+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path, kr
}

// checkAdopted opens the vault at path and wants both legacy rows.
func checkAdopted(t *testing.T, path string, kr *seal.Keyring) {
	t.Helper()
	st, err := Open(context.Background(), path, kr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Credential.Refresh != "ref-1" || rows[1].Credential.Key != "sk-legacy" {
		t.Fatalf("adopted vault rows = %+v, want the two legacy credentials", rows)
	}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func TestAdoptLegacyMovesOnceWithWAL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	legacy, kr := legacyVault(t, dir)
	path := filepath.Join(dir, "vault.db")

	moved, err := AdoptLegacy(ctx, legacy, path)
	if err != nil || !moved {
		t.Fatalf("AdoptLegacy = %v, %v; want moved", moved, err)
	}
	for _, p := range []string{legacy, legacy + "-wal", legacy + "-shm"} {
		if exists(t, p) {
			t.Errorf("%s still exists after the move", filepath.Base(p))
		}
	}
	checkAdopted(t, path, kr)

	// Once: a reference agent.db that appears later is never taken.
	sqlitetest.WriteReference(t, legacy, sqlitetest.ReferenceSchemaV4)
	if moved, err := AdoptLegacy(ctx, legacy, path); err != nil || moved {
		t.Fatalf("second AdoptLegacy = %v, %v; want nothing done", moved, err)
	}
	if !exists(t, legacy) {
		t.Fatal("the reference agent.db was removed")
	}
	checkAdopted(t, path, kr)
}

// TestAdoptLegacyLeavesReferenceUntouched: a reference plain agent.db (in
// WAL mode, as the reference keeps it) is never moved or written, byte for
// byte, by the adoption and by opening the vault beside it; not even a
// -wal or -shm file appears beside it.
func TestAdoptLegacyLeavesReferenceUntouched(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	legacy := filepath.Join(dir, "agent.db")
	sqlitetest.WriteReference(t, legacy, sqlitetest.ReferenceSchemaV4,
		`INSERT INTO auth_credentials (provider, credential_type, data) VALUES ('anthropic', 'api_key', '{"key":"sk-ref"}')`)
	before, err := os.ReadFile(legacy)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "vault.db")
	if moved, err := AdoptLegacy(ctx, legacy, path); err != nil || moved {
		t.Fatalf("AdoptLegacy on a reference agent.db = %v, %v; want nothing done", moved, err)
	}
	if exists(t, path) {
		t.Fatal("vault.db created by the adoption")
	}
	kr, _ := seal.NewKeyring(seal.NewKey())
	st, err := Open(ctx, path, kr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	after, err := os.ReadFile(legacy)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the reference agent.db changed")
	}
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		if exists(t, legacy+side) {
			t.Errorf("%s appeared beside the reference agent.db", side)
		}
	}

	// While the reference runs (its -wal exists), the check reads through
	// SQLite, read only: the database file stays identical.
	if err := os.WriteFile(legacy+"-wal", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if moved, err := AdoptLegacy(ctx, legacy, filepath.Join(dir, "other.db")); err != nil || moved {
		t.Fatalf("AdoptLegacy beside a running reference = %v, %v; want nothing done", moved, err)
	}
	if after, _ := os.ReadFile(legacy); !bytes.Equal(before, after) {
		t.Fatal("the reference agent.db changed")
	}
}

// TestAdoptLegacyIgnoresNonDatabases: an empty or foreign agent.db is not
// ours and not an error.
func TestAdoptLegacyIgnoresNonDatabases(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"", "not a database at all, but long enough to have a header of a hundred bytes......................."} {
		legacy := filepath.Join(dir, "agent.db")
		if err := os.WriteFile(legacy, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if moved, err := AdoptLegacy(context.Background(), legacy, filepath.Join(dir, "vault.db")); err != nil || moved {
			t.Fatalf("AdoptLegacy on %d bytes of junk = %v, %v", len(content), moved, err)
		}
	}
}

func TestAdoptLegacyRefusesVaultInUse(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	legacy, kr := legacyVault(t, dir)
	st, err := Open(ctx, legacy, kr, Options{}) // an older broker still running
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	path := filepath.Join(dir, "vault.db")
	if _, err := AdoptLegacy(ctx, legacy, path); !errors.Is(err, ErrVaultInUse) {
		t.Fatalf("AdoptLegacy while open = %v, want ErrVaultInUse", err)
	}
	if exists(t, path) || !exists(t, legacy) {
		t.Fatal("a refused move changed the files")
	}
}

const (
	adoptChildEnv = "OMP_ADOPT_CHILD_DIR"
	adoptStageEnv = "OMP_ADOPT_CHILD_STAGE"
)

// TestAdoptChild is the helper process of TestAdoptLegacyCrash: it adopts
// the legacy vault in $OMP_ADOPT_CHILD_DIR and kills itself (SIGKILL) at
// stage $OMP_ADOPT_CHILD_STAGE.
func TestAdoptChild(t *testing.T) {
	dir := os.Getenv(adoptChildEnv)
	if dir == "" {
		t.Skip("helper process")
	}
	want := os.Getenv(adoptStageEnv)
	adoptHook = func(stage string) error {
		if stage == want {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	}
	_, err := AdoptLegacy(context.Background(), filepath.Join(dir, "agent.db"), filepath.Join(dir, "vault.db"))
	t.Fatalf("stage %q never reached (err %v)", want, err)
}

// TestAdoptLegacyCrash: a process killed at any stage of the move leaves
// the vault at the old path, the new one, or both names on one file —
// never neither — and the next adoption completes it with every row.
func TestAdoptLegacyCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	for _, stage := range []string{"inspected", "folded", "linked"} {
		t.Run(stage, func(t *testing.T) {
			dir := t.TempDir()
			legacy, kr := legacyVault(t, dir)
			path := filepath.Join(dir, "vault.db")
			cmd := exec.Command(os.Args[0], "-test.run=^TestAdoptChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), adoptChildEnv+"="+dir, adoptStageEnv+"="+stage)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child was not killed at %s: %v\n%s", stage, err, out)
			}
			if !exists(t, legacy) && !exists(t, path) {
				t.Fatal("neither the old nor the new vault file exists")
			}
			if _, err := AdoptLegacy(context.Background(), legacy, path); err != nil {
				t.Fatal(err)
			}
			if exists(t, legacy) {
				t.Fatal("the old name survived the completed move")
			}
			checkAdopted(t, path, kr)
		})
	}
}
