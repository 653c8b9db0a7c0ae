package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

func backupKey(i int) vault.Credential {
	return vault.Credential{Type: vault.TypeAPIKey, Key: fmt.Sprintf("sk-backup-%06d", i)}
}

// keysOf returns the API keys of a restored vault, checking that each is
// one the writer wrote.
func keysOf(t *testing.T, st *sqlite.Store, written int) map[string]bool {
	t.Helper()
	recs, err := st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]bool, len(recs))
	for _, r := range recs {
		var i int
		if _, err := fmt.Sscanf(r.Credential.Key, "sk-backup-%06d", &i); err != nil || i >= written {
			t.Fatalf("restored vault holds a key nobody wrote: %q", r.Credential.Key)
		}
		got[r.Credential.Key] = true
	}
	return got
}

// A backup taken while a writer upserts is one consistent snapshot: it
// holds every write acknowledged before it started, none the writer had
// not made when it finished, and no gap (writes commit in order). It
// verifies with the key, is 0600, and a restore of it serves those rows.
func TestBackupUnderConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	st := e.open(t)
	const seed = 40
	for i := range seed {
		if _, err := st.Upsert(ctx, "openai", backupKey(i)); err != nil {
			t.Fatal(err)
		}
	}

	var acked atomic.Int64 // writes acknowledged (committed)
	acked.Store(seed)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var writeErr error
	go func() {
		defer wg.Done()
		for i := seed; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := st.Upsert(ctx, "openai", backupKey(i)); err != nil {
				writeErr = err
				return
			}
			acked.Store(int64(i + 1))
		}
	}()

	dir := t.TempDir()
	type snap struct {
		path          string
		before, after int64
		info          sqlite.BackupInfo
	}
	var snaps []snap
	for n := range 3 {
		// Let the writer make progress between backups.
		for start := acked.Load(); acked.Load() < start+5; {
			time.Sleep(time.Millisecond)
		}
		s := snap{path: filepath.Join(dir, fmt.Sprintf("backup-%d.db", n)), before: acked.Load()}
		info, err := sqlite.Backup(ctx, e.path, s.path, e.kr)
		s.after = acked.Load() + 1 // the write in flight may be in the copy
		if err != nil {
			t.Fatalf("backup %d: %v", n, err)
		}
		s.info = info
		t.Logf("backup %d: %d rows; %d writes acknowledged before, %d after", n, info.Active, s.before, s.after-1)
		snaps = append(snaps, s)
	}
	close(stop)
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("writer: %v", writeErr)
	}
	written := int(acked.Load())

	for n, s := range snaps {
		fi, err := os.Stat(s.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("backup %d mode = %v, want 0600", n, fi.Mode().Perm())
		}
		if s.info.Credentials != s.info.Active || int64(s.info.Active) < s.before || int64(s.info.Active) > s.after {
			t.Errorf("backup %d holds %d rows (%d active); writes acknowledged: %d before, ≤ %d after", n, s.info.Credentials, s.info.Active, s.before, s.after)
		}
		if s.info.VaultID != st.VaultID() {
			t.Errorf("backup %d vault id %q, want %q", n, s.info.VaultID, st.VaultID())
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			if _, err := os.Stat(s.path + suffix); err == nil {
				t.Errorf("backup %d left %s behind", n, suffix)
			}
		}

		// Restore into a fresh vault path and serve it.
		target := filepath.Join(t.TempDir(), "restored", "agent.db")
		res, err := sqlite.Restore(ctx, s.path, target, e.kr)
		if err != nil {
			t.Fatalf("restore %d: %v", n, err)
		}
		if res.Previous != "" || res.Active != s.info.Active {
			t.Errorf("restore %d = %+v, want no previous vault and %d active", n, res, s.info.Active)
		}
		rst, err := sqlite.Open(ctx, target, e.kr, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := keysOf(t, rst, written)
		rst.Close()
		if len(got) != s.info.Active {
			t.Fatalf("restore %d serves %d credentials, backup verified %d", n, len(got), s.info.Active)
		}
		for i := range len(got) { // a prefix: commits are ordered
			if !got[backupKey(i).Key] {
				t.Fatalf("restore %d misses write %d of %d", n, i, len(got))
			}
		}
	}
}

