// Package sqlite implements vault.Store, vault.CacheStore and
// vault.HistoryStore on SQLite (modernc.org/sqlite, no cgo).
//
// The vault keeps the reference logical model but seals every
// secret (access and refresh tokens, API keys, provider extras, cache values)
// with pkg/vault/seal, binding each blob to its row and column. A canary
// sealed in the meta table lets Open fail fast with a clear message when the
// key does not match the vault.
//
// The generation (vault.Store.Generation) lives in the database: any process
// writing the same file advances it, so a broker notices CLI writes by
// polling Generation.
//
// Active set (active.go, view.go). The store keeps every active credential
// decoded in memory, indexed by id, provider, OAuth identity and API-key
// hash, valid for one generation. List and Get of an active row copy from
// it (never aliasing it); writes match against it and unseal nothing, and
// seal only the rows they write. After each commit the writer publishes its
// changes to the set together with the new generation. A generation this
// store did not produce — another process wrote the file — makes the next
// read (outside any transaction, from one WAL snapshot) or write (inside its
// transaction, under the write lock) reload the set: the only O(n) decrypt.
// So every writer of the vault must advance the generation when it changes
// credential rows; a re-seal, which changes no plaintext, need not.
//
// Group commit (batch.go). Writes queue; one leader runs a batch of them in
// one BEGIN IMMEDIATE transaction, each op under its own SAVEPOINT (a
// failing op rolls back alone), with one COMMIT — one fsync, as
// synchronous=FULL — for all, and every caller returns only after the commit
// holding its op: an acknowledged write, such as a rotated refresh token, is
// on disk. The vault records its active key id in the meta table; each write
// transaction seals under that key (reloading the keyring through
// Options.ReloadKeyring when another process switched it), which makes
// Rekey safe while a broker keeps writing (see keys.go).
//
// Storage errors (storage.go): a write the disk refuses (SQLITE_FULL,
// SQLITE_READONLY, SQLITE_IOERR, ENOSPC, EROFS) fails with
// vault.EUNAVAILABLE and a message naming it; reads keep working.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
)

// Compile-time checks.
var (
	_ vault.Store        = (*Store)(nil)
	_ vault.CacheStore   = (*Store)(nil)
	_ vault.HistoryStore = (*Store)(nil)
)

// Options configures Open. The zero value is usable.
type Options struct {
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// Logger receives warnings (unparsable rows, failed purges). It never
	// receives a secret. Default: discard.
	Logger *slog.Logger
	// OnChange is called after every committed credential mutation made
	// through this Store (each one that advanced the generation), after the
	// write lock is released. Writes by other processes do not call it; poll
	// Generation for those. Default: none.
	OnChange func()
	// ReloadKeyring re-reads the keyring (the broker: its key file) when another
	// process rekeyed the vault: a write transaction finds the vault's active
	// key id changed to a key this store does not hold, or a read meets a
	// blob sealed under such a key. The reloaded keyring must open the
	// vault's canary. nil (OMP_VAULT_KEY: nothing to re-read) makes such a
	// write fail with a *MissingKeyError instead of sealing under a key the
	// vault no longer considers active. Default: none.
	ReloadKeyring func() (*seal.Keyring, error)
	// OnDisable is called after the commit of each single-row soft delete
	// this Store made (Disable, DisableIf: the disable endpoint, definitive
	// refresh and usage failures) with the row's provider and stored cause
	// (never a secret); upsert replacement and logout do not call it, as in
	// the reference. The broker logs `auth-broker credential disabled` from it.
	// Default: none.
	OnDisable func(provider, cause string)
}

