//go:build unix

package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// While a restore holds the vault exclusively, a broker cannot start on it.
func TestHoldVaultDuringRestore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.HoldVault(path); !errors.Is(err, sqlite.ErrVaultInUse) {
		t.Fatalf("HoldVault during a restore: %v, want ErrVaultInUse", err)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	release, err := sqlite.HoldVault(path)
	if err != nil {
		t.Fatalf("HoldVault after the restore: %v", err)
	}
	release()
}

// Restore run by root into a directory another user owns (a systemd
// DynamicUser state directory) leaves the vault, its lock and the kept
// previous vault owned by that user, so the service can open them.
func TestRestoreAsRootKeepsServiceOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	ctx := context.Background()
	e := newEnv(t)
	st := e.open(t)
	if _, err := st.Upsert(ctx, "openai", backupKey(1)); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "b.db")
	if _, err := sqlite.Backup(ctx, e.path, backup, e.kr); err != nil {
		t.Fatal(err)
	}
	st.Close()
	const uid, gid = 54321, 54322
	if err := os.Chown(filepath.Dir(e.path), uid, gid); err != nil {
		t.Fatal(err)
	}
	res, err := sqlite.Restore(ctx, backup, e.path, e.kr)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{e.path, e.path + ".lock", res.Previous} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if s := fi.Sys().(*syscall.Stat_t); s.Uid != uid || s.Gid != gid || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: owner %d:%d mode %v, want %d:%d 0600", filepath.Base(p), s.Uid, s.Gid, fi.Mode().Perm(), uid, gid)
		}
	}
}