// Restore keeps the vault it replaces, refuses while a broker holds the
// vault, and refuses a backup the key does not open; a refused restore
// changes nothing.
func TestRestoreReplacesAndRefuses(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	st := e.open(t)
	for i := range 3 {
		if _, err := st.Upsert(ctx, "openai", backupKey(i)); err != nil {
			t.Fatal(err)
		}
	}
	backup := filepath.Join(t.TempDir(), "b.db")
	if _, err := sqlite.Backup(ctx, e.path, backup, e.kr); err != nil {
		t.Fatal(err)
	}
	// The live vault moves on: one more credential, not in the backup.
	if _, err := st.Upsert(ctx, "openai", backupKey(3)); err != nil {
		t.Fatal(err)
	}

	// A broker holds the vault: refused, nothing changed.
	hold, err := sqlite.HoldVault(e.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Restore(ctx, backup, e.path, e.kr); !errors.Is(err, sqlite.ErrVaultInUse) || !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("restore under a broker: %v, want ErrVaultInUse", err)
	}
	// A second broker may not hold it.
	if _, err := sqlite.HoldVault(e.path); !errors.Is(err, sqlite.ErrVaultInUse) {
		t.Fatalf("second holder: %v, want ErrVaultInUse", err)
	}
	hold.Release()

	// Wrong key: refused before anything is touched.
	other, _ := seal.NewKeyring(seal.NewKey())
	if _, err := sqlite.Restore(ctx, backup, e.path, other); err == nil || !strings.Contains(err.Error(), "vault key does not match") {
		t.Fatalf("restore with the wrong key: %v", err)
	}
	if recs, _ := st.List(ctx, ""); len(recs) != 4 {
		t.Fatalf("a refused restore changed the vault: %d rows", len(recs))
	}
	// Not a vault at all.
	junk := filepath.Join(t.TempDir(), "junk.db")
	os.WriteFile(junk, []byte("not sqlite at all, just text"), 0o600)
	if _, err := sqlite.Restore(ctx, junk, e.path, e.kr); err == nil {
		t.Fatal("restore of a non-vault file succeeded")
	}
	st.Close() // the broker stops

	res, err := sqlite.Restore(ctx, backup, e.path, e.kr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Active != 3 || res.Previous == "" {
		t.Fatalf("restore = %+v", res)
	}
	rst, err := sqlite.Open(ctx, e.path, e.kr, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rst.Close()
	if got := keysOf(t, rst, 4); len(got) != 3 || got[backupKey(3).Key] {
		t.Fatalf("restored vault serves %v, want the 3 backed-up keys", got)
	}
	prev, err := sqlite.Verify(ctx, res.Previous, e.kr)
	if err != nil || prev.Active != 4 {
		t.Fatalf("the replaced vault kept as %s: %+v, %v", res.Previous, prev, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(e.path))
	for _, de := range entries {
		if strings.Contains(de.Name(), ".tmp-") {
			t.Errorf("restore left %s behind", de.Name())
		}
	}
}

// Backup with a key that does not open the vault fails and writes nothing.
func TestBackupWrongKeyWritesNothing(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	st := e.open(t)
	if _, err := st.Upsert(ctx, "openai", backupKey(0)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	other, _ := seal.NewKeyring(seal.NewKey())
	if _, err := sqlite.Backup(ctx, e.path, filepath.Join(dir, "b.db"), other); err == nil {
		t.Fatal("backup verified with the wrong key")
	}
	if _, err := sqlite.Backup(ctx, e.path, e.path, e.kr); err == nil {
		t.Fatal("backup onto the vault itself succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a failed backup left %d files", len(entries))
	}
}