// Store is the SQLite vault. It is safe for concurrent use.
type Store struct {
	db *sql.DB
	// kr is the keyring in use: the keys of base with the vault's active key
	// (meta active_key_id) active. Reads load it without locking.
	kr atomic.Pointer[seal.Keyring]
	// kmu guards base and serialises keyring switches and reloads.
	kmu    sync.Mutex
	base   *seal.Keyring
	reload func() (*seal.Keyring, error)

	now       func() time.Time
	log       *slog.Logger
	onChange  func()
	onDisable func(provider, cause string)
	vaultID   string

	// Prepared hot-path reads (Generation is polled; Get serves refreshes).
	stmtGen, stmtGet *sql.Stmt
	// Observed-usage caps; 0 = vault.MaxObservedClients,
	// vault.MaxObservedDayRows and vault.MaxObservedRows (tests lower them).
	clientCap, dayRowCap, rowCap int64
	// usageRows is the number of stored observed-usage rows as the write
	// path last knew it; -1 (and 0 before the first count) means unknown,
	// counted again on the next insert (clientusage.go capRows).
	usageRows atomic.Int64

	// Group commit (batch.go): qmu guards queue and leading. Writes of this
	// process queue in Go instead of spinning in SQLite's busy handler;
	// other processes are serialised by BEGIN IMMEDIATE and busy_timeout.
	qmu     sync.Mutex
	queue   []*op
	leading bool

	// The in-memory active set (active.go). cmu guards active, pendGen and
	// pendDone; rmu serialises reloads. pendGen is the generation a commit
	// of this store is about to publish, pendDone closes once it did.
	cmu      sync.RWMutex
	rmu      sync.Mutex
	active   *activeSet
	pendGen  int64
	pendDone chan struct{}
}

// maxOpenConns bounds the connection pool: one writer (the group-commit
// leader) plus a few readers. Credential reads come from memory; the pool
// serves Generation polls, the cache, usage history, disabled rows and
// active-set reloads.
const maxOpenConns = 4

const (
	metaGeneration = "generation"
	metaVaultID    = "vault_id"
	metaCanary     = "canary"
	metaActiveKey  = "active_key_id"
	canaryText     = "omp vault canary v1"
	canaryAAD      = "meta/canary"
)

// Open opens (creating if needed) the vault at path, sealed under kr. The
// parent directory is created 0700 and the database file 0600. Open
// migrates the schema, verifies that kr opens the vault's canary, sets the
// generation to max(persisted+1, now in ms) and purges expired cache rows.
func Open(ctx context.Context, path string, kr *seal.Keyring, opts Options) (*Store, error) {
	if kr == nil {
		return nil, errors.New("open vault: no keyring")
	}
	s := &Store{now: opts.Now, log: opts.Logger, onChange: opts.OnChange, onDisable: opts.OnDisable, base: kr, reload: opts.ReloadKeyring}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.kr.Store(kr)

	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open vault: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open vault: %w", err)
	}
	// Create the file ourselves so it is 0600 from the first byte; SQLite
	// gives the -wal and -shm files the database file's permissions.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open vault: %w", err)
	}
	f.Close()
	if err := os.Chmod(abs, 0o600); err != nil && !errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("open vault: %w", err)
	}

	db, err := sql.Open("sqlite", dsn(abs, false))
	if err != nil {
		return nil, fmt.Errorf("open vault: %w", err)
	}
	db.SetMaxOpenConns(maxOpenConns)
	db.SetMaxIdleConns(maxOpenConns)
	s.db = db
	if err := s.init(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open vault %s: %w", abs, err)
	}
	return s, nil
}

// busyTimeoutMs is how long a statement waits for a lock another
// connection holds before it fails with SQLITE_BUSY. Write transactions
// wait longer, see beginImmediate.
const busyTimeoutMs = 5000

