package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// clock is a settable fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.UnixMilli(1_765_000_000_000)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

type env struct {
	path string
	kr   *seal.Keyring
	clk  *clock
}

func newEnv(t testing.TB) *env {
	kr, err := seal.NewKeyring(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return &env{path: filepath.Join(t.TempDir(), "vault", "agent-vault.db"), kr: kr, clk: newClock()}
}

func (e *env) open(t testing.TB, opts ...func(*sqlite.Options)) *sqlite.Store {
	t.Helper()
	o := sqlite.Options{Now: e.clk.Now}
	for _, f := range opts {
		f(&o)
	}
	st, err := sqlite.Open(context.Background(), e.path, e.kr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newStore(t testing.TB) (*sqlite.Store, *env) {
	e := newEnv(t)
	return e.open(t), e
}

// rawDB opens the vault file without the store, for inspection and tampering.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: "_pragma=busy_timeout(5000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func execSQL(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func oauth(email, refresh string) vault.Credential {
	return vault.Credential{Type: vault.TypeOAuth, Access: "access-of-" + refresh, Refresh: refresh, Expires: 1_765_003_600_000, Email: email}
}

func apiKey(k string) vault.Credential { return vault.Credential{Type: vault.TypeAPIKey, Key: k} }

func gen(t testing.TB, st *sqlite.Store) int64 {
	t.Helper()
	g, err := st.Generation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// state renders every row (active and disabled) as "id provider identity secret [cause]".
func state(t testing.TB, st *sqlite.Store) []string {
	t.Helper()
	ctx := context.Background()
	active, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	disabled, err := st.ListDisabled(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	all := append(active, disabled...)
	slices.SortFunc(all, func(a, b vault.Record) int { return int(a.ID - b.ID) })
	out := make([]string, 0, len(all))
	for _, r := range all {
		secret := r.Credential.Refresh
		if r.Credential.Type == vault.TypeAPIKey {
			secret = r.Credential.Key
		}
		ident := r.IdentityKey
		if ident == "" {
			ident = "-"
		}
		s := fmt.Sprintf("%d %s %s %s", r.ID, r.Provider, ident, secret)
		if !r.Active() {
			s += " [" + r.DisabledCause + "]"
		}
		out = append(out, s)
	}
	return out
}

func wantState(t testing.TB, st *sqlite.Store, want ...string) {
	t.Helper()
	got := state(t, st)
	if !slices.Equal(got, want) {
		t.Fatalf("vault rows:\n got %q\nwant %q", got, want)
	}
}

func ids(recs []vault.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// bumpGeneration advances the vault's generation after raw SQL changed
// credential rows: the store serves active credentials from memory and
// reloads them when the generation moves, as every writer of the vault
// (another store, the CLI) moves it.
func bumpGeneration(t testing.TB, db *sql.DB) {
	t.Helper()
	execSQL(t, db, "UPDATE meta SET value = value + 1 WHERE key = 'generation'")
}
