//go:build unix

package sqlite_test

import (
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
