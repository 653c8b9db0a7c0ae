//go:build unix

package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ompgo/omp/pkg/vault/seal"
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
	if _, err := f.WriteString("pid=4242\nrole=restore\n"); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.HoldVault(path)
	if !errors.Is(err, sqlite.ErrVaultInUse) || !strings.Contains(err.Error(), "a restore of "+path+" is in progress (pid 4242)") {
		t.Fatalf("HoldVault during a restore: %v, want ErrVaultInUse naming the restore", err)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	hold, err := sqlite.HoldVault(path)
	if err != nil {
		t.Fatalf("HoldVault after the restore: %v", err)
	}
	hold.Release()
}

// One broker per vault: a second HoldVault is refused with the first
// holder's pid and address, Restore is refused too, and once the first
// releases, the vault can be held again.
func TestHoldVaultIsExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.db")
	first, err := sqlite.HoldVault(path)
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(os.Getpid())

	// Held but not listening yet: the pid is known, the address is not.
	_, err = sqlite.HoldVault(path)
	var held *sqlite.HeldError
	if !errors.As(err, &held) || held.PID != os.Getpid() || held.Role != "broker" || held.Addr != "" {
		t.Fatalf("second hold before Announce: %v", err)
	}
	if want := "vault " + path + " is served by another broker (pid " + pid + ", not listening yet)"; !strings.Contains(err.Error(), want) {
		t.Fatalf("second hold before Announce: %q, want it to contain %q", err, want)
	}

	if err := first.Announce("http://127.0.0.1:8765"); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.HoldVault(path)
	want := "vault " + path + " is served by another broker (pid " + pid + ", http://127.0.0.1:8765); stop it first or point this one at another vault"
	if !errors.Is(err, sqlite.ErrVaultInUse) || err.Error() != want {
		t.Fatalf("second hold: %v\nwant %s", err, want)
	}
	kr, _ := seal.NewKeyring(seal.NewKey())
	_, err = sqlite.Restore(context.Background(), filepath.Join(t.TempDir(), "none.db"), path, kr)
	if !errors.Is(err, sqlite.ErrVaultInUse) || !strings.Contains(err.Error(), "a broker is serving "+path+" (pid "+pid+", http://127.0.0.1:8765)") {
		t.Fatalf("restore under a broker: %v", err)
	}

	first.Release()
	first.Release() // twice is harmless
	if raw, err := os.ReadFile(path + ".lock"); err != nil || len(raw) != 0 {
		t.Fatalf("lock file after release: %q, %v; want it empty", raw, err)
	}
	second, err := sqlite.HoldVault(path)
	if err != nil {
		t.Fatalf("hold after release: %v", err)
	}
	second.Release()
}

// A lock file an older omp-go holds without writing it still refuses the
// hold, with a message that says the holder is unknown.
func TestHoldVaultUnknownHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.db")
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.HoldVault(path)
	if !errors.Is(err, sqlite.ErrVaultInUse) || !strings.Contains(err.Error(), "holder unknown") {
		t.Fatalf("hold beside a silent holder: %v", err)
	}
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