// dsn builds the modernc.org/sqlite data source name for path.
func dsn(abs string, readOnly bool) string {
	u := url.URL{Scheme: "file", OmitHost: true, Path: abs}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(busyTimeoutMs)+")")
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		// FULL: a rotated refresh token must survive power loss once the
		// write call returned.
		q.Add("_pragma", "synchronous(FULL)")
		q.Add("_pragma", "foreign_keys(1)")
		q.Set("_txlock", "immediate")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *Store) init(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return err
	}
	if err := migrate(ctx, s.db, migrations); err != nil {
		return err
	}
	var err error
	if s.stmtGen, err = s.db.PrepareContext(ctx, "SELECT value FROM meta WHERE key = 'generation'"); err != nil {
		return err
	}
	if s.stmtGet, err = s.db.PrepareContext(ctx, "SELECT "+credCols+" FROM auth_credentials WHERE id = ?"); err != nil {
		return err
	}
	_, err = s.write(ctx, false, true, true, func(ctx context.Context, tx *wtx) (bool, error) {
		kr := s.keyring()
		canary, err := getMeta[[]byte](ctx, tx, metaCanary)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			blob, err := kr.Seal([]byte(canaryText), []byte(canaryAAD))
			if err != nil {
				return false, err
			}
			if err := setMeta(ctx, tx, metaCanary, blob); err != nil {
				return false, err
			}
		case err != nil:
			return false, err
		default:
			if err := checkCanary(kr, canary); err != nil {
				return false, err
			}
		}

		if _, err := getMeta[int64](ctx, tx, metaActiveKey); errors.Is(err, sql.ErrNoRows) {
			// A new vault, or one made before the active key was recorded.
			if err := setMeta(ctx, tx, metaActiveKey, int64(kr.ActiveID())); err != nil {
				return false, err
			}
		} else if err != nil {
			return false, err
		}

		id, err := getMeta[string](ctx, tx, metaVaultID)
		if errors.Is(err, sql.ErrNoRows) {
			var b [16]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
			err = setMeta(ctx, tx, metaVaultID, id)
		}
		if err != nil {
			return false, err
		}
		s.vaultID = id

		// After the canary check: the backfill unseals rows.
		if err := s.backfillIdentityKeysTx(ctx, tx); err != nil {
			return false, err
		}
		gen, err := getMeta[int64](ctx, tx, metaGeneration)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return false, err
		}
		if err := setMeta(ctx, tx, metaGeneration, max(gen+1, s.nowMs())); err != nil {
			return false, err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM cache WHERE keep_until <= ?", s.nowMs()); err != nil {
			return false, fmt.Errorf("purge expired cache rows: %w", err)
		}
		return true, nil
	})
	return err
}

// VaultID returns the vault's random identifier (hex), stable for its life.
func (s *Store) VaultID() string { return s.vaultID }

// Close releases the database.
func (s *Store) Close() error {
	for _, st := range []*sql.Stmt{s.stmtGen, s.stmtGet} {
		if st != nil {
			st.Close()
		}
	}
	return s.db.Close()
}

// Generation returns the persisted change counter: one primary-key read.
func (s *Store) Generation(ctx context.Context) (int64, error) {
	var g int64
	if err := s.stmtGen.QueryRowContext(ctx).Scan(&g); err != nil {
		return 0, fmt.Errorf("read generation: %w", err)
	}
	return g, nil
}

func (s *Store) keyring() *seal.Keyring { return s.kr.Load() }

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func getMeta[T any](ctx context.Context, q querier, key string) (T, error) {
	var v T
	err := q.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", key).Scan(&v)
	return v, err
}

func setMeta(ctx context.Context, q querier, key string, value any) error {
	_, err := q.ExecContext(ctx, "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", key, value)
	if err != nil {
		return fmt.Errorf("write meta %s: %w", key, err)
	}
	return nil
}

// txFunc does the work of one write and reports whether it changed
// anything (no change → its savepoint is rolled back, no generation bump).
type txFunc = opFunc

// update runs fn as one op of a group-committed write transaction (see
// batch.go) and returns once that transaction committed. When fn reports a
// change and bump is set, the generation advances in the same transaction
// and OnChange runs after commit. Storage failures come back as
// EUNAVAILABLE (storage.go).
//
// Once queued, the op is not cancelled with ctx: a refresh write-back must
// land even if the HTTP client that triggered it went away (the provider
// has already invalidated the old refresh token).
func (s *Store) update(ctx context.Context, bump bool, fn txFunc) (changed bool, err error) {
	return s.write(ctx, bump, true, false, fn)
}

// write is update; sync=false skips the keyring check (SetKeyring, which
// sets the active key id itself); solo runs fn in a transaction of its own.
//
// The transaction begins with BEGIN IMMEDIATE, so the write lock is held
// from the first statement: the active key id read by syncKeyring cannot
// change before this transaction commits, and nothing is sealed under a key
// the vault no longer considers active.
func (s *Store) write(ctx context.Context, bump, sync, solo bool, fn txFunc) (changed bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	o := &op{fn: fn, bump: bump, sync: sync, solo: solo || !sync}
	s.do(o)
	return o.changed, o.err
}
