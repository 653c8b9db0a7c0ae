package sqlite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

func TestOpenCreatesPrivateFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX modes")
	}
	st, e := newStore(t)
	must[[]vault.Record](t)(st.Upsert(context.Background(), "openai", apiKey("sk-A")))
	for _, p := range []string{e.path, e.path + "-wal", e.path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s mode %04o, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
	fi, err := os.Stat(filepath.Dir(e.path))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("vault dir mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	if len(st.VaultID()) != 32 {
		t.Fatalf("vault id %q", st.VaultID())
	}
}

func TestOpenTightensExistingFileMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX modes")
	}
	e := newEnv(t)
	os.MkdirAll(filepath.Dir(e.path), 0o700)
	os.WriteFile(e.path, nil, 0o644)
	e.open(t)
	if fi, _ := os.Stat(e.path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %04o", fi.Mode().Perm())
	}
}

func TestOpenRejectsKeyNotMatchingVault(t *testing.T) {
	e := newEnv(t)
	st := e.open(t)
	must[[]vault.Record](t)(st.Upsert(context.Background(), "openai", apiKey("sk-A")))
	st.Close()

	other, _ := seal.NewKeyring(seal.NewKey())
	impostor, _ := seal.NewKeyring(seal.Key{ID: e.kr.ActiveID(), Secret: seal.NewKey().Secret})
	for name, tc := range map[string]struct {
		kr   *seal.Keyring
		want error
	}{
		"different key reports unknown key id": {other, seal.ErrUnknownKey},
		"same id with another secret fails":    {impostor, seal.ErrAuth},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := sqlite.Open(context.Background(), e.path, tc.kr, sqlite.Options{})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "vault key does not match this vault") ||
				!strings.Contains(err.Error(), fmt.Sprintf("%08x", e.kr.ActiveID())) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	if _, err := sqlite.Open(context.Background(), e.path, nil, sqlite.Options{}); err == nil {
		t.Fatal("nil keyring accepted")
	}
}

func TestOpenRefusesPlainReferenceDB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	db := rawDB(t, path)
	execSQL(t, db, refSchemaV4)
	db.Close()
	kr, _ := seal.NewKeyring(seal.NewKey())
	_, err := sqlite.Open(context.Background(), path, kr, sqlite.Options{})
	if err == nil || !strings.Contains(err.Error(), "reference agent.db") {
		t.Fatalf("err = %v", err)
	}
}

