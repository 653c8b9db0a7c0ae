package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// keyFileEnv is a vault whose keyring lives in a real key file.
type keyFileEnv struct {
	*env
	keyPath string
}

func newKeyFileEnv(t *testing.T) *keyFileEnv {
	t.Helper()
	e := newEnv(t)
	keyPath := filepath.Join(t.TempDir(), "cfg", "vault.key")
	kr, _, err := seal.LoadOrCreateKeyFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	e.kr = kr
	return &keyFileEnv{env: e, keyPath: keyPath}
}

// openBroker opens the vault the way the broker does: the key file's keyring,
// reloaded from the file when the vault's active key changes.
func (e *keyFileEnv) openBroker(t *testing.T) *sqlite.Store {
	t.Helper()
	kr, err := seal.LoadKeyFile(e.keyPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), e.path, kr, sqlite.Options{
		Now:           e.clk.Now,
		ReloadKeyring: func() (*seal.Keyring, error) { return seal.LoadKeyFile(e.keyPath) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openFinal opens the vault with nothing but the key file as it is now.
func (e *keyFileEnv) openFinal(t *testing.T) *sqlite.Store {
	t.Helper()
	kr, err := seal.LoadKeyFile(e.keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(kr.IDs()); n != 1 {
		t.Fatalf("key file holds %d keys after rekey, want 1", n)
	}
	st, err := sqlite.Open(context.Background(), e.path, kr, sqlite.Options{Now: e.clk.Now})
	if err != nil {
		t.Fatalf("open with the final key file: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// blobKeyIDs returns the distinct key ids of every sealed blob in the file.
func blobKeyIDs(t *testing.T, path string) []uint32 {
	t.Helper()
	db := rawDB(t, path)
	defer db.Close()
	var out []uint32
	add := func(b []byte) {
		if id, err := seal.KeyIDOf(b); err == nil && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	rows, err := db.Query("SELECT access, refresh, api_key, extra FROM auth_credentials UNION ALL SELECT value, x'', x'', x'' FROM cache UNION ALL SELECT value, x'', x'', x'' FROM meta WHERE key = 'canary'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var b [4][]byte
		if err := rows.Scan(&b[0], &b[1], &b[2], &b[3]); err != nil {
			t.Fatal(err)
		}
		for _, x := range b {
			add(x)
		}
	}
	slices.Sort(out)
	return out
}

func refreshOf(t *testing.T, st *sqlite.Store, id int64) string {
	t.Helper()
	r, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%d): %v", id, err)
	}
	return r.Credential.Refresh
}

// TestRekeyStepsBrokerFollowsNewKey walks the protocol step by step with a
// broker store writing between the steps. The old flow lost the token the
// broker rotated after the re-seal (sealed under the old key, which was then
// retired); here every broker write after the switch lands under the new key.
func TestRekeyStepsBrokerFollowsNewKey(t *testing.T) {
	ctx := context.Background()
	e := newKeyFileEnv(t)
	broker := e.openBroker(t)
	must[[]vault.Record](t)(broker.Upsert(ctx, "anthropic", oauth("a@x.io", "r0")))
	must[[]vault.Record](t)(broker.Upsert(ctx, "openai", apiKey("sk-A")))
	if err := broker.SetCache(ctx, "usage_cache:a", []byte("v0"), e.clk.Now().UnixMilli()+3_600_000); err != nil {
		t.Fatal(err)
	}
	oldID := e.kr.ActiveID()

	// Step 1+2: a new key in the file, made the vault's active key by
	// another store (the rekey command).
	kr2, err := seal.AddKey(e.keyPath)
	if err != nil {
		t.Fatal(err)
	}
	newID := kr2.ActiveID()
	rekeyer := must[*sqlite.Store](t)(sqlite.Open(ctx, e.path, e.kr, sqlite.Options{Now: e.clk.Now}))
	defer rekeyer.Close()
	if got := rekeyer.ActiveKeyID(); got != oldID {
		t.Fatalf("store opened mid-rekey seals under %08x, want the vault's %08x", got, oldID)
	}
	if err := rekeyer.SetKeyring(ctx, kr2); err != nil {
		t.Fatal(err)
	}

	// The broker still holds only the old key; its next write reloads the
	// key file and seals under the new key.
	if broker.ActiveKeyID() != oldID {
		t.Fatal("broker switched keys without a write")
	}
	must[vault.Record](t)(broker.UpdateCredential(ctx, 1, oauth("a@x.io", "r1")))
	if broker.ActiveKeyID() != newID {
		t.Fatalf("broker seals under %08x after the switch, want %08x", broker.ActiveKeyID(), newID)
	}

	// Step 3: reseal; the broker reads rows it has never seen under the new key.
	if n, err := rekeyer.Reseal(ctx); err != nil || n == 0 {
		t.Fatalf("Reseal = %d, %v", n, err)
	}
	if got := blobKeyIDs(t, e.path); !slices.Equal(got, []uint32{newID}) {
		t.Fatalf("blob key ids after reseal %08x, want only %08x", got, newID)
	}
	if v, ok, err := broker.GetCache(ctx, "usage_cache:a", false); err != nil || !ok || string(v) != "v0" {
		t.Fatalf("broker GetCache after reseal = %q %v %v", v, ok, err)
	}
	// The write the old flow lost: a rotation between the re-seal and the retire.
	must[vault.Record](t)(broker.UpdateCredential(ctx, 1, oauth("a@x.io", "r2")))

	// Step 4: retire under the write lock.
	var kept uint32
	if err := rekeyer.Retire(ctx, func(keep uint32) error {
		kept = keep
		_, err := seal.RetireKeys(e.keyPath, keep)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if kept != newID {
		t.Fatalf("Retire kept %08x, want %08x", kept, newID)
	}
	must[vault.Record](t)(broker.UpdateCredential(ctx, 1, oauth("a@x.io", "r3")))

	final := e.openFinal(t)
	wantState(t, final, "1 anthropic email:a@x.io r3", "2 openai - sk-A")
	if got := blobKeyIDs(t, e.path); !slices.Equal(got, []uint32{newID}) {
		t.Fatalf("blob key ids after retire %08x, want only %08x", got, newID)
	}
}

// TestRekeyWhileBrokerWrites runs Rekey to completion while a broker store
// rotates refresh tokens from another goroutine (the refresher), then checks
// that the final key file alone opens every row with the last values.
func TestRekeyWhileBrokerWrites(t *testing.T) {
	ctx := context.Background()
	e := newKeyFileEnv(t)
	broker := e.openBroker(t)
	const rows = 4
	for i := range rows {
		must[[]vault.Record](t)(broker.Upsert(ctx, "anthropic", oauth(fmt.Sprintf("u%d@x.io", i), fmt.Sprintf("r%d-0", i))))
	}
	for i := range 80 { // more than one reseal batch
		if err := broker.SetCache(ctx, fmt.Sprintf("usage_cache:%03d", i), []byte("v"), e.clk.Now().UnixMilli()+3_600_000); err != nil {
			t.Fatal(err)
		}
	}

	last := make([]string, rows)
	var writes atomic.Int64
	done := make(chan struct{})
	running := make(chan struct{}) // closed after the first rows rotations
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		// Keep rotating until rekey is done and a few writes followed it.
		after := 0
		for n := 1; ; n++ {
			select {
			case <-done:
				after++
			default:
			}
			if after > 2*rows {
				errc <- nil
				return
			}
			i := n % rows
			tok := fmt.Sprintf("r%d-%d", i, n)
			if _, err := broker.UpdateCredential(ctx, int64(i+1), oauth(fmt.Sprintf("u%d@x.io", i), tok)); err != nil {
				errc <- fmt.Errorf("rotation %d: %w", n, err)
				return
			}
			last[i] = tok
			if writes.Add(1) == rows {
				close(running)
			}
			if _, err := broker.Get(ctx, int64(i+1)); err != nil {
				errc <- fmt.Errorf("read after rotation %d: %w", n, err)
				return
			}
		}
	})
	// The refresher is running before the rekey starts.
	select {
	case <-running:
	case err := <-errc:
		t.Fatalf("broker before the rekey: %v", err)
	}
	before := writes.Load()
	// Same clock as the broker: Open purges cache rows expired by its clock.
	res, err := sqlite.Rekey(ctx, e.path, e.keyPath, sqlite.Options{Now: e.clk.Now})
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatalf("Rekey: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("broker: %v", err)
	}
	t.Logf("rekey re-sealed %d blobs; broker rotated %d tokens before and %d during/after it", res.Resealed, before, writes.Load()-before)
	if !slices.Equal(res.RetiredIDs, []uint32{e.kr.ActiveID()}) {
		t.Fatalf("retired %08x, want %08x", res.RetiredIDs, e.kr.ActiveID())
	}

	final := e.openFinal(t)
	if final.ActiveKeyID() != res.ActiveKeyID {
		t.Fatalf("final key %08x, rekey reported %08x", final.ActiveKeyID(), res.ActiveKeyID)
	}
	for i := range rows {
		if got := refreshOf(t, final, int64(i+1)); got != last[i] {
			t.Fatalf("row %d refresh = %q, want the last rotation %q", i+1, got, last[i])
		}
	}
	for i := range 80 {
		if v, ok, err := final.GetCache(ctx, fmt.Sprintf("usage_cache:%03d", i), false); err != nil || !ok || string(v) != "v" {
			t.Fatalf("cache %d after rekey: %q %v %v", i, v, ok, err)
		}
	}
	if got := blobKeyIDs(t, e.path); !slices.Equal(got, []uint32{res.ActiveKeyID}) {
		t.Fatalf("blob key ids %08x, want only %08x", got, res.ActiveKeyID)
	}
}

// TestRekeyBrokerWithoutReloadRefusesOldKey: a broker keyed by OMP_VAULT_KEY
// (no reload hook) cannot follow a rekey; its writes fail with a clear error
// instead of sealing under the key the vault no longer considers active.
func TestRekeyBrokerWithoutReloadRefusesOldKey(t *testing.T) {
	ctx := context.Background()
	e := newKeyFileEnv(t)
	broker := e.open(t) // the old keyring, no ReloadKeyring
	must[[]vault.Record](t)(broker.Upsert(ctx, "anthropic", oauth("a@x.io", "r0")))

	kr2 := must[*seal.Keyring](t)(seal.AddKey(e.keyPath))
	rekeyer := must[*sqlite.Store](t)(sqlite.Open(ctx, e.path, kr2, sqlite.Options{}))
	defer rekeyer.Close()
	if err := rekeyer.SetKeyring(ctx, kr2); err != nil {
		t.Fatal(err)
	}

	_, err := broker.UpdateCredential(ctx, 1, oauth("a@x.io", "r1"))
	var mk *sqlite.MissingKeyError
	if !errors.As(err, &mk) || mk.Active != kr2.ActiveID() || !slices.Equal(mk.Have, e.kr.IDs()) || !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("write after the switch = %v, want *MissingKeyError naming %08x", err, kr2.ActiveID())
	}
	for _, id := range []uint32{kr2.ActiveID(), e.kr.ActiveID()} {
		if !strings.Contains(err.Error(), fmt.Sprintf("%08x", id)) {
			t.Fatalf("error does not name key %08x: %v", id, err)
		}
	}
	if got := refreshOf(t, rekeyer, 1); got != "r0" {
		t.Fatalf("refused write changed the row: %q", got)
	}
	if got := blobKeyIDs(t, e.path); !slices.Equal(got, []uint32{e.kr.ActiveID()}) {
		t.Fatalf("blob key ids %08x: the refused write sealed something", got)
	}
}

// TestOpenWithKeyFileMissingVaultKey: a key file older than the vault's
// last rekey (or a wrong one) is a startup error naming the key ids, never
// an empty or half-readable vault.
func TestOpenWithKeyFileMissingVaultKey(t *testing.T) {
	ctx := context.Background()
	e := newKeyFileEnv(t)
	oldKR := e.kr
	st := e.openBroker(t)
	must[[]vault.Record](t)(st.Upsert(ctx, "openai", apiKey("sk-A")))
	st.Close()
	res, err := sqlite.Rekey(ctx, e.path, e.keyPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(t.TempDir(), "stale.key")
	if err := writeKeyFileForTest(stale, oldKR); err != nil {
		t.Fatal(err)
	}

	for name, reload := range map[string]func() (*seal.Keyring, error){
		"without a reload hook":                    nil,
		"with a reload hook reading the same file": func() (*seal.Keyring, error) { return seal.LoadKeyFile(stale) },
	} {
		t.Run(name, func(t *testing.T) {
			kr := must[*seal.Keyring](t)(seal.LoadKeyFile(stale))
			_, err := sqlite.Open(ctx, e.path, kr, sqlite.Options{ReloadKeyring: reload})
			if !errors.Is(err, seal.ErrUnknownKey) {
				t.Fatalf("Open = %v, want an unknown-key error", err)
			}
			for _, id := range []uint32{res.ActiveKeyID, oldKR.ActiveID()} {
				if !strings.Contains(err.Error(), fmt.Sprintf("%08x", id)) {
					t.Fatalf("error does not name key %08x: %v", id, err)
				}
			}
		})
	}

	// Mid-rekey (the vault already switched, the file lost the new key): the
	// vault's active key id is what the error names.
	t.Run("vault switched, key file lacks the new key", func(t *testing.T) {
		e := newKeyFileEnv(t)
		st := e.open(t)
		kr2, _ := seal.NewKeyring(seal.NewKey(), e.kr.Keys()...)
		if err := st.SetKeyring(ctx, kr2); err != nil {
			t.Fatal(err)
		}
		st.Close()
		_, err := sqlite.Open(ctx, e.path, e.kr, sqlite.Options{})
		var mk *sqlite.MissingKeyError
		if !errors.As(err, &mk) || mk.Active != kr2.ActiveID() || !strings.Contains(err.Error(), "vault key does not match this vault") {
			t.Fatalf("Open = %v, want *MissingKeyError for %08x", err, kr2.ActiveID())
		}
	})
}

// TestRetireRefusesWhileBlobsNeedReseal: the retire callback (which drops
// keys from the key file) never runs while a blob still needs an old key.
func TestRetireRefusesWhileBlobsNeedReseal(t *testing.T) {
	ctx := context.Background()
	st, e := newStore(t)
	must[[]vault.Record](t)(st.Upsert(ctx, "openai", apiKey("sk-A")))
	kr2, _ := seal.NewKeyring(seal.NewKey(), e.kr.Keys()...)
	if err := st.SetKeyring(ctx, kr2); err != nil {
		t.Fatal(err)
	}
	called := false
	err := st.Retire(ctx, func(uint32) error { called = true; return nil })
	if !errors.Is(err, sqlite.ErrResealPending) || called {
		t.Fatalf("Retire before Reseal = %v (callback called: %v)", err, called)
	}
	if n, err := st.Reseal(ctx); err != nil || n != 4+1 {
		t.Fatalf("Reseal = %d, %v", n, err)
	}
	boom := errors.New("boom")
	if err := st.Retire(ctx, func(keep uint32) error {
		if keep != kr2.ActiveID() {
			t.Errorf("keep = %08x", keep)
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Retire = %v, want the callback's error", err)
	}
}

// TestSetKeyringNeedsVaultActiveKey: a keyring that opens the canary but
// lacks the vault's active key cannot take over.
func TestSetKeyringNeedsVaultActiveKey(t *testing.T) {
	ctx := context.Background()
	st, e := newStore(t)
	k2 := seal.NewKey()
	kr2, _ := seal.NewKeyring(k2, e.kr.Keys()...)
	if err := st.SetKeyring(ctx, kr2); err != nil {
		t.Fatal(err)
	}
	// The canary is still under the first key; a keyring with only that key
	// opens it but not what the vault now seals under.
	err := st.SetKeyring(ctx, e.kr)
	var mk *sqlite.MissingKeyError
	if !errors.As(err, &mk) || mk.Active != k2.ID {
		t.Fatalf("SetKeyring = %v, want *MissingKeyError for %08x", err, k2.ID)
	}
}

// writeKeyFileForTest writes kr as a 0600 key file.
func writeKeyFileForTest(path string, kr *seal.Keyring) error {
	return os.WriteFile(path, seal.MarshalKeyFile(kr), 0o600)
}

// TestBrokerReadsRowsResealedElsewhere: a broker that has not written since
// another process re-sealed the vault reloads the key file on its first read
// of a blob under the new key (Get, List, GetCache); without a reload hook
// the read is a *BlobError naming the row.
func TestBrokerReadsRowsResealedElsewhere(t *testing.T) {
	ctx := context.Background()
	e := newKeyFileEnv(t)
	broker := e.openBroker(t)
	noReload := e.open(t)
	must[[]vault.Record](t)(broker.Upsert(ctx, "anthropic", oauth("a@x.io", "r0")))
	if err := broker.SetCache(ctx, "usage_cache:a", []byte("v0"), e.clk.Now().UnixMilli()+3_600_000); err != nil {
		t.Fatal(err)
	}
	// One broker per read kind, started before the rekey (the old keyring in
	// memory), so each kind is the first read to meet the new key.
	fresh := map[string]*sqlite.Store{"Get": e.openBroker(t), "List": e.openBroker(t), "GetCache": e.openBroker(t)}
	kr2 := must[*seal.Keyring](t)(seal.AddKey(e.keyPath))
	rekeyer := must[*sqlite.Store](t)(sqlite.Open(ctx, e.path, kr2, sqlite.Options{Now: e.clk.Now}))
	defer rekeyer.Close()
	if err := rekeyer.SetKeyring(ctx, kr2); err != nil {
		t.Fatal(err)
	}
	must[int](t)(rekeyer.Reseal(ctx))

	for name, read := range map[string]func(*sqlite.Store) error{
		"Get": func(st *sqlite.Store) error { _, err := st.Get(ctx, 1); return err },
		"List": func(st *sqlite.Store) error {
			recs, err := st.List(ctx, "")
			if err == nil && len(recs) != 1 {
				err = fmt.Errorf("%d records", len(recs))
			}
			return err
		},
		"GetCache": func(st *sqlite.Store) error {
			v, ok, err := st.GetCache(ctx, "usage_cache:a", false)
			if err == nil && (!ok || string(v) != "v0") {
				err = fmt.Errorf("cache = %q %v", v, ok)
			}
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			var be *sqlite.BlobError
			if err := read(noReload); !errors.As(err, &be) || !errors.Is(err, seal.ErrUnknownKey) {
				t.Fatalf("without reload: %v, want a *BlobError for an unknown key", err)
			}
			if err := read(fresh[name]); err != nil {
				t.Fatalf("broker read: %v", err)
			}
		})
	}
	if got := refreshOf(t, broker, 1); got != "r0" {
		t.Fatalf("refresh = %q", got)
	}
}

func TestRekeyRefusesWhileAnotherRekeyHoldsTheLock(t *testing.T) {
	e := newKeyFileEnv(t)
	e.openBroker(t).Close()
	before, err := os.ReadFile(e.keyPath)
	if err != nil {
		t.Fatal(err)
	}
	// Hold the lock the way a running rekey does: flock on <key>.lock from
	// another open file description.
	f, err := os.OpenFile(e.keyPath+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Rekey(context.Background(), e.path, e.keyPath, sqlite.Options{})
	if !errors.Is(err, sqlite.ErrRekeyRunning) {
		t.Fatalf("err = %v, want ErrRekeyRunning", err)
	}
	after, _ := os.ReadFile(e.keyPath)
	if string(after) != string(before) {
		t.Fatal("a refused rekey changed the key file")
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if _, err := sqlite.Rekey(context.Background(), e.path, e.keyPath, sqlite.Options{}); err != nil {
		t.Fatalf("rekey after the lock was released: %v", err)
	}
}