func TestGenerationIsMonotonicAcrossReopenAndProcesses(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var changes atomic.Int32
	st := e.open(t, func(o *sqlite.Options) { o.OnChange = func() { changes.Add(1) } })
	g0 := gen(t, st)
	if g0 != e.clk.Now().UnixMilli() {
		t.Fatalf("first generation %d, want now in ms %d", g0, e.clk.Now().UnixMilli())
	}
	must[[]vault.Record](t)(st.Upsert(ctx, "openai", apiKey("sk-A")))
	if err := st.Disable(ctx, 1, ""); err != nil {
		t.Fatal(err)
	}
	if g := gen(t, st); g != g0+2 || changes.Load() != 2 {
		t.Fatalf("after two writes generation %d (want %d), OnChange %d", g, g0+2, changes.Load())
	}
	if err := st.SetCache(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if g := gen(t, st); g != g0+2 || changes.Load() != 2 {
		t.Fatal("a cache write advanced the generation")
	}

	// A second handle on the same file stands in for a CLI process.
	cli := e.open(t)
	gCLI := gen(t, cli)
	if gCLI <= g0+2 {
		t.Fatalf("opening again did not advance: %d", gCLI)
	}
	must[[]vault.Record](t)(cli.Upsert(ctx, "openai", apiKey("sk-B")))
	if g := gen(t, st); g != gCLI+1 {
		t.Fatalf("broker sees generation %d after CLI write, want %d", g, gCLI+1)
	}
	if changes.Load() != 2 {
		t.Fatal("OnChange called for another handle's write")
	}
	st.Close()
	cli.Close()

	// A clock that went backwards still cannot lower the generation.
	e.clk.Set(time.UnixMilli(1000))
	st = e.open(t)
	if g := gen(t, st); g != gCLI+2 {
		t.Fatalf("after reopen with an early clock generation %d, want %d", g, gCLI+2)
	}
	st.Close()
	// A later clock jumps ahead to now.
	e.clk.Set(time.UnixMilli(1_900_000_000_000))
	st = e.open(t)
	if g := gen(t, st); g != 1_900_000_000_000 {
		t.Fatalf("after reopen with a later clock generation %d", g)
	}
}

func TestConcurrentUpsertsAllLand(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	g0 := gen(t, st)
	const workers, each = 8, 10
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if _, err := st.Upsert(ctx, "openai", apiKey(fmt.Sprintf("sk-%d-%d", w, i))); err != nil {
					t.Error(err)
					return
				}
				if _, err := st.List(ctx, ""); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	recs := must[[]vault.Record](t)(st.List(ctx, "openai"))
	if len(recs) != workers*each {
		t.Fatalf("%d rows, want %d", len(recs), workers*each)
	}
	if g := gen(t, st); g != g0+workers*each {
		t.Fatalf("generation advanced by %d, want %d", g-g0, workers*each)
	}
}

func TestBlobMovedToAnotherRowFailsToOpen(t *testing.T) {
	st, e := newStore(t)
	ctx := context.Background()
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", oauth("a@x.io", "r1")))
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", oauth("b@x.io", "r2")))
	db := rawDB(t, e.path)
	execSQL(t, db, "UPDATE auth_credentials SET refresh = (SELECT refresh FROM auth_credentials WHERE id = 1) WHERE id = 2")
	execSQL(t, db, "UPDATE auth_credentials SET access = (SELECT refresh FROM auth_credentials WHERE id = 1) WHERE id = 1")
	bumpGeneration(t, db)

	for id, col := range map[int64]string{2: "refresh", 1: "access"} {
		_, err := st.Get(ctx, id)
		var be *sqlite.BlobError
		if !errors.As(err, &be) || !errors.Is(err, seal.ErrAuth) || be.Column != col ||
			!strings.Contains(err.Error(), fmt.Sprintf("row %d column %s", id, col)) {
			t.Fatalf("Get(%d) = %v", id, err)
		}
	}
	if _, err := st.List(ctx, "anthropic"); !errors.Is(err, seal.ErrAuth) {
		t.Fatalf("List with a broken row = %v, want an error (never skipped)", err)
	}
	if err := st.Walk(ctx, "anthropic", func(*vault.Record) {}); !errors.Is(err, seal.ErrAuth) {
		t.Fatalf("Walk with a broken row = %v, want an error (never skipped)", err)
	}
}

func TestUnparsableRowIsSkippedWithWarning(t *testing.T) {
	e := newEnv(t)
	var logs bytes.Buffer
	var mu sync.Mutex
	st := e.open(t, func(o *sqlite.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil))
	})
	ctx := context.Background()
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", oauth("a@x.io", "r1")))
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", oauth("b@x.io", "r2")))
	db := rawDB(t, e.path)
	execSQL(t, db, "UPDATE auth_credentials SET credential_type = 'bogus' WHERE id = 1")
	bumpGeneration(t, db)

	recs, err := st.List(ctx, "")
	if err != nil || !slicesEqual(ids(recs), []int64{2}) {
		t.Fatalf("List = %v, %v", ids(recs), err)
	}
	var walked []int64
	if err := st.Walk(ctx, "", func(r *vault.Record) { walked = append(walked, r.ID) }); err != nil || !slicesEqual(walked, []int64{2}) {
		t.Fatalf("Walk = %v, %v", walked, err)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "id=1") || strings.Contains(out, "r1") {
		t.Fatalf("log = %q", out)
	}
	if _, err := st.Get(ctx, 1); err == nil {
		t.Fatal("Get of an unparsable row succeeded")
	}
	// The row cannot be compared, so a compare-and-set leaves it alone.
	if ok, err := st.DisableIf(ctx, 1, oauth("a@x.io", "r1"), "x"); ok || err != nil {
		t.Fatalf("DisableIf = %v, %v", ok, err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func slicesEqual(a, b []int64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// assertNoPlaintext fails if any file of the vault contains a secret.
func assertNoPlaintext(t *testing.T, path string, secrets ...[]byte) {
	t.Helper()
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if len(s) > 0 && bytes.Contains(data, s) {
				t.Fatalf("%s contains a secret in clear (%d bytes)", filepath.Base(p), len(s))
			}
		}
	}
}

func TestNoSecretInVaultFiles(t *testing.T) {
	st, e := newStore(t)
	ctx := context.Background()
	c := oauth("a@x.io", "refresh-SECRET-1")
	c.Access = "access-SECRET-1"
	c.Extra = map[string]json.RawMessage{"idToken": json.RawMessage(`"extra-SECRET-2"`)}
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", c))
	must[[]vault.Record](t)(st.Upsert(ctx, "openai", apiKey("sk-SECRET-3")))
	if err := st.SetCache(ctx, "usage_cache:x", []byte(`{"token":"cache-SECRET-4"}`), e.clk.Now().UnixMilli()+1000); err != nil {
		t.Fatal(err)
	}
	must[vault.Record](t)(st.UpdateCredential(ctx, 1, oauth("a@x.io", "refresh-SECRET-5")))
	key := e.kr.Keys()[0].Secret
	assertNoPlaintext(t, e.path, []byte("SECRET"), key[:])
}

func TestWriteWithCancelledContextChangesNothing(t *testing.T) {
	st, _ := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := gen(t, st)
	if _, err := st.Upsert(ctx, "openai", apiKey("sk-A")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Upsert = %v", err)
	}
	if gen(t, st) != g || len(state(t, st)) != 0 {
		t.Fatal("cancelled write changed the vault")
	}
}
